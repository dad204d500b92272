// SchedulerCore: the scheduler daemon's coordinator — it answers requests and drives rounds
// on the wall clock, delegating to parts with one job each (design.md, "the daemon around one
// owner"):
//   JobBook        durable jobs and their states; credits micro-tasks and learns every
//                  throughput estimate (job_book.h)
//   AgentRegistry  agents, their GPUs, liveness (agent_registry.h)
//   MechanismSeam  the seam to the RoundScheduler, which owns the schedule (mechanism_seam.h)
//   Journal        changes staged for the next commit (journal.h)
//   OpenRound      the round dispatched and not yet closed: tasks, reports, what a job's
//                  ranks say together, deadlines (open_round.h)
//   AgentExecutor  carries a round plan out on the agents: the mechanism's Executor port,
//                  as SimExecutor is the simulator's (agent_executor.h)
// What stays here: the requests, the round flow (Tick), the order of the steps once a
// micro-task ends (the open round sums it up, the JobBook credits it, the failure policy
// judges it, the seam feeds the mechanism) and the failure policy itself (retries, backoff,
// failing a job). Settings: CoreOptions (core_options.h), which the parts borrow.
//
// Ownership: the core owns the parts and the AllocationService. It borrows the Store, the
// AgentTransport and the Clock (Unix time: SystemClock, a ManualClock in tests), which must
// outlive it. Every change is staged in the Journal; Flush() commits it, and the daemon
// replies to the requests behind a change only after that commit (durable before the reply).
//
// A round, on the wall clock (docs/runtime.md, "Rounds"):
//   plan (RoundScheduler::PlanRound) → AgentExecutor: one StartRound per live agent (leases
//   to the round's end) → collect ReportDone per GPU, crediting checkpointed steps and measured
//   throughputs and feeding the RoundScheduler → close when every task reported, or at
//   end + grace (stragglers are killed and their micro-tasks fail) → next round. With
//   rounds_on_time a round closes just after its end whatever is still out and stays as the
//   closing round: its reports are credited when they come (late), and at its end + grace
//   its stragglers are killed.
// Jobs whose lease ran out wait paused; a job placed on the same GPUs again continues
// without a restart (the agent sees the same job and extends its lease).
//
// Steps: a job is credited with the absolute checkpointed step count its reports carry, never
// with a sum of increments, so a repeated, late or lost report neither double-counts nor
// loses progress.
//
// Thread-safety: none. The daemon calls every method from its one core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gavel/core/clock.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/daemon/agent_executor.h"
#include "gavel/daemon/agent_registry.h"
#include "gavel/daemon/agent_transport.h"
#include "gavel/daemon/core_options.h"
#include "gavel/daemon/job_book.h"
#include "gavel/daemon/job_listing.h"
#include "gavel/daemon/journal.h"
#include "gavel/daemon/open_round.h"
#include "gavel/daemon/mechanism_seam.h"
#include "gavel/daemon/allocation_service.h"
#include "gavel/daemon/store.h"
#include "gavel/mechanism/round_scheduler.h"
#include "gavel/rpc/auth.h"
#include "gavel/wire/scheduler.pb.h"
#include "gavel/wire/worker.pb.h"

namespace gavel::daemon {


// How the core reaches the daemon around it; both may be called from any thread and must
// only post work to the core's thread. Empty functions are fine (tests drive Tick by hand).
struct CoreHooks {
  // Something finished in the background (a policy solve): call Tick soon.
  std::function<void()> wake;
  // A StartRound could not be delivered: call OnDispatchFailed(agent_id, round_id).
  std::function<void(const std::string&, std::uint64_t)> dispatch_failed;
  // Each event of the log once it is committed (on the core thread).
  std::function<void(const EventRow&)> event;
};

// Everything the core reports about itself (GetStatus and benchmarks).
struct CoreCounters {
  std::uint64_t rounds_started = 0;
  std::uint64_t rebuilds = 0;         // RoundSchedulers built (1 in a healthy run)
  std::uint64_t cluster_changes = 0;  // ChangeCluster calls (GPUs joined or left)
  std::uint64_t reports = 0;
  std::uint64_t stale_reports = 0;
  // Reports of a launch the job no longer runs as (ReportDone.attempt): never credited.
  std::uint64_t fenced_reports = 0;
  std::uint64_t stragglers_killed = 0;
  std::uint64_t tasks_carried = 0;     // tasks still out when their round closed on time
  double last_plan_seconds = 0.0;      // PlanRound + dispatch of the latest round
};

class SchedulerCore {
 public:
  // Loads the stored state and resumes: queued and running jobs stay active, the open round's
  // tasks wait for their reports (agents resend them after reconnecting) until the round's
  // end + grace, but at least one heartbeat timeout from now.
  static Result<std::unique_ptr<SchedulerCore>> Create(CoreOptions options, Store* store,
                                                       AgentTransport* transport,
                                                       const Clock* clock,
                                                       CoreHooks hooks = {});
  ~SchedulerCore();
  SchedulerCore(const SchedulerCore&) = delete;
  SchedulerCore& operator=(const SchedulerCore&) = delete;

  // ---- Requests (docs: scheduler.proto, worker.proto). Errors name the offending field. ----
  Result<std::uint64_t> Submit(const rpc::Principal& user, const wire::JobSpec& spec);
  // Errors: no such job (kNotFound); not the caller's job and the caller is not an admin
  // (kFailedPrecondition: Status has no permission code, so the gRPC service asks
  // CancelDenied first and answers PERMISSION_DENIED); the job already finished.
  Result<wire::JobInfo> Cancel(const rpc::Principal& user, std::uint64_t job_id);
  // True when `user` may not cancel `job_id` (it exists, belongs to another user, and `user`
  // is not an admin).
  bool CancelDenied(const rpc::Principal& user, std::uint64_t job_id) const;
  // A page of Listing() (job_listing.h).
  Result<wire::ListJobsResponse> ListJobs(const wire::ListJobsRequest& request) const;
  // Every job as listings show it, now. Entries of jobs that did not change are shared with
  // the previous listing; allocations and estimates, which move without a job changing, are
  // refreshed in every entry at least once a second and at each new round.
  std::shared_ptr<const JobListing> Listing() const;
  wire::ListWorkersResponse ListWorkers() const;
  // Where `gavel logs` looks for a job's output: every agent known (a job's logs stay on the
  // hosts it ran on), with whether it is alive. Errors: no such job (kNotFound).
  struct LogSource {
    AgentEndpoint endpoint;
    bool alive = false;
  };
  Result<std::vector<LogSource>> LogSources(std::uint64_t job_id) const;
  wire::GetStatusResponse GetStatus() const;

  Result<wire::RegisterWorkerResponse> RegisterWorker(const rpc::Principal& caller,
                                                      const wire::RegisterWorkerRequest& request);
  wire::HeartbeatResponse Heartbeat(const wire::HeartbeatRequest& request);
  Status ReportDone(const wire::ReportDoneRequest& request);
  // A StartRound to `agent_id` for `round_id` could not be delivered: its tasks fail now
  // (not the jobs' fault) instead of at the round's deadline.
  void OnDispatchFailed(const std::string& agent_id, std::uint64_t round_id);

  // ---- Time ----
  // Does what is due at the clock's time: declare silent agents dead, close the round when
  // every report is in (or kill the stragglers at its deadline), start the next round, ask
  // for a background solve at mid-round, adopt a finished background solve.
  void Tick();
  // When Tick next has something to do (Unix ms).
  std::int64_t NextWakeMs() const;

  // ---- Durability ----
  // Commits the staged changes. Until it returns OK, no reply may tell a client that the
  // change happened.
  Status Flush();
  bool HasPendingWrites() const { return !journal_.empty(); }

  // The agents (the daemon's services check who may speak for which agent).
  const AgentRegistry& agent_registry() const { return agents_; }
  CoreCounters counters() const;
  AllocationStats allocation_stats() const { return allocation_->stats(); }
  AllocationService& allocation_service() { return *allocation_; }
  std::optional<std::uint64_t> current_round() const;
  const CoreOptions& options() const { return options_; }
  // The RoundScheduler's time accounting of an active job (tests, diagnostics); nullopt when
  // the job is not in the current RoundScheduler. Vectors follow the GPU type names of
  // mechanism_gpu_types().
  std::optional<mechanism::JobAccounting> MechanismAccounting(std::uint64_t job_id) const;
  std::vector<std::string> mechanism_gpu_types() const;
  // Whether the RoundScheduler holds the job out of its plans (backing off after a crash).
  bool MechanismHolds(std::uint64_t job_id) const;
  // The problem the RoundScheduler would hand the policy now: jobs, throughputs and, under a
  // packing policy, the pairs' co-located throughputs (tests, diagnostics). nullopt before
  // the first round or with no active job.
  std::optional<policy::PolicyInput> MechanismPolicyInput() const;

 private:
  SchedulerCore(CoreOptions options, Store* store, AgentTransport* transport,
                const Clock* clock, CoreHooks hooks);
  Status Recover();

  // Round phases (Tick's flow).
  void CheckHeartbeats(std::int64_t now);
  bool ShouldStartRound(std::int64_t now) const;
  void StartRound(std::int64_t now);
  // The round's deadline passed: its tasks still starting end without blame, the others are
  // stragglers, killed.
  void KillStragglers(OpenRound& round, std::int64_t now);
  // The open round's end came with tasks still out: their jobs' micro-tasks are booked in
  // the mechanism now (their time; their steps when the reports come), their processes may
  // go on where they are (paused there, report_outstanding), and the round becomes the
  // closing round. A closing round still open is expired first.
  void CarryOutstanding(std::int64_t now);
  // The closing round's deadline passed: its stragglers are killed, and it is forgotten.
  void ExpireClosing(std::int64_t now);
  void CloseRound();
  // The job's micro-task of `round` is over (every task of it ended): the round sums it up,
  // the JobBook credits it, the failure policy judges it, the mechanism hears. For the
  // closing round (late) the mechanism only gets the steps (it booked the time at the
  // boundary), and where the job runs now is left to the open round.
  void FinishMicroTask(OpenRound& round, std::uint64_t job_id, std::int64_t now);
  void FinishJobTasks(std::uint64_t job_id, std::int64_t now) {
    FinishMicroTask(*round_, job_id, now);
  }
  bool IsClosing(const OpenRound& round) const { return closing_ && &round == &*closing_; }
  std::int64_t SettleMs() const {
    return static_cast<std::int64_t>(options_.arrival_settle().value() * 1000.0);
  }
  bool Settled(std::int64_t now) const {
    return idle_arrival_ms_ < 0 || now >= idle_arrival_ms_ + SettleMs();
  }
  std::int64_t BoundaryWaitMs() const {
    return static_cast<std::int64_t>(options_.boundary_wait().value() * 1000.0);
  }
  // The agent is gone (dead, or the round could not be delivered): its unreported tasks of
  // `round` end without blame (with `message`), the other ranks of their jobs are told to
  // stop (`kill_reason`) and end too, and the jobs are credited. Returns whether any task was
  // unreported.
  bool AbandonAgentTasks(OpenRound& round, const std::string& agent_id,
                         const std::string& message, const std::string& kill_reason,
                         std::int64_t now);

  // The mechanism (MechanismSeam). At mid-round (`mid_round`): solves ahead the current jobs
  // and the jobs without those that will likely finish this round, for the next round to find
  // if its job set is one of them, and leaves the allocation in use as it is. Otherwise (the
  // jobs or a throughput changed): solves the current jobs, for the next round to take.
  void PrefetchAllocation(std::int64_t now, bool mid_round);

  // Jobs.
  bool IsActive(const Job& job) const;
  double Prior(const Job& job, const std::string& gpu_type) const;
  double Estimate(const Job& job, const std::string& gpu_type) const;
  wire::JobInfo Info(const Job& job) const;
  wire::JobInfo Info(const Job& job, const std::set<std::string>& live_types) const;
  void HandleCrash(Job& job, const RoundTask& culprit, std::int64_t now);
  void EndJob(Job& job, wire::JobState state, const std::string& message, std::int64_t now);
  // Sends KillJob for the job's processes of `round` (the open round when null; any round,
  // for a job that leaves for good) to every live agent that may run it, except `spare`.
  void KillEverywhere(std::uint64_t job_id, const std::string& reason, bool any_round,
                      const std::string& spare = "", const OpenRound* round = nullptr);

  // Staging writes.
  void Touch(const Job& job);
  void Log(std::int64_t now, const std::string& kind, std::uint64_t job, std::uint64_t worker,
           const std::string& message);

  CoreOptions options_;
  Store* store_;
  // Every call to the agents waits in `gated_` until the state it depends on is committed
  // (Flush); transport_ points at it.
  CommitGatedTransport gated_;
  AgentTransport* transport_;
  const Clock* clock_;
  CoreHooks hooks_;
  Journal journal_;        // changes staged for the next Flush
  // Workers whose process has not reported ready, as their agents' heartbeats last said
  // (worker id → job id).
  std::map<std::uint64_t, std::uint64_t> starting_;
  AgentRegistry agents_;   // agents, GPUs, liveness
  JobBook jobs_;           // durable jobs and their states
  std::int64_t epoch_ms_ = 0;      // the state directory's creation time: mechanism time 0
  std::int64_t started_ms_ = 0;

  std::uint64_t next_round_id_ = 0;
  std::optional<OpenRound> round_;  // the open round (tasks, reports, deadlines)
  // The round before it when it closed on time with reports still out: it takes them (late)
  // until its deadline. Not stored: a restarted daemon ignores them (absolute counts).
  std::optional<OpenRound> closing_;

  std::shared_ptr<AllocationService> allocation_;
  // The seam to the RoundScheduler (mechanism_seam.h); made at recovery, once the epoch is known.
  std::unique_ptr<MechanismSeam> seam_;
  // Carries each round's plan out on the agents (the mechanism's Executor port); made with
  // the MechanismSeam.
  std::unique_ptr<AgentExecutor> executor_;
  bool jobs_changed_ = false;      // the active job set changed since the last prefetch
  // The first submission while no round ran work (-1: none waits). The round that starts for
  // it waits CoreOptions::arrival_settle() after it, so that jobs submitted together (a
  // script's burst, a trace's simultaneous arrivals) start in the same round, as `gavel
  // simulate` starts them; without it the first would hold the cluster's plan for a round.
  std::int64_t idle_arrival_ms_ = -1;

  CoreCounters counters_;

  // Listing's cache (it changes nothing a caller can see): each job's entry, the jobs
  // changed since it was built (committed; the uncommitted ones are in journal_), and when
  // and for which round every entry was last rebuilt.
  mutable std::map<std::uint64_t, JobListing::EntryPtr> listing_entries_;
  mutable std::set<std::uint64_t> listing_stale_;
  mutable std::int64_t listing_full_ms_ = 0;
  mutable std::optional<std::uint64_t> listing_round_;
};

}  // namespace gavel::daemon
