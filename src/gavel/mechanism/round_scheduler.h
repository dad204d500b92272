// RoundScheduler: Gavel's round-based scheduling mechanism, the one component the simulator and
// the cluster daemon both drive, unchanged, through the same ports (ports.h). It is fed
// events —
//   AddJob          a job arrived, under the caller's JobId;
//   OnWorkerDone    one GPU finished its part of a micro-task (zero steps = the micro-task
//                   failed; a job that fails max_failed_attempts times in a row is dropped,
//                   when the caller asks for that rule);
//   OnMicroTaskDone a whole micro-task finished (the caller gathered its GPUs' reports);
// — and each PlanRound call, at the clock's current time, runs the round's phases, each a
// part with one owner and its own header:
//   AllocationStep  recompute the allocation if due (the policy's problem, the solve,
//                   admission and elastic sizes), resetting the time accounting when due;
//   TimeAccounting  update the priorities (time received, deficits, resets);
//   Chooser         choose what runs (per-type queues, the scorers' filters);
//   Placer          place it on GPUs (keep last round's GPUs, consolidation or topology);
//   RoundBook       emit the RoundPlan (which the caller hands to an Executor), and gather
//                   the micro-tasks' reports afterwards;
// over the JobTable (jobs, combinations, pairs, records). The scorers that realise the
// allocation are listed in scorers.h. The coordinator holds nothing but these parts.
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
//   UpdateThroughput  an online estimate of a job's steps/s on a type (plans and policy both
//                     use it); RefreshPair re-reads a pair's rates from the co-located source;
//   HoldJob/ReleaseJob  keep a job out of the plans until a time (a crashed job backing off);
//   ChangeCluster     GPUs joined or left (an agent registered or died).
//
// Cost: a round visits only the combinations that matter (those in the allocation, and for
// policies that run priority-0 combinations those that ever ran or were allocated, plus the
// first untouched ones in insertion order until the GPUs are full): O(A · T · log A) for A
// such combinations and T GPU types, where a packing policy has C = n + n²/2 candidates in
// all. Untouched pairs are never visited (TimeAccounting::Track). Building the policy's
// problem still lists every candidate pair. Per-job records of finished jobs are kept
// compactly for metrics.
//
// Thread-safety: none; one thread feeds events and plans rounds (the daemon serialises its
// RPC handlers onto that thread). The clock must outlive the scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/allocation_step.h"
#include "gavel/mechanism/chooser.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/mechanism/combination.h"
#include "gavel/mechanism/compat.h"
#include "gavel/mechanism/job_table.h"
#include "gavel/mechanism/placer.h"
#include "gavel/mechanism/ports.h"
#include "gavel/mechanism/round_book.h"
#include "gavel/mechanism/round_plan.h"
#include "gavel/mechanism/scorers.h"
#include "gavel/mechanism/time_accounting.h"
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
  // and prefers one server, then one rack (topology_scorer.h); a job that does not fit waits.
  // Off: the original's consolidation by filling servers in order (consolidation_scorer.h).
  bool topology_aware_placement = false;
  // The other scorers of the realisation phases (scorers.h); the two fields it shares with
  // these options (topology, space sharing) are filled from them.
  RealisationOptions realisation;
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

// A job's time accounting (time_accounting.h). Vectors are indexed by layout type.
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
  // The micro-task's time is over but part of its progress is still on its way (a live
  // cluster closes a round on time while some reports are late): booked now as a success
  // with the steps known so far (0 allowed), so its time counts as received; the rest follows
  // through BookLateSteps. Errors as OnMicroTaskDone.
  Result<ReportOutcome> OnMicroTaskCarried(const MicroTaskResult& result);
  // Steps of the job's earlier micro-task that arrived after it was booked
  // (OnMicroTaskCarried): they count toward its total, and the job completes (leaves, as after
  // OnMicroTaskDone) when they reach it, or, while a later micro-task of it runs, when that
  // one is booked (RemoveJob takes it out at once). Returns whether it reached its total.
  // Error: NotFound (not active).
  Result<bool> BookLateSteps(JobId job, double steps, Seconds at);
  // The original's trace-mode rule: with no arrival left and nothing running, let the next
  // round recompute the allocation regardless of the minimum reset interval.
  void OpenResetGate() { accounting_.OpenResetGate(); }
  // Forces a recomputation at the next round (e.g. after a price change).
  void RequestReallocation() { allocation_.Request(); }

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
  Status UpdateThroughput(JobId job, int type, double steps_per_s) {
    return table_.UpdateThroughput(job, type, steps_per_s);
  }
  // The caller's measure of what a restart costs the job (JobDescription::restart_cost), e.g.
  // its measured start-up; the next plans use it (the bounded lag's bound, the restart-cost
  // scorer). Errors: NotFound (job not active), InvalidArgument (negative or not finite).
  Status UpdateRestartCost(JobId job, Seconds cost) { return table_.UpdateRestartCost(job, cost); }
  // Re-reads the co-located throughputs of the pair of jobs a and b from
  // SchedulerOptions::colocated (e.g. after the estimator learned a measurement); the next
  // plans use them, and the policy from its next recomputation. Error: NotFound (no such pair).
  Status RefreshPair(JobId a, JobId b) { return table_.RefreshPair(a, b); }
  // Keeps the job out of every plan until `until` (scheduler time; the first PlanRound at or
  // after it lets it back) or until ReleaseJob, e.g. while a crashed job backs off. The job
  // stays in the policy's problem and keeps its allocation, so holding requests no solve; it
  // receives no time while held, so its priority rises and it catches up once back. Its GPUs
  // go to the next jobs in the queues. Holding a held job replaces its release time. Error:
  // NotFound when the job is not active.
  Status HoldJob(JobId job, Seconds until) { return table_.Hold(job, until); }
  // Ends a hold at once (no-op for a job that is not held). Error: NotFound (not active).
  Status ReleaseJob(JobId job) { return table_.Release(job); }
  bool IsHeld(JobId job) const { return table_.IsHeld(job); }
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
  const ClusterLayout& layout() const { return table_.layout(); }
  std::size_t num_jobs() const { return table_.records().size(); }  // admitted so far
  std::size_t num_active_jobs() const { return table_.active().size(); }
  bool IsActive(JobId job) const { return table_.IsActive(job); }
  bool HasRunningMicroTasks() const { return book_.any_running(); }
  // The record of an admitted job (aborts for an id never admitted).
  const JobRecord& record(JobId job) const { return table_.records().at(table_.Index(job)); }
  // Frees a job's record once it has left (finished, dropped, rejected or removed) and its
  // figures were read: record() and gpu_seconds() must not be asked for it again, and its id
  // is unknown from then on. A simulator streaming its jobs' results calls it so that memory
  // does not grow with the jobs that left. Aborts for an active or unknown job.
  void ForgetJob(JobId job) { table_.Forget(job); }
  // GPU-seconds the job used on a type (elapsed time × GPUs of each successful micro-task).
  double gpu_seconds(JobId job, int type) const {
    return table_.gpu_seconds(table_.Index(job), type);
  }
  // Busy seconds per worker id (the original's cumulative worker time).
  const std::vector<double>& worker_busy_seconds() const { return accounting_.worker_busy(); }
  SchedulerStats stats() const;
  // The current allocation of a job alone on each type (0 where it has none).
  std::vector<double> AllocationOf(JobId job) const;
  // The job's time accounting; nullopt when it is not active.
  std::optional<JobAccounting> AccountingOf(JobId job) const;
  // Seconds booked on each type since the last reset: the denominators of the priorities
  // (the sum of every combination's time received, including jobs that left since).
  const std::vector<double>& type_time() const { return accounting_.type_time(); }
  // The problem the next recomputation would hand the policy if it ran at `now`, without
  // the jobs in `without` (e.g. those about to finish): for callers that solve ahead.
  policy::PolicyInput PolicyInputAt(Seconds now, std::span<const JobId> without = {}) const {
    return allocation_.InputAt(now, book_.round(), without);
  }

 private:
  RoundScheduler(ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
                 std::vector<int> table_types, SchedulerOptions options, const Clock* clock,
                 std::unique_ptr<policy::Policy> policy, PolicyTraits traits);

  // Books a finished micro-task: progress and time received on success, a failed attempt
  // otherwise; jobs that completed or ran out of attempts leave.
  ReportOutcome Book(const FinishedMicroTask& finished);
  // Takes a job out of every part (none of its combinations may be running).
  void EraseJob(JobId job, bool dropped);
  // Drops dead slots from the parts' lists once enough piled up.
  void CompactIfDue();
  ScoreContext Context() const;

  const Clock* clock_;
  Seconds round_length_;
  std::optional<int> max_failed_attempts_;
  JobTable table_;
  TimeAccounting accounting_;
  AllocationStep allocation_;
  ScorerList scorers_;
  Chooser chooser_;
  Placer placer_;
  RoundBook book_;
};

}  // namespace gavel::mechanism
