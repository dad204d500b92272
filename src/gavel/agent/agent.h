// Agent: the worker agent's core (`gavel worker`), a state machine over the GPUs of one host.
//
// It speaks three ways, all through ports (ports.h), so that it can be driven whole by tests:
//   * to the scheduler (SchedulerClient): RegisterWorker, Heartbeat, ReportDone — issued only
//     from Tick(), with one backoff for the whole connection (the scheduler may restart at any
//     time; the agent keeps its jobs running and reattaches by registering again);
//   * from the scheduler (StartRound, KillJob, served over gRPC by agent_server.h);
//   * from the job processes' iterators (Init, Progress, Done; iterator.proto, served as
//     proto3 JSON over HTTP by iterator_endpoint.h).
//
// Per GPU ("slot": a local GPU index, its scheduler worker id and its CUDA device) it holds at
// most one job process (a "run") and at most one task waiting to start there. Under a
// packing scheduler (RegisterWorkerResponse.partner_worker_ids) each GPU has a second slot,
// its partner slot, on the same device: a space-sharing pair runs as two processes, one per
// slot, each with its own lease, checkpoint and report. A run moves
// through three phases:
//     running ──Done(LEASE_REACHED)──▶ paused ──next round keeps it──▶ running (lease extended)
//        │                               └──next round drops it / hold timeout──▶ stopping
//        └──displaced, KillJob, lease overrun, shutdown: SIGTERM──▶ stopping ──exit──▶ (gone)
// and every micro-task (one run on one GPU for one round) is reported to the scheduler exactly
// once, with the checkpointed step count the process last reported (worker.proto, TaskOutcome):
// LEASE_EXPIRED when the process checkpointed at its lease end (or when a still-running job's
// lease is extended into a new round, which closes the old round's micro-task), COMPLETED,
// CRASHED (with the exit code and the tail of stderr), KILLED, LAUNCH_FAILED. Reports wait in
// an outbox and are resent until the scheduler acknowledges them.
//
// Processes are started, signalled and reaped only from Tick() (the monitor thread), so that a
// job's PR_SET_PDEATHSIG is tied to a thread that lives as long as the agent. A process is
// ended with SIGTERM to its process group, then SIGKILL after kill_grace.
//
// Thread-safety: every public method may be called from any thread; one mutex guards the state.
// Tick() must be called from one thread at a time (the monitor thread); it never holds the
// mutex while calling the scheduler. Done's reply callback is never invoked with the mutex
// held, and may be invoked from the calling thread or from Tick's or StartRound's.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/agent/ports.h"
#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/wire/iterator.pb.h"
#include "gavel/wire/worker.pb.h"

namespace gavel::agent {

struct AgentOptions {
  // Stable across restarts of the agent (kept in its work directory by the CLI), so that the
  // scheduler gives the same worker ids back.
  std::string agent_id;
  std::string gpu_type;  // e.g. "v100"
  int num_gpus = 1;
  // The host's CPU cores and GB of memory the scheduler may hand out (sent at registration,
  // RegisterWorkerRequest.host_cpus/host_mem_gb); 0 = not advertised.
  double host_cpus = 0.0;
  double host_mem_gb = 0.0;
  // CUDA_VISIBLE_DEVICES value per local GPU; empty = "0", "1", ... num_gpus - 1.
  std::vector<std::string> visible_devices;

  std::string log_dir;          // job logs: <log_dir>/job-<id>.out and .err (appended)
  // Job logs last written longer ago than this are deleted (checked every minute), except
  // those of jobs this agent runs; `gavel logs` reads what is left. Unset = kept for ever.
  std::optional<Seconds> log_retention = Seconds(7 * 24 * 3600.0);
  // Job checkpoints: <checkpoint_root>/job-<id>/, unless the launch names a directory
  // (JobLaunch.checkpoint_dir, `gavel serve --checkpoint-dir`), which wins; either is created
  // if missing and passed to the job as GAVEL_CHECKPOINT_DIR.
  std::string checkpoint_root;
  std::string run_dir;          // working directory of jobs that name none (absolute)
  std::string address;          // where the WorkerAgent service listens, sent to the scheduler
  std::string iterator_url;     // GAVEL_AGENT_URL of the jobs
  // The agent's credential for its calls to the scheduler (role `agent` in the scheduler's
  // token file); empty = none. Never given to jobs: each job process gets a key of its own as
  // GAVEL_TOKEN, good only for its own iterator calls (CheckJobKey).
  std::string token;
  // Sent at registration (RegisterWorkerRequest.callback_token): the credential the scheduler
  // presents on its calls to this agent. AgentServer makes a fresh random one.
  std::string callback_token;
  // The agent's own environment, inherited by jobs (GAVEL_* and CUDA_VISIBLE_DEVICES are
  // dropped from it and set per job), and the PATH that resolves a job's argv[0].
  std::vector<std::pair<std::string, std::string>> base_env;
  std::string program_path = "/usr/local/bin:/usr/bin:/bin";

  // Overrides the scheduler's heartbeat interval when set.
  std::optional<Seconds> heartbeat_interval;
  Seconds kill_grace{10.0};           // SIGTERM → SIGKILL
  Seconds lease_overrun_grace{30.0};  // a running job is ended this long after its lease
  // A job's lease begins when its iterator reports ready (Init: after imports and checkpoint
  // restore), not at launch; a process that is not ready this long after its launch hangs in
  // start-up and is ended, reported CRASHED (the job's fault, retried as a crash).
  Seconds startup_timeout{600.0};
  // How long a Done(LEASE_REACHED) is held open waiting for the next round; unset = the
  // round duration from the registration, at least 10 s.
  std::optional<Seconds> hold_timeout;
  // How long a StartRound that arrives while our RegisterWorker call is in flight waits for
  // its reply (real time). The scheduler sends the first round as soon as it has committed the
  // registration, so that round routinely overtakes the reply; it names worker ids the agent
  // learns only from the reply.
  Seconds registration_wait{10.0};
  Seconds backoff_initial{0.2};  // scheduler unreachable: retry after this, doubling...
  Seconds backoff_max{5.0};      // ...up to this
  // Where the agent's log lines go; unset = stderr with a timestamp.
  std::function<void(const std::string&)> log;
  // Called from the agent's thread, at each refusal, when the scheduler answers the
  // registration with a refusal of the caller (unauthenticated or permission denied: a
  // missing, unknown or non-admin token), which no retry can cure. `gavel worker` exits on
  // it. Unset = retry with backoff like any other failure.
  std::function<void(const Status&)> on_refused;
};

// A read-only view of the agent's state (tests, `gavel worker` status lines).
struct AgentSnapshot {
  enum class Phase { kIdle, kStarting, kRunning, kPaused, kStopping };
  struct Gpu {
    std::optional<WorkerId> worker_id;
    // The slot's device (CUDA_VISIBLE_DEVICES of its jobs); a partner slot (space sharing,
    // listed after the GPUs' own slots) shares its GPU's device.
    std::string device;
    bool partner_slot = false;
    Phase phase = Phase::kIdle;
    std::optional<std::uint64_t> job_id;  // the run's job (or the waiting task's when starting)
    std::uint64_t round_id = 0;
    int pid = 0;
    std::uint64_t checkpointed_steps = 0;
  };
  bool registered = false;
  bool shutting_down = false;
  std::vector<Gpu> gpus;
  std::size_t reports_pending = 0;
  std::int64_t registrations = 0;  // successful RegisterWorker calls
  std::int64_t heartbeats = 0;     // successful Heartbeat calls
  std::int64_t reports_sent = 0;   // acknowledged ReportDone calls
  int start_rounds_waiting = 0;    // StartRound calls waiting for our registration's reply
};

class Agent {
 public:
  using DoneReply = std::function<void(Result<wire::DoneResponse>)>;

  // The ports are borrowed and must outlive the agent. Options are checked by the caller
  // (CheckAgentOptions).
  Agent(AgentOptions options, SchedulerClient* scheduler, ProcessLauncher* launcher,
        const Clock* clock);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  ~Agent();

  // ---- From the scheduler ----
  // Applies a round's assignment (worker.proto, StartRoundRequest). Idempotent: a round id not
  // above the last one applied changes nothing (until the agent registers again, after which
  // any round id is accepted: the scheduler may have restarted without its numbering). While a
  // RegisterWorker call is in flight it first waits (at most options.registration_wait) for
  // the reply to be applied, so a round that overtakes the reply is accepted. Errors (nothing
  // is applied): not registered (and no registration in flight), shutting down, a task naming
  // a GPU that is not this agent's, two tasks for one GPU, an empty command; messages name the
  // field (e.g. "tasks[1].worker_id").
  Status StartRound(const wire::StartRoundRequest& request);
  // Ends every process and waiting task of the job (each reported KILLED). Unknown job: OK.
  Status KillJob(const wire::KillJobRequest& request);
  // The job's output on this host (job_logs.h). Errors name the field.
  Result<wire::ReadLogsResponse> ReadLogs(const wire::ReadLogsRequest& request) const;

  // ---- From the job processes (iterator.proto) ----
  // OK when `key` is the GAVEL_TOKEN this agent gave the process running `job_id` on
  // `worker_id`; kPermissionDenied when it is not, kNotFound when no such process runs here.
  Status CheckJobKey(std::uint64_t job_id, std::uint64_t worker_id, std::string_view key) const;
  // Errors: kNotFound when this agent runs no such job on that GPU.
  Result<wire::InitResponse> Init(const wire::InitRequest& request);
  Result<wire::ProgressResponse> Progress(const wire::ProgressRequest& request);
  // Answers through `reply`, at once or — for LEASE_REACHED — once the next round decided
  // whether the job keeps its GPU (or the hold timed out, or the process went away).
  void Done(const wire::DoneRequest& request, DoneReply reply);

  // ---- The monitor loop ----
  // One step: reap exited processes, enforce deadlines (SIGKILL after the grace, lease
  // overruns, hold timeouts), start waiting tasks, then talk to the scheduler (register,
  // heartbeat, send reports) when its backoff allows.
  void Tick();
  // Sleeps until an event needs a Tick or `max_wait` passed (real time; the monitor thread).
  void WaitForWork(Seconds max_wait);

  // Ends every job (SIGTERM, SIGKILL after kill_grace; each reported KILLED) and refuses new
  // rounds. Keep calling Tick() until ShutdownComplete().
  void BeginShutdown();
  // True once no process is left and every report was sent (or the scheduler is unreachable).
  bool ShutdownComplete() const;

  AgentSnapshot Snapshot() const;

 private:
  struct Run;
  struct Slot;
  using Deferred = std::vector<std::pair<DoneReply, Result<wire::DoneResponse>>>;

  // Locked helpers (the caller holds mu_).
  Slot* FindSlotByWorker(std::uint64_t worker_id) GAVEL_REQUIRES(mu_);
  // The slot running the job's process launched as `worker_id`; kNotFound otherwise.
  Result<Slot*> FindRun(std::uint64_t job_id, std::uint64_t worker_id) GAVEL_REQUIRES(mu_);
  wire::Lease DeliverLease(Run& run, Seconds now) GAVEL_REQUIRES(mu_);
  void ApplyTask(Slot& slot, const wire::Task* task, std::uint64_t round_id, Seconds now,
                 Deferred& deferred) GAVEL_REQUIRES(mu_);
  void StopRun(Slot& slot, wire::TaskOutcome outcome, const std::string& reason, Seconds now,
               Deferred& deferred) GAVEL_REQUIRES(mu_);
  void DropPending(Slot& slot, const std::string& reason) GAVEL_REQUIRES(mu_);
  void ReapAndEnforce(Seconds now, Deferred& deferred) GAVEL_REQUIRES(mu_);
  void StartPending(Seconds now) GAVEL_REQUIRES(mu_);
  void StartTask(Slot& slot, const wire::Task& task, std::uint64_t round_id, Seconds now) GAVEL_REQUIRES(mu_);
  void Report(const Slot& slot, Run& run, wire::TaskOutcome outcome, int exit_code,
              const std::string& message, Seconds now) GAVEL_REQUIRES(mu_);
  void ReportNeverStarted(const wire::Task& task, std::uint64_t round_id, wire::TaskOutcome outcome,
                          const std::string& message) GAVEL_REQUIRES(mu_);
  wire::GpuState GpuStateOf(const Slot& slot) const GAVEL_REQUIRES(mu_);
  Seconds HoldTimeout() const GAVEL_REQUIRES(mu_);
  void Log(const std::string& line) const;

  // Unlocked: the scheduler conversation of one Tick.
  void TalkToScheduler() GAVEL_EXCLUDES(mu_);

  static void Invoke(Deferred& deferred);

  const AgentOptions options_;
  SchedulerClient* const scheduler_;
  ProcessLauncher* const launcher_;
  const Clock* const clock_;

  mutable Mutex mu_;
  std::condition_variable work_cv_;
  bool work_pending_ GAVEL_GUARDED_BY(mu_) = false;
  std::vector<Slot> slots_ GAVEL_GUARDED_BY(mu_);
  std::optional<std::uint64_t> last_round_ GAVEL_GUARDED_BY(mu_);
  bool shutting_down_ GAVEL_GUARDED_BY(mu_) = false;

  // Scheduler connection (guarded by mu_; the RPCs themselves run without it).
  bool registered_ GAVEL_GUARDED_BY(mu_) = false;
  // A RegisterWorker call is in flight; StartRound waits on registration_cv_ until its reply
  // is applied.
  bool registering_ GAVEL_GUARDED_BY(mu_) = false;
  std::condition_variable registration_cv_;
  int start_rounds_waiting_ GAVEL_GUARDED_BY(mu_) = 0;
  Seconds round_duration_ GAVEL_GUARDED_BY(mu_){360.0};
  Seconds heartbeat_interval_ GAVEL_GUARDED_BY(mu_){5.0};
  Seconds next_heartbeat_ GAVEL_GUARDED_BY(mu_){0.0};
  Seconds next_contact_ GAVEL_GUARDED_BY(mu_){0.0};  // backoff: no call before this
  Seconds backoff_ GAVEL_GUARDED_BY(mu_){0.0};
  bool scheduler_unreachable_ GAVEL_GUARDED_BY(mu_) = false;
  std::deque<wire::ReportDoneRequest> outbox_ GAVEL_GUARDED_BY(mu_);
  std::int64_t registrations_ GAVEL_GUARDED_BY(mu_) = 0;
  std::int64_t heartbeats_ GAVEL_GUARDED_BY(mu_) = 0;
  std::int64_t reports_sent_ GAVEL_GUARDED_BY(mu_) = 0;
  std::optional<Seconds> last_prune_ GAVEL_GUARDED_BY(mu_);  // of the job logs
};

// Checks options before an Agent is made; errors name the option.
Status CheckAgentOptions(const AgentOptions& options);

// The last `max_bytes` of a file, cut to whole lines where possible ("" when unreadable).
std::string ReadTail(const std::string& path, std::size_t max_bytes);

}  // namespace gavel::agent
