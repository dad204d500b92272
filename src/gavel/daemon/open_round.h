// OpenRound: a round the daemon has dispatched and whose reports it takes — one task per GPU,
// the report each task got (or what the daemon concluded without one), and the round's times:
//   start ─── mid (solve ahead) ─── end (leases run out) ─── deadline = end + grace
// The core closes a round when every task has reported, or just after its end with tasks
// still out: it then keeps it as the closing round (Detach), which takes the late reports
// until its deadline, when the stragglers are ended (EndStragglers) and the daemon kills
// them. A round with no task (nothing was runnable) closes at its end, or earlier when
// something becomes runnable (the core's rule).
//
// It owns the round's bookkeeping: which task a report is about, when a job's micro-task is
// over, and what its ranks say together (Summarize: the checkpoint, times, outcome, whether it
// shared its GPUs). What it does not decide: how that is credited to the job (the JobBook) and
// what follows (the core's failure policy), whom to kill (the core asks the agents), what runs
// (the RoundScheduler). The store keeps the round's
// row (ToRow, staged by the AgentExecutor once it has filled the round) and which tasks have
// reported (staged here, `reported_workers`), so that a restarted daemon resumes the round
// and credits no task twice.
//
// Times are Unix ms (the daemon's clock). Thread-safety: none (the core thread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gavel/daemon/agent_registry.h"
#include "gavel/daemon/journal.h"
#include "gavel/daemon/store.h"
#include "gavel/wire/worker.pb.h"

namespace gavel::daemon {

// One GPU's part of a job's micro-task in the open round.
struct RoundTask {
  std::uint64_t worker_id = 0;
  std::uint64_t job_id = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::string gpu_type;
  bool reported = false;
  // The report (or what the daemon concluded without one).
  wire::TaskOutcome outcome = wire::TASK_OUTCOME_UNSPECIFIED;
  bool checkpoint_known = false;
  std::uint64_t checkpointed = 0;
  std::uint64_t steps_trained = 0;
  double training_s = 0.0;
  double elapsed_s = 0.0;
  double startup_s = 0.0;  // launch to ready (Init): restart overhead, outside the lease
  std::int32_t exit_code = 0;
  std::string message;
  bool job_at_fault = true;  // for KILLED: count it as the job's failure
};

// A job's micro-task once every task of it has ended: what its ranks say together.
struct MicroTaskSummary {
  std::string gpu_type;
  std::vector<std::uint64_t> workers;  // by rank
  const RoundTask* first = nullptr;    // rank 0's task
  // The checkpoint every rank holds (the least of their counts); nullopt when some rank
  // ended without reporting one.
  std::optional<std::uint64_t> checkpointed;
  // The slowest rank's; when no rank reported a time, the round's time so far.
  double elapsed_s = 0.0;
  double training_s = 0.0;        // the longest training time
  double startup_s = 0.0;         // the slowest rank's start-up (0: no rank was started)
  std::uint64_t steps_trained = 0;  // the most steps trained
  bool completed = false;        // some rank exited 0
  bool crashed = false;          // some rank crashed
  bool launch_failed = false;    // some rank could not start
  bool expired = false;          // some rank's lease ran out
  bool killed_at_fault = false;  // some rank was killed through the job's own fault
  // The first rank that failed through the job's fault (crash, failed launch, killed at
  // fault); rank 0 when none did.
  const RoundTask* culprit = nullptr;
  // Space sharing: whether another job's task ran on the same GPU(s), and that job when it
  // stayed until about the end of this one (the sample is then co-located); 0 when it left
  // well before (finished, crashed), which makes the sample partly isolated.
  bool shared = false;
  std::uint64_t partner = 0;
};

class OpenRound {
 public:
  // A round planned at `now_ms`: it ends `round_ms` later, solves ahead at mid-round, and
  // waits `grace_ms` after its end for reports. Its reports feed the RoundScheduler that
  // planned it (mech_backed).
  OpenRound(std::uint64_t id, std::int64_t now_ms, std::int64_t round_ms, std::int64_t grace_ms,
            Journal* journal);
  // The round the store held open when the daemon stopped. It waits for its reports until
  // end + grace, but at least `timeout_ms` (one heartbeat timeout: the agents' time to
  // reconnect and resend) from `now_ms`; it does not solve ahead, and its reports credit
  // the jobs but not the fresh RoundScheduler (which did not plan it). Tasks of jobs that
  // `known_job` does not know are dropped; tasks already reported were credited before the
  // stop and count as ended without blame. `gpu_type_of` names a worker's GPU type ("" when
  // the worker is gone).
  static OpenRound Resume(const RoundRow& row, std::int64_t now_ms, std::int64_t grace_ms,
                          std::int64_t timeout_ms,
                          const std::function<bool(std::uint64_t job)>& known_job,
                          const std::function<std::string(std::uint64_t worker)>& gpu_type_of,
                          Journal* journal);

  std::uint64_t id() const { return id_; }
  std::int64_t start_ms() const { return start_ms_; }
  std::int64_t end_ms() const { return end_ms_; }
  std::int64_t deadline_ms() const { return deadline_ms_; }
  bool mech_backed() const { return mech_backed_; }

  // ---- Tasks ----
  // `job` runs on `workers` (rank order) of `gpu_type`: one task per worker.
  void AddJob(std::uint64_t job, const std::vector<std::uint64_t>& workers,
              const std::string& gpu_type);
  // What the store keeps of the round (no task reported yet).
  RoundRow ToRow() const;
  bool HasJob(std::uint64_t job) const { return job_workers_.contains(job); }
  // The job's workers by rank; empty when the job has no task.
  const std::vector<std::uint64_t>& WorkersOf(std::uint64_t job) const;
  // The job's tasks by rank (pointers into the round, valid until it changes).
  std::vector<const RoundTask*> TasksOf(std::uint64_t job) const;
  // The GPU type the job runs on this round ("" when it has no task).
  const std::string& GpuTypeOf(std::uint64_t job) const;
  // The task on `worker` this round, reported or not; null when none.
  const RoundTask* TaskOn(std::uint64_t worker) const;
  // The job whose task on `worker` has not reported yet; 0 when none.
  std::uint64_t PendingJobOn(std::uint64_t worker) const;
  const std::map<std::uint64_t, std::vector<std::uint64_t>>& jobs() const { return job_workers_; }
  bool idle() const { return tasks_.empty(); }
  std::size_t num_tasks() const { return tasks_.size(); }
  bool AllReported() const;
  // The job's micro-task as its ranks report it, at `now_ms` (call once every task of it has
  // ended; the job must have tasks). Pointers into the round, valid until it changes.
  MicroTaskSummary Summarize(std::uint64_t job, std::int64_t now_ms) const;

  // ---- Reports and endings. Each acts on unreported tasks only. ----
  // What an agent's report did: nothing (stale: another round, another job, or a repeat),
  // ended its task, or ended the job's micro-task (every task of the job has now ended).
  enum class Fate { kStale, kTaskEnded, kMicroTaskEnded };
  Fate Record(const wire::ReportDoneRequest& report);
  // Ends the job's unreported tasks as killed through no fault of the job, with `message`.
  // Returns whether any was unreported.
  bool EndWithoutBlame(std::uint64_t job, const std::string& message);
  // Ends the unreported tasks on the workers `on_agent` accepts (without blame, with
  // `message`); returns their jobs.
  std::set<std::uint64_t> EndTasksOn(const std::function<bool(std::uint64_t worker)>& on_agent,
                                     const std::string& message);
  // The deadline passed: every unreported task is a straggler, killed (exit code −9). The
  // job is to blame when `job_at_fault(worker)` says so. Returns the stragglers' jobs and
  // counts the tasks in *killed.
  std::set<std::uint64_t> EndStragglers(
      const std::function<bool(std::uint64_t worker)>& job_at_fault, std::uint64_t* killed);

  // The round closed with tasks still out (the round after it is open): from now on its
  // marks are not staged, since the store's open round is the next one. A restarted daemon
  // does not know this round; the late reports it then ignores are credited by the jobs'
  // next reports (absolute counts).
  void Detach() { journal_ = nullptr; }

  // ---- Times ----
  // True once, the first time it is asked at or after mid-round.
  bool TakeMidRound(std::int64_t now_ms);
  // The earliest of the round's own times still ahead that the core must wake for.
  std::int64_t NextWakeMs() const;

 private:
  OpenRound() = default;
  void MarkReported(RoundTask& task);
  // The task a report of round `round_id` for `job` on `worker` is about; null when stale.
  RoundTask* PendingTask(std::uint64_t round_id, std::uint64_t worker, std::uint64_t job);

  std::uint64_t id_ = 0;
  std::int64_t start_ms_ = 0;
  std::int64_t end_ms_ = 0;
  std::int64_t mid_ms_ = 0;
  std::int64_t deadline_ms_ = 0;
  bool mech_backed_ = false;
  bool solved_ahead_ = false;
  std::map<std::uint64_t, RoundTask> tasks_;                       // by worker id
  std::map<std::uint64_t, std::vector<std::uint64_t>> job_workers_;  // job -> workers by rank
  Journal* journal_ = nullptr;
};

}  // namespace gavel::daemon
