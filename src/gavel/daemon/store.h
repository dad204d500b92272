// Store: the scheduler daemon's durable state (docs/runtime.md, "State directory").
//
// The daemon keeps its whole working state in memory (SchedulerCore) and mirrors every change
// into a Store in batches: a WriteBatch holds full rows (jobs with their per-GPU-type figures,
// agents, the open round) and appended events, and Commit makes the whole batch durable
// atomically before the daemon answers the requests that caused it (group commit: many
// submissions share one fsync). Load reads everything back after a restart.
//
// What is stored: submitted jobs (spec, owner, state, checkpointed steps, retries), per job and
// GPU type the time and steps run, the allocation, the prior and measured throughputs, and
// (space sharing) the measured co-located throughputs per (GPU type, partner's job type);
// registered agents and their worker ids; the open round and its tasks (so reports of the
// round a crash interrupted are still credited after a restart); counters (meta) and an
// event log.
//
// Implementations: SqliteStore (SQLite in WAL mode, synchronous=FULL) and MemoryStore (the
// fake for tests and benchmarks). A Store is used by one thread at a time (the daemon's core
// thread); implementations need not be synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::daemon {

// Per job and GPU type.
struct JobGpuRow {
  double seconds = 0.0;       // time run on this type (sum over micro-tasks)
  double steps = 0.0;         // checkpointed steps credited on this type
  double allocation = 0.0;    // the policy's current share
  double prior = 0.0;         // the table's or the user's steps/s (0 = none)
  double measured = 0.0;      // EMA of measured steps/s (0 = none yet)
  std::uint32_t measurements = 0;
  friend bool operator==(const JobGpuRow&, const JobGpuRow&) = default;
};

// Per job, GPU type and the partner's job type (space sharing): the job's measured steps/s
// while it shared a GPU of that type with a job of that type, smoothed like JobGpuRow::measured.
struct ColocatedRow {
  double measured = 0.0;  // EMA of measured steps/s (0 = none yet)
  std::uint32_t measurements = 0;
  friend bool operator==(const ColocatedRow&, const ColocatedRow&) = default;
};

struct JobRow {
  std::uint64_t id = 0;
  std::string user;
  wire::JobSpec spec;
  wire::JobState state = wire::QUEUED;
  std::uint64_t steps_done = 0;        // checkpointed (what the scheduler credits)
  std::int64_t submitted_ms = 0;       // Unix ms
  std::int64_t finished_ms = 0;        // 0 = not finished
  std::uint32_t attempts = 0;          // process launches
  std::uint32_t failures = 0;          // crashes, whole life
  std::uint32_t streak = 0;            // crashes in a row without progress in between
  std::int32_t last_exit_code = 0;
  std::string message;
  std::int64_t next_retry_ms = 0;      // backoff: not placed before this time
  std::int64_t first_launch_ms = 0;    // 0 = never launched
  // Start-up (launch to the iterator's Init: imports, checkpoint restore), restart overhead
  // kept outside the leases: the last launch's, and the sum over all launches.
  double last_startup_s = 0.0;
  double startup_total_s = 0.0;
  std::map<std::string, JobGpuRow> per_type;  // by GPU type name
  // By (GPU type name, the partner's spec.job_type); rows are only added and updated.
  std::map<std::pair<std::string, std::string>, ColocatedRow> colocated;
};

struct AgentRow {
  std::string agent_id;
  std::string address;
  std::string gpu_type;
  std::uint32_t num_gpus = 0;
  std::uint64_t first_worker_id = 0;  // worker ids first .. first + num_gpus - 1
  std::int64_t registered_ms = 0;
  // The callback token the agent chose (RegisterWorkerRequest.callback_token): presented on
  // the daemon's calls to it. It grants no call to the daemon; the agent's own token is never
  // stored.
  std::string token;
  std::string owner;                  // the identity (token-file user) that registered it
  bool alive = true;
  std::vector<double> busy_seconds;   // per GPU
  // The host's CPU cores and GB of memory it advertised (`gavel worker --cpus/--mem-gb`);
  // 0 = not advertised.
  double host_cpus = 0.0;
  double host_mem_gb = 0.0;
};

struct RoundTaskRow {
  std::uint64_t worker_id = 0;
  std::uint64_t job_id = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  bool reported = false;
};

struct RoundRow {
  std::uint64_t round_id = 0;
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;  // planned end
  std::vector<RoundTaskRow> tasks;
};

struct EventRow {
  std::int64_t ts_ms = 0;
  std::string kind;  // "submit", "start", "done", "crash", "cancel", "worker-dead", ...
  std::uint64_t job_id = 0;
  std::uint64_t worker_id = 0;
  std::string message;
};

struct StoredState {
  std::map<std::string, std::string> meta;
  std::vector<JobRow> jobs;  // by id
  std::vector<AgentRow> agents;
  std::optional<RoundRow> open_round;
};

struct WriteBatch {
  std::vector<JobRow> jobs;      // upserted (full rows)
  std::vector<AgentRow> agents;  // upserted
  // A new open round (closing the previous one), or marks on the open round's tasks.
  std::optional<RoundRow> open_round;
  bool close_round = false;      // the open round ended (applied before `open_round`)
  std::vector<std::uint64_t> reported_workers;  // tasks of the open round now reported
  std::vector<EventRow> events;
  std::map<std::string, std::string> meta;

  bool empty() const {
    return jobs.empty() && agents.empty() && !open_round && !close_round &&
           reported_workers.empty() && events.empty() && meta.empty();
  }
};

class Store {
 public:
  virtual ~Store() = default;
  // Everything stored. Errors name the table, row and field of a malformed entry.
  virtual Result<StoredState> Load() = 0;
  // Applies the batch atomically and durably (all or nothing).
  virtual Status Commit(const WriteBatch& batch) = 0;
};

// The fake: keeps the rows in memory. Crash tests copy the state out with Load() and build a
// new MemoryStore from it. Unlike the interface requires, it is synchronised, so a test may
// read it while the daemon's thread writes.
class MemoryStore final : public Store {
 public:
  MemoryStore() = default;
  explicit MemoryStore(StoredState state);
  Result<StoredState> Load() override;
  Status Commit(const WriteBatch& batch) override;
  std::size_t commits() const {
    MutexLock lock(mutex_);
    return commits_;
  }
  std::size_t events() const {
    MutexLock lock(mutex_);
    return events_.size();
  }

 private:
  mutable Mutex mutex_;
  std::map<std::string, std::string> meta_ GAVEL_GUARDED_BY(mutex_);
  std::map<std::uint64_t, JobRow> jobs_ GAVEL_GUARDED_BY(mutex_);
  std::map<std::string, AgentRow> agents_ GAVEL_GUARDED_BY(mutex_);
  std::optional<RoundRow> round_ GAVEL_GUARDED_BY(mutex_);
  std::vector<EventRow> events_ GAVEL_GUARDED_BY(mutex_);
  std::size_t commits_ GAVEL_GUARDED_BY(mutex_) = 0;
};

}  // namespace gavel::daemon
