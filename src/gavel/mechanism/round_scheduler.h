// RoundScheduler: Gavel's round-based scheduling mechanism (spec §3), the one component the
// simulator and the cluster daemon both drive, unchanged, through the same ports (ports.h).
//
// It owns the job table (every admitted job, under the id its caller gave it), the policy,
// the current allocation X[combination][GPU type], the per-type time accounting behind the
// priorities, and the placement of combinations on GPUs. It is fed events —
//   AddJob          a job arrived, under the caller's JobId;
//   OnWorkerDone    one GPU finished its part of a micro-task (zero steps = the micro-task
//                   failed; a job that fails max_failed_attempts times in a row is dropped,
//                   when the caller asks for that rule);
//   OnMicroTaskDone a whole micro-task finished (the caller gathered its GPUs' reports);
// — and each PlanRound call, at the clock's current time, runs the round's phases:
//   recompute the allocation if due → update priorities → choose what runs → place on GPUs
//   → emit the RoundPlan (which the caller hands to an Executor).
//
// Two behaviours (SchedulerOptions::compat, compat.h; docs/differences.md):
//   compat   the original exactly: the allocation is recomputed (and the time accounting
//            reset) only when something changed AND 1,920 s passed since the last reset — or
//            the last reset happened at time 0, so every event at time 0 and the first one
//            after it recompute; jobs that arrived since the last recomputation are not in
//            the allocation and are never placed (their GPUs idle) until the next one.
//   default  the allocation is recomputed at every round boundary where something changed,
//            so a new job runs from the next round on; the time accounting is reset at most
//            every 1,920 s, measured from the first reset (none = never reset).
// Everything else — the priority score with its half-round pseudo-credit, per-type queues
// sorted by (priority, deficit, allocation) with ties in insertion order, the per-round
// shuffle of the type order (PyRandom(seed + 5)) for the policies that shuffle, the skip rules,
// placement with consolidation and keeping last round's GPUs, pairs, lease statistics — is the
// same in both.
//
// The daemon also changes things the simulator never does, without losing anyone's time
// accounting (a rebuilt scheduler would restart every job's priority memory):
//   RemoveJob         a job leaves other than by finishing (cancelled, failed by the caller);
//   UpdateThroughput  an online estimate of a job's steps/s on a type (the one way
//                     throughputs other than the table's enter: plans and policy both use it);
//   HoldJob/ReleaseJob  keep a job out of the plans until a time (a crashed job backing off);
//   ChangeCluster     GPUs joined or left (an agent registered or died).
//
// Cost: a round visits only the combinations that matter (those in the allocation, and for
// policies that run priority-0 combinations those that ever ran or were allocated, plus the
// first untouched ones in insertion order until the GPUs are full): O(A · T · log A) for A
// such combinations and T GPU types, where a packing policy has C = n + n²/2 candidates in
// all. Untouched pairs are never visited: their priority, allocation and deficit follow from
// when they were made (see Track). Building the policy's problem still lists every
// candidate pair. Per-job records of finished jobs are kept compactly for metrics.
//
// Thread-safety: none; one thread feeds events and plans rounds (the daemon serialises its
// RPC handlers onto that thread). The clock must outlive the scheduler.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gavel/core/elastic.h"
#include "gavel/core/ids.h"
#include "gavel/core/py_random.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/core/utility.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/mechanism/combination.h"
#include "gavel/mechanism/compat.h"
#include "gavel/mechanism/policy_input_builder.h"
#include "gavel/mechanism/ports.h"
#include "gavel/mechanism/round_plan.h"
#include "gavel/policy/policy.h"

namespace gavel::mechanism {

struct SchedulerOptions {
  std::string policy;  // a name from the policy registry, e.g. "max_min_fairness_perf"
  // Which of the original's quirks to reproduce (see the file comment and compat.h).
  Compat compat;
  std::uint64_t seed = 0;  // the simulation seed: policy randomness, type shuffle (seed + 5)
  Seconds round_length{360.0};
  Seconds min_reset_interval{1920.0};
  // A job whose micro-tasks fail this many times in a row is dropped (the simulator's rule,
  // the original's). nullopt = never: the caller owns the failure policy (the daemon retries
  // with backoff through HoldJob and fails jobs itself through RemoveJob).
  std::optional<int> max_failed_attempts = 5;
  // Weight per entity for the hierarchical policies (an entity not listed weighs 1). Jobs
  // name their entity in JobDescription::entity; jobs without one belong to none.
  std::map<std::string, double> entity_weights;
  // $/GPU-hour per GPU type in ClusterLayout order (sorted names); empty = no prices. Used for
  // job costs and by the cost policies (which require it).
  std::vector<double> instance_costs;
  // Solvers for the policy; null = the defaults (policy::PolicyOptions).
  std::shared_ptr<lp::Solver> lp_solver;
  std::shared_ptr<lp::Solver> milp_solver;
  policy::SolvePath solve_path = policy::SolvePath::kFast;
  // Placement respects host CPU/memory (JobDescription demands, the layout's HostResources)
  // and prefers one server, then one rack (placement.h); a job that does not fit waits. Off:
  // the original's consolidation by filling servers in order (spec §3.6).
  bool topology_aware_placement = false;
  // Where pairs' co-located throughputs come from (ports.h), shared with the caller that
  // updates it; null = the table.
  std::shared_ptr<ColocatedThroughputSource> colocated;
  // Tests only: every round visits every combination (the plain O(C) scans over all n²/2
  // candidate pairs that the incremental ones replaced). Plans and results are bit-identical
  // either way; the tests that prove it run both.
  bool exhaustive_scans = false;
};

// What the mechanism acts on: the policy's capabilities as the registry declares them
// (policy::PolicyInfo::capabilities for named policies).
using PolicyTraits = policy::PolicyCapabilities;

// A job as it arrives.
struct JobDescription {
  JobTypeKey type;  // throughput-table key (model, scale factor)
  double total_steps = 0.0;
  // Steps already done before admission (a daemon re-admitting a job after a restart);
  // in [0, total_steps).
  double steps_done = 0.0;
  double priority_weight = 1.0;
  Seconds arrival{0.0};
  std::optional<Seconds> deadline;  // absolute SLO deadline; none = no SLO
  std::string entity;                // hierarchical policies' entity; empty = none
  std::optional<Seconds> held_until;  // admitted held (HoldJob) until then
  // Host resources per GPU (worker), for topology-aware placement; 0 = none.
  double cpus_per_gpu = 0.0;
  double mem_gb_per_gpu = 0.0;
  int app = -1;  // Themis' app (policy::PolicyJob::app); -1 = an app of its own
  // An elastic job (core/elastic.h): it runs at its declared scale factor until a policy with
  // the resizes_elastic_jobs capability picks another count in the range. Elastic jobs are
  // never space-sharing pair members. nullopt = fixed size.
  std::optional<ElasticSpec> elastic;
  // Its utility of completion time, handed to the policy (admission control reads it).
  std::optional<UtilityFunction> utility;
  // GPU-seconds it already ran on each layout type before admission (a daemon re-admitting a
  // job after a restart: the attained service the queue disciplines rank by); empty = none.
  std::vector<double> gpu_seconds_done;
};

// Everything the scheduler remembers about a job, finished or not (for metrics).
struct JobRecord {
  int table_key = -1;  // index into ThroughputTable::job_types()
  int scale_factor = 1;
  double priority_weight = 1.0;
  double total_steps = 0.0;
  double steps_run = 0.0;  // including JobDescription::steps_done
  Seconds arrival{0.0};
  std::string entity;
  std::optional<Seconds> deadline;
  std::optional<Seconds> first_start;  // start of the first round it was placed in
  std::optional<Seconds> finish;       // end of the micro-task that completed it
  bool dropped = false;                // removed after too many failed micro-tasks
  bool removed = false;                // removed by RemoveJob (cancelled, failed by the caller)
  bool rejected = false;               // refused by the policy's admission control
  std::optional<UtilityFunction> utility;  // JobDescription::utility
  double cost = 0.0;                   // $ (only with instance costs)
  double cpus_per_gpu = 0.0;           // host demands (JobDescription)
  double mem_gb_per_gpu = 0.0;
  int app = -1;                        // JobDescription::app
  bool done() const { return finish.has_value() || dropped || removed || rejected; }
  std::optional<Seconds> jct() const {
    if (!finish || dropped || removed || rejected) return std::nullopt;
    return *finish - arrival;
  }
};

struct SchedulerStats {
  std::int64_t rounds = 0;
  std::int64_t allocation_recomputations = 0;  // including those with no active job
  std::int64_t policy_solves = 0;              // Policy::Allocate calls
  double policy_solve_seconds = 0.0;
  std::int64_t lease_extensions = 0;
  std::int64_t lease_extension_opportunities = 0;
  std::int64_t micro_tasks = 0;
  std::int64_t failed_micro_tasks = 0;
};

// A job's time accounting (spec §3.4), per layout type. Vectors are indexed by layout type.
struct JobAccounting {
  // Seconds received on each type since the last reset, including the half-round credit
  // every job starts with.
  std::vector<double> time_received;
  std::vector<double> deficit;     // seconds it should have received by the last reset, minus
                                   // what it did (accumulated over resets)
  std::vector<double> priority;    // as computed by the latest PlanRound (0 before the first)
  std::vector<double> throughput;  // isolated steps/s the plans use (the table's, or the
                                   // estimate given to UpdateThroughput)
};

// A whole micro-task's result, for callers that gather every GPU's report themselves (the
// daemon). Steps are the job's total over its GPUs, so integer counts add up exactly.
struct MicroTaskResult {
  Combination combination;
  std::vector<double> steps;     // per member: steps the micro-task completed (0 = failed)
  std::vector<Seconds> elapsed;  // per member: how long it ran
  Seconds finished_at{0.0};
};

// What a worker report changed.
struct ReportOutcome {
  bool micro_task_complete = false;  // every GPU of the micro-task has reported
  bool succeeded = false;
  std::vector<JobId> completed;  // jobs that finished their last step
  std::vector<JobId> dropped;    // jobs removed after max_failed_attempts failures
};

class RoundScheduler {
 public:
  // Makes the policy named in options.policy from the registry.
  static Result<std::unique_ptr<RoundScheduler>> Create(
      ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
      SchedulerOptions options, const Clock* clock);
  // With a given policy (tests, or a policy not in the registry).
  static Result<std::unique_ptr<RoundScheduler>> CreateWithPolicy(
      ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
      SchedulerOptions options, const Clock* clock, std::unique_ptr<policy::Policy> policy,
      PolicyTraits traits);

  RoundScheduler(const RoundScheduler&) = delete;
  RoundScheduler& operator=(const RoundScheduler&) = delete;
  ~RoundScheduler();

  // ---- Events ----
  // Admits a job under the caller's id (the simulator numbers them 0, 1, 2, ... in arrival
  // order; the daemon uses its durable ids). Ids order the policy's rows and break ties, so
  // give them in arrival order. A job that left (finished, dropped, removed) may come back
  // under its id: its record starts afresh. Errors: FailedPrecondition (the id is active), a job
  // type the throughput table lacks, a scale factor < 1, steps, progress or weight out of
  // range, GPU-seconds done not one non-negative number per layout type, a job no GPU type of
  // the cluster can run (too few GPUs, or throughput 0
  // everywhere).
  Status AddJob(JobId id, const JobDescription& job);
  // One GPU's report for a running micro-task. Errors: no such micro-task is running, or the
  // worker is not one of its GPUs, or the report's shape does not match the combination.
  Result<ReportOutcome> OnWorkerDone(const WorkerReport& report);
  // The whole micro-task finished: as if each of its GPUs had reported, with the members'
  // steps and elapsed times given once. Zero steps for an active member = it failed. Errors:
  // no such micro-task is running, a GPU of it already reported, or the shape is wrong.
  Result<ReportOutcome> OnMicroTaskDone(const MicroTaskResult& result);
  // The whole micro-task failed (a worker died, the job crashed), whatever its GPUs reported so
  // far: one failed attempt, no progress credited. Error: no such micro-task is running.
  Result<ReportOutcome> OnMicroTaskFailed(const Combination& combination, Seconds at);
  // The original's trace-mode rule (spec §3.3): with no arrival left and nothing running,
  // let the next round recompute the allocation regardless of the minimum reset interval.
  void OpenResetGate();
  // Forces a recomputation at the next round (e.g. after a price change).
  void RequestReallocation() { need_reallocation_ = true; }

  // ---- Changes from a live cluster (the daemon; none of them resets anyone's accounting) ----
  // The job leaves for good (cancelled, or failed by the caller's own rules): it and its
  // pairs are in no later plan, and its record says `removed`. A micro-task of it (or of a
  // pair containing it) that is still running is abandoned: nothing is credited for it and
  // its later reports are refused like those of any micro-task that is not running. Other
  // jobs' time received, deficits and priorities are untouched; the next round recomputes
  // the allocation without the job. Error: NotFound when the job is not active.
  Status RemoveJob(JobId job);
  // The caller's estimate of the job's isolated steps/s on layout type `type` (measured
  // online). The next plans use it (lease budgets, expected throughputs; 0 = never placed
  // there) and so does the policy from its next recomputation, which this does not request:
  // call RequestReallocation when the estimate moved enough to be worth a solve. A type with
  // fewer GPUs than the job needs keeps throughput 0 (unless compat.raw_policy_input). Pairs
  // keep the table's co-located throughputs. Errors: NotFound (job not active),
  // InvalidArgument (type out of range, value negative or not finite).
  Status UpdateThroughput(JobId job, int type, double steps_per_s);
  // Re-reads the co-located throughputs of the pair of jobs a and b from
  // SchedulerOptions::colocated (e.g. after the estimator learned a measurement); the next
  // plans use them, and the policy from its next recomputation. Error: NotFound (no such pair).
  Status RefreshPair(JobId a, JobId b);
  // Keeps the job out of every plan until `until` (scheduler time; the first PlanRound at or
  // after it lets it back) or until ReleaseJob, e.g. while a crashed job backs off. The job
  // stays in the policy's problem and keeps its allocation, so holding requests no solve; it
  // receives no time while held, so its priority rises and it catches up once back. Its GPUs
  // go to the next jobs in the queues. Holding a held job replaces its release time. Error:
  // NotFound when the job is not active.
  Status HoldJob(JobId job, Seconds until);
  // Ends a hold at once (no-op for a job that is not held). Error: NotFound (not active).
  Status ReleaseJob(JobId job);
  bool IsHeld(JobId job) const { return held_.contains(job); }
  // GPUs joined or left the cluster: continue on `layout`. `successor[w]` is the id in the
  // new layout of old worker w (same GPU type), or nullopt for a GPU that left. Every job
  // keeps its time received, deficit and allocation on the types that remain; a type new to
  // the cluster starts as after a reset (the half-round credit each, no deficit, allocation 0
  // until the recomputation this requests). A combination whose last round's GPUs all remain
  // can keep them (lease extension); others are placed afresh. Throughputs are refreshed for
  // the new GPU counts (a job larger than a type gets 0 there, and back its value when the
  // type grows again); estimates from UpdateThroughput are kept for the types that remain.
  // A job no type can run any more stays active and waits. Per-worker busy seconds and
  // per-job GPU-seconds of GPUs or types that left are forgotten. `instance_costs` prices
  // the new layout's types (rules as SchedulerOptions::instance_costs); empty = keep the
  // current prices of the types that remain (an error if prices are in use and a new type
  // has none). Errors (nothing changes): FailedPrecondition while micro-tasks run (change
  // the cluster between rounds); InvalidArgument for a successor list of the wrong length,
  // an id out of range, of another type or given twice, or bad prices; NotFound for a type
  // the throughput table lacks.
  Status ChangeCluster(ClusterLayout layout, std::span<const std::optional<WorkerId>> successor,
                       std::vector<double> instance_costs = {});

  // ---- The round ----
  // Plans the round that starts at clock->Now(). Every combination in the plan is running
  // from then until all its GPUs reported. Errors: the policy failed (e.g. Unimplemented).
  // Precondition: no micro-task is still running (rounds are back to back).
  Result<RoundPlan> PlanRound();

  // ---- Queries ----
  const ClusterLayout& layout() const { return layout_; }
  const ThroughputTable& throughputs() const { return *throughputs_; }
  const PolicyTraits& traits() const { return traits_; }
  std::size_t num_jobs() const { return records_.size(); }  // admitted so far
  std::size_t num_active_jobs() const { return active_.size(); }
  bool IsActive(JobId job) const { return active_.contains(job); }
  bool HasRunningMicroTasks() const { return num_running_ > 0; }
  // The record of an admitted job (aborts for an id never admitted).
  const JobRecord& record(JobId job) const { return records_.at(Index(job)); }
  // GPU-seconds the job used on a type (elapsed time × GPUs of each successful micro-task).
  double gpu_seconds(JobId job, int type) const {
    return gpu_seconds_.at(Index(job) * static_cast<std::size_t>(layout_.num_types()) +
                           static_cast<std::size_t>(type));
  }
  // Busy seconds per worker id (the original's cumulative worker time).
  const std::vector<double>& worker_busy_seconds() const { return worker_busy_; }
  const SchedulerStats& stats() const { return stats_; }
  // The current allocation of a job alone on each type (0 where it has none).
  std::vector<double> AllocationOf(JobId job) const;
  // The job's time accounting; nullopt when it is not active.
  std::optional<JobAccounting> AccountingOf(JobId job) const;
  // Seconds booked on each type since the last reset: the denominators of the priorities
  // (the sum of every combination's time received, including jobs that left since).
  const std::vector<double>& type_time() const { return worker_time_; }
  // The problem the next recomputation would hand the policy if it ran at `now`, without
  // the jobs in `without` (e.g. those about to finish): for callers that solve ahead.
  policy::PolicyInput PolicyInputAt(Seconds now, std::span<const JobId> without = {}) const;

 private:
  // An admitted job that has not finished.
  struct ActiveJob {
    JobId id;
    std::size_t record = 0;  // Index(id): its place in records_
    int table_key = -1;
    int scale_factor = 1;
    int failures = 0;  // consecutive failed micro-tasks
    int single_slot = -1;
    std::vector<int> pair_slots;  // pairs containing this job
    // UpdateThroughput's estimates by layout type; NaN = none (the table's value applies).
    std::vector<double> tput_estimate;
    Seconds last_ran_until{0.0};  // end of its last micro-task (arrival before the first)
    // Elastic jobs: the range, the count it runs at now (= scale_factor for fixed jobs) and
    // its throughput per count (row workers − min_workers) and layout type, unzeroed.
    int min_workers = 1;
    int max_workers = 1;
    int workers = 1;
    std::vector<std::vector<double>> elastic_tput;
    std::optional<UtilityFunction> utility;
    bool elastic() const { return max_workers > min_workers; }
  };

  // A single job or a pair, with its per-type state (spec §3.2). Vectors are indexed by layout
  // type. `tput_b` is empty for singles.
  struct ComboState {
    Combination id;
    // Its members' places in records_ (Index), looked up once: the round's choice checks
    // every candidate's members (job_stamp_), a hash lookup each otherwise.
    std::array<std::size_t, 2> member_index{};
    bool alive = false;
    int scale_factor = 1;
    bool in_allocation = false;  // present in the last computed allocation
    std::vector<double> tput_a;
    std::vector<double> tput_b;
    std::vector<double> allocation;
    std::vector<double> job_time;  // seconds run on each type since the last reset (+ credit)
    std::vector<double> deficit;
    std::vector<double> priority;
    // Placement: the last round it ran in (-1 = none), on which type and GPUs. While its
    // micro-task runs, `running` is set and multi-GPU reports wait in `reports`.
    std::int64_t last_round = -1;
    int last_type = 0;
    std::vector<WorkerId> last_workers;
    bool running = false;
    std::vector<WorkerReport> reports;
    std::int64_t placed_round = -1;  // scratch for PlaceOnGpus
    // Creation order (the queues' tie-break: order_ is sorted by it).
    std::uint64_t seq = 0;
    // In tracked_: its time accounting is stored. An untracked combination (a pair never
    // allocated, never run) has priority 0, allocation 0, and job_time = deficit = half a
    // round on every type if it existed at the last reset (seq < reset_seq_), else 0; its
    // stored job_time/deficit are stale until Track stores them.
    bool tracked = false;
  };
  struct Chosen {
    int slot;
    int type;
    int scale_factor;
  };
  struct Placed {
    int slot;
    int type;
    std::vector<WorkerId> workers;
  };
  Result<ReportOutcome> CompleteMicroTask(ComboState& c, std::span<const WorkerReport> reports);
  ReportOutcome BookMicroTask(ComboState& c, const MicroTaskResult& result, bool succeeded);
  // The policy input whose rows are `rows` (active jobs in active_'s order). The steps of a
  // recomputation read each row's job through one list of them, gathered by one walk of
  // active_: with a saturated queue's thousands of jobs, a walk of the map per step (or
  // earlier a lookup per row) was a tenth of the simulation (issue 12).
  policy::PolicyInput PolicyInputOf(Seconds now, std::span<const ActiveJob* const> rows) const;
  void AddEntities(policy::PolicyInput& input, std::span<const ActiveJob* const> rows) const;
  void AddHistory(policy::PolicyInput& input, Seconds now,
                  std::span<const ActiveJob* const> rows) const;
  // Applies the policy's PolicyOutput::workers and ::rejected (elastic counts, admission);
  // `rows` are the input's rows' jobs.
  Status ApplyResizingAndAdmission(const policy::PolicyInput& input,
                                   const policy::PolicyOutput& output,
                                   std::span<ActiveJob* const> rows);
  // Dense position of an admitted job in records_ (admission order).
  std::size_t Index(JobId job) const { return index_of_.at(job); }

  RoundScheduler(ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
                 std::vector<int> table_types, SchedulerOptions options, const Clock* clock,
                 std::unique_ptr<policy::Policy> policy, PolicyTraits traits);

  // Round phases.
  Result<bool> MaybeRecomputeAllocation(Seconds now);
  bool ResetDue(Seconds now) const;
  void ResetTimeAccounting(Seconds now);
  Status RecomputeAllocation(Seconds now);
  void UpdatePriorities();
  void UpdateAllocatedPriority(ComboState& c) const;
  // The time c is owed on `type` from past resets, counted against its time received.
  double Owed(const ComboState& c, std::size_t type) const;
  std::vector<int> RoundTypeOrder();
  std::vector<Chosen> ChooseCombinations(const std::vector<int>& type_order);
  // A round's choice in progress, shared by both scans: free GPUs per type, and the jobs
  // already chosen or held (job_stamp_ == stamp_). BeginChoice starts one (held jobs taken);
  // Blocked: needs more GPUs than `type` has left, or holds a taken job (both only grow during
  // the scan, so a combination blocked once stays blocked); Take books `slot` on `type`.
  struct Capacity {
    std::vector<int> left;
    int total_left = 0;
  };
  Capacity BeginChoice();
  bool Blocked(const ComboState& c, const Capacity& capacity, std::size_t type) const;
  void Take(int slot, int type, Capacity& capacity, std::vector<Chosen>& chosen);
  // The plain versions of the scans (SchedulerOptions::exhaustive_scans), the tests' oracle.
  void UpdatePrioritiesExhaustive();
  std::vector<Chosen> ChooseCombinationsExhaustive(const std::vector<int>& type_order);
  Result<std::vector<Placed>> PlaceOnGpus(const std::vector<int>& type_order,
                                          const std::vector<Chosen>& chosen);
  std::vector<Placed> PlaceByTopology(const std::vector<int>& type_order,
                                      const std::vector<Chosen>& chosen);
  RoundPlan EmitPlan(Seconds now, std::vector<Placed> placed, bool recomputed);

  // Job table upkeep.
  int NewCombo(const Combination& id, int scale_factor);
  // Makes the combination tracked, storing the time accounting an untracked one has
  // implicitly (ComboState::tracked). Before anything reads or changes that accounting.
  void Track(int slot);
  // Takes an active job out of the table (no combination of it may be running).
  void EraseJob(JobId job, bool dropped);
  // Recomputes the throughputs of the job's single (estimate or table, 0 where oversized).
  void RefreshThroughputs(const ActiveJob& job);
  void RefreshPairThroughputs(ComboState& pair);
  void CompactOrder();
  ComboState& combo(int slot);
  const ComboState& combo(int slot) const;
  ActiveJob* FindActive(JobId job);
  int SlotOf(const Combination& c) const;
  // The state of `c`'s running micro-task; FailedPrecondition when none runs (a report for a
  // micro-task that ended, was never started, or belongs to another combination).
  Result<ComboState*> RunningCombo(const Combination& c);
  double ComboThroughput(const ComboState& c, int member, int type) const;
  // Whether pairs' co-located throughputs come from the throughput table through
  // colocated_table_: packing policies without SchedulerOptions::colocated (whose estimates
  // replace the table's entries, so the dense copy would go unread).
  bool ReadsColocatedTable() const { return traits_.packing && !options_.colocated; }

  ClusterLayout layout_;
  std::shared_ptr<const ThroughputTable> throughputs_;
  std::vector<int> table_types_;  // table GPU type index per layout type
  // The active jobs' co-located throughputs by layout type, dense (read for every candidate
  // pair at every reallocation). Empty unless ReadsColocatedTable().
  ColocatedMatrix colocated_table_;
  SchedulerOptions options_;
  const Clock* clock_;
  std::unique_ptr<policy::Policy> policy_;
  PolicyTraits traits_;
  PyRandom type_shuffler_;
  int num_types_;

  // Active jobs by id (ordered: the policy's row order).
  std::map<JobId, ActiveJob> active_;
  // Every combination ever created lives in a slot; dead slots are reused.
  std::vector<ComboState> combos_;
  std::vector<int> free_slots_;
  // Live slots in insertion order (the original's dict order: the tie-break of the queues).
  std::vector<int> order_;
  std::size_t dead_in_order_ = 0;
  std::unordered_map<Combination, int> pair_slots_;
  std::uint64_t next_seq_ = 0;
  // Combinations with seq below this existed at the last reset of the time accounting.
  std::uint64_t reset_seq_ = 0;
  // Slots of the combinations in the allocation (in_allocation), of the tracked ones, and of
  // those taken out of the allocation whose priority the next UpdatePriorities zeroes. Any
  // order; dead slots are skipped and dropped when the order is compacted.
  std::vector<int> allocated_;
  std::vector<int> tracked_;
  std::vector<int> stale_priority_;

  // Jobs the policy rejected since the last plan (RoundPlan::rejected).
  std::vector<JobId> rejected_;
  // Jobs held out of the plans, with the time they come back (HoldJob).
  std::map<JobId, Seconds> held_;

  // Allocation state.
  bool need_reallocation_ = false;
  double sentinel_last_reset_ = 0.0;  // compat.reset_at_zero_means_never: 0 = "never"
  std::optional<Seconds> last_reset_;
  bool force_reset_ = false;  // OpenResetGate() without the sentinel

  // Micro-tasks of the current round, and last round's combinations (for lease statistics;
  // a pair's slot may be gone by the next round while a member is still active).
  int num_running_ = 0;
  std::vector<Combination> last_round_combos_;
  // Per-round scratch, kept to reuse its memory.
  std::vector<std::uint32_t> job_stamp_;  // by Index(job): chosen in round (stamp)
  std::uint32_t stamp_ = 0;
  std::vector<char> worker_assigned_;
  // ChooseCombinations' candidates: a live combination of its pool, and its queue keys per
  // type (candidate_keys_[candidate × types + type]).
  struct Candidate {
    std::uint64_t seq;
    int slot;
    int scale_factor;
    bool pair;
    std::array<std::size_t, 2> member_index;
  };
  struct CandidateKey {
    double priority;
    double deficit;
    double allocation;  // 0 outside the allocation
    bool runs;          // a positive throughput on the type (both members' for a pair)
  };
  std::vector<Candidate> candidates_;
  std::vector<CandidateKey> candidate_keys_;

  // Time accounting per type since the last reset.
  std::vector<double> worker_time_;  // per type
  std::vector<double> worker_busy_;  // per worker id, whole run

  // Every job ever admitted, in admission order; index_of_ finds a caller's id there.
  std::vector<JobRecord> records_;
  std::unordered_map<JobId, std::size_t> index_of_;
  std::vector<double> gpu_seconds_;  // by Index(job) × type
  SchedulerStats stats_;
};

}  // namespace gavel::mechanism
