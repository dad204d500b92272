// MechanismSeam: the seam between the daemon and the round mechanism. Everything the daemon tells
// the RoundScheduler, and everything it asks of it, passes through this header.
//
//   daemon (JobBook, AgentRegistry, open round)            mechanism (RoundScheduler)
//   ─────────────────────────────────────────────          ──────────────────────────
//   a job is submitted / re-admitted       Admit      ──►  AddJob(JobId = the daemon's id)
//   a job leaves (done, cancelled, failed) Remove     ──►  RemoveJob
//   the JobBook learned a job's rates      TakeEstimates ►  UpdateThroughput (the job's own);
//   (and its start-up)                                     UpdateRestartCost;
//                                                          RefreshPair (its pairs re-read)
//   a crashed job backs off                Hold       ──►  HoldJob(until its retry time)
//   GPUs join or die                       MarkClusterChanged ► ChangeCluster, next round
//   a job's micro-task ends                ReportMicroTask ► OnMicroTaskDone (exact steps)
//   a round starts                         PlanRound  ◄──  PlanRound: a RoundPlan, carried out
//                                                          by the AgentExecutor (the
//                                                          mechanism's Executor port, as the
//                                                          simulator's SimExecutor), which
//                                                          asks WorkersOf for the daemon's ids
//   solve ahead (mid-round, job changes)   Prefetch   ◄──  PolicyInputAt → AllocationService
//
// Throughputs flow one way, JobBook → mechanism. The JobBook owns and learns every estimate
// (job_book.h); the mechanism keeps copies. Its API takes a job's own rates by a call
// (UpdateThroughput) and reads pairs' co-located rates through a port
// (ColocatedThroughputSource), when it forms a pair or is told to re-read one: the seam
// serves that port from the JobBook and, after each thing the JobBook learned, makes the one
// call TakeEstimates, which hands over the job's own rates and, when a co-located rate
// changed, has the job's pairs re-read theirs.
// Nothing else moves an estimate, and the mechanism never writes one back.
//
// Restart costs (the bounded lag's bound, CoreOptions::lag_bound_restarts): a job's is its
// last measured start-up (launch to the iterator's Init: imports and checkpoint restore).
// The last rather than the mean: the restore grows with the checkpoint, so the latest is the
// best guess of the next, and the store keeps the last and the sum but not how many launches
// were measured. Before its first measurement, the mean of the start-ups measured for jobs of
// its job type since the daemon started (a restart of the model it will load); with none, the
// mean of every job type's (the same machines, libraries and storage: a better guess than
// free, and what `gavel simulate`'s uniform restart overhead assumes); only before any start-up
// is measured, 0: the chooser then treats its restarts as free (owed as soon as it lags), as
// Gavel's queues do. (With 0 for every new type, a burst of new job types displaced every
// measured job at the first round, where the simulation kept them.)
//
// Who owns what: the RoundScheduler owns the schedule — the allocation, the time accounting
// behind the priorities, placement, holds. The daemon owns durable state — jobs and their
// progress (JobBook), agents (AgentRegistry) — and the failure policy (retries, backoff).
// Job ids are the daemon's on both sides; GPU ids are translated here only, because the
// mechanism numbers a cluster's GPUs densely type after type.
//
// The RoundScheduler lives as long as the daemon runs: none of the calls above resets the
// jobs' accounting. It is rebuilt from the JobBook only at start-up (the accounting is not
// stored) and after an internal error (a policy failure, or an operation it refused).
// Time: the mechanism's seconds since the state directory was created (`epoch_ms`), never
// going backwards even if the wall clock does.
// Thread-safety: none (the core thread). The AllocationService is thread-safe itself.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gavel/core/clock.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/daemon/agent_registry.h"
#include "gavel/daemon/allocation_service.h"
#include "gavel/daemon/core_options.h"
#include "gavel/daemon/job_book.h"
#include "gavel/daemon/journal.h"
#include "gavel/mechanism/round_scheduler.h"

namespace gavel::daemon {

class MechanismSeam {
 public:
  MechanismSeam(const CoreOptions* options, JobBook* jobs, const AgentRegistry* agents,
           Journal* journal, std::shared_ptr<AllocationService> allocation,
           const Clock* clock, std::int64_t epoch_ms);
  ~MechanismSeam();
  MechanismSeam(const MechanismSeam&) = delete;
  MechanismSeam& operator=(const MechanismSeam&) = delete;

  // ---- Keeping the mechanism in step ----
  // Admits an active job (with its progress, entity, estimates and any backoff). A job no GPU
  // type of the cluster can run waits until the cluster changes (no error is logged).
  void Admit(const Job& job);
  void Remove(const Job& job, std::int64_t now);
  // The JobBook learned from the job's micro-task: the mechanism takes its own estimates and,
  // for kOwnAndPairs (a co-located rate changed), every pair it belongs to re-reads its rates
  // (plans at once, the policy from its next solve).
  enum class Learned { kOwn, kOwnAndPairs };
  void TakeEstimates(const Job& job, Learned learned);
  void Hold(const Job& job);  // until job.row.next_retry_ms
  void MarkClusterChanged() { cluster_changed_ = true; }
  bool up_to_date() const { return mech_ && !needs_rebuild_ && !cluster_changed_; }

  // ---- A round ----
  // Brings the mechanism up to date (rebuild, cluster change, a fresh background solve) and
  // plans the round that starts now. nullopt: nothing to plan on (no live GPU, or an
  // internal error, logged; the next round rebuilds).
  std::optional<mechanism::RoundPlan> PlanRound(std::int64_t now);
  // The daemon's worker ids of member `member` (0 or 1, Combination order) of an assignment
  // of the latest plan, by rank: a single job and a pair's first member run on the GPUs' own
  // slots, a pair's second member on their partner slots (space sharing, agent_registry.h).
  std::vector<std::uint64_t> WorkersOf(const mechanism::Assignment& assignment,
                                       int member = 0) const;
  const std::string& GpuTypeName(int type) const { return mech_->layout().type_name(type); }
  // The job's micro-task of the latest plan ended with `steps` more checkpointed steps. A pair
  // is booked in the mechanism once both members reported (it books a pair as one micro-task);
  // a member that leaves meanwhile (Remove) leaves once the pair is booked, so its partner's
  // steps are booked too.
  void ReportMicroTask(std::uint64_t job_id, std::uint64_t steps, double elapsed_s,
                       std::int64_t now) {
    Report(job_id, steps, elapsed_s, now, /*carried=*/false);
  }
  // As ReportMicroTask for a micro-task whose round closed before every report came (the
  // round boundary waits for none): its time is booked now with the steps known so far, the
  // rest follows with BookLateSteps once the late reports are in.
  void CarryMicroTask(std::uint64_t job_id, std::uint64_t steps, double elapsed_s,
                      std::int64_t now) {
    Report(job_id, steps, elapsed_s, now, /*carried=*/true);
  }
  // Steps a late report credited to a carried micro-task of the job.
  void BookLateSteps(std::uint64_t job_id, std::uint64_t steps, std::int64_t now);
  // The assignment will not run (the job cannot start now): its GPUs idle this round.
  void Skip(const mechanism::Assignment& assignment);
  // A round closed with micro-tasks still running in the mechanism: a bug; start afresh.
  void RoundClosed();

  // ---- The allocation ----
  // A background solve to be taken finished: the next round takes it.
  void TakeFreshAllocation();
  // Hands the current problem, and the problem without `leaving` if not empty, to the
  // AllocationService to solve ahead (`use`: AllocationService::PrefetchUse).
  void Prefetch(const std::vector<JobId>& leaving, AllocationService::PrefetchUse use);
  bool HasActiveJobs() const { return mech_ && mech_->num_active_jobs() > 0; }

  // ---- Queries (empty when the mechanism does not know the job) ----
  // The job's allocation per GPU type name.
  std::map<std::string, double> AllocationOf(std::uint64_t job_id) const;
  std::optional<mechanism::JobAccounting> AccountingOf(std::uint64_t job_id) const;
  std::vector<std::string> gpu_types() const;
  bool Holds(std::uint64_t job_id) const;
  // The problem the mechanism would pose the policy now (tests, diagnostics).
  std::optional<policy::PolicyInput> PolicyInputNow() const;
  std::uint64_t rebuilds() const { return rebuilds_; }
  std::uint64_t cluster_changes() const { return cluster_changes_; }

  // What a restart costs the job, in seconds (the header's "Restart costs"): its last
  // measured start-up, else its job type's mean, else every type's, else 0.
  double RestartCostOf(const Job& job) const;

 private:
  class MechanismClock;
  class PolicyAdapter;
  class ColocatedFromJobs;

  // A pair's micro-task of the latest plan, reported member by member.
  struct PairReports {
    std::array<double, 2> steps{0.0, 0.0};
    std::array<double, 2> elapsed{0.0, 0.0};
    std::array<bool, 2> reported{false, false};
    bool carried = false;  // a member's steps come later (CarryMicroTask)
  };
  void Report(std::uint64_t job_id, std::uint64_t steps, double elapsed_s, std::int64_t now,
              bool carried);
  // The job's own estimates into the mechanism (UpdateThroughput, every layout type; its
  // restart cost).
  void PushOwnEstimates(const Job& job);
  // Counts the job's latest start-up into its job type's mean and the mean of all if it is new.
  void NoteStartup(const Job& job);
  // A job type's mean moved: the jobs not yet measured take it (before the next plan).
  void RefreshUnmeasuredRestartCosts();
  void RefreshPairsOf(const Job& job);
  void BookPair(const mechanism::Combination& pair, std::int64_t now);
  // Removes the members that left while their pair ran (`leaving_`), now that it is booked.
  void RemoveLeavers(std::int64_t now);

  void Rebuild(std::int64_t now);
  void ApplyClusterChange(std::int64_t now);
  Status AddToMechanism(const Job& job);
  // Themis' app number of a user's app name (apps are per user).
  int AppId(const std::string& user, const std::string& app);
  void RecordAllocation();
  // Remembers the throughputs a problem handed to the policy uses (the re-solve threshold).
  void NoteEstimatesUsed(const policy::PolicyInput& input) const;
  // Whether live agents advertise host resources (placement then respects them).
  static bool HostLimited(const mechanism::ClusterLayout& layout);
  std::vector<double> LayoutCosts(const mechanism::ClusterLayout& layout) const;
  Seconds MechTime(std::int64_t unix_ms) const;

  const CoreOptions* options_;  // the core's settings
  JobBook* jobs_;
  const AgentRegistry* agents_;
  Journal* journal_;
  std::shared_ptr<AllocationService> allocation_;
  const Clock* clock_;
  std::int64_t epoch_ms_;
  std::unique_ptr<MechanismClock> mech_clock_;
  std::unique_ptr<mechanism::RoundScheduler> mech_;
  std::vector<std::uint64_t> worker_of_layout_;  // layout worker id -> daemon worker id
  bool host_limited_ = false;  // the mechanism places by topology (HostLimited)
  // Space sharing: where pairs' co-located throughputs come from (the JobBook: measurements,
  // else the table's slowdown); the running pairs of the latest plan, by pair and by member;
  // members removed while their pair ran.
  std::shared_ptr<ColocatedFromJobs> colocated_;
  std::map<mechanism::Combination, PairReports> pairs_;
  std::map<std::uint64_t, mechanism::Combination> pair_of_;
  std::set<std::uint64_t> leaving_;
  bool needs_rebuild_ = true;
  bool cluster_changed_ = false;
  std::map<std::pair<std::string, std::string>, int> app_ids_;  // (user, app) -> app number
  // Measured start-ups per spec.job_type, and each active job's startup_total_s when its
  // latest was counted.
  struct StartupMean {
    double sum = 0.0;
    std::uint64_t count = 0;
  };
  std::map<std::string, StartupMean> startup_by_job_type_;
  StartupMean startup_of_all_;  // every job type's: the prior of a type not measured yet
  std::unordered_map<std::uint64_t, double> startup_total_seen_;
  bool startup_means_changed_ = false;
  std::uint64_t rebuilds_ = 0;
  std::uint64_t cluster_changes_ = 0;
};

}  // namespace gavel::daemon
