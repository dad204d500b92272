#include "gavel/daemon/open_round.h"

#include <algorithm>
#include <limits>

#include "gavel/core/check.h"

namespace gavel::daemon {

OpenRound::OpenRound(std::uint64_t id, std::int64_t now_ms, std::int64_t round_ms,
                     std::int64_t grace_ms, Journal* journal)
    : id_(id),
      start_ms_(now_ms),
      end_ms_(now_ms + round_ms),
      mid_ms_(now_ms + round_ms / 2),
      deadline_ms_(now_ms + round_ms + grace_ms),
      mech_backed_(true),
      journal_(journal) {}

OpenRound OpenRound::Resume(const RoundRow& row, std::int64_t now_ms, std::int64_t grace_ms,
                            std::int64_t timeout_ms,
                            const std::function<bool(std::uint64_t job)>& known_job,
                            const std::function<std::string(std::uint64_t worker)>& gpu_type_of,
                            Journal* journal) {
  OpenRound round;
  round.id_ = row.round_id;
  round.start_ms_ = row.start_ms;
  round.end_ms_ = row.end_ms;
  round.mid_ms_ = row.end_ms;  // no solve ahead for a recovered round
  round.deadline_ms_ = std::max(row.end_ms + grace_ms, now_ms + timeout_ms);
  round.mech_backed_ = false;
  round.journal_ = journal;
  for (const RoundTaskRow& stored : row.tasks) {
    if (!known_job(stored.job_id)) continue;
    RoundTask task;
    task.worker_id = stored.worker_id;
    task.job_id = stored.job_id;
    task.rank = stored.rank;
    task.world_size = stored.world_size;
    task.gpu_type = gpu_type_of(stored.worker_id);
    task.reported = stored.reported;
    if (task.reported) {  // credited before the stop; nothing left to do for it
      task.outcome = wire::LEASE_EXPIRED;
      task.checkpoint_known = false;
      task.job_at_fault = false;
    }
    round.tasks_[stored.worker_id] = task;
    auto& workers = round.job_workers_[stored.job_id];
    if (workers.size() <= stored.rank) workers.resize(stored.rank + 1);
    workers[stored.rank] = stored.worker_id;
  }
  return round;
}

// ------------------------------------------------------------------------------------------
// Tasks.

void OpenRound::AddJob(std::uint64_t job, const std::vector<std::uint64_t>& workers,
                       const std::string& gpu_type) {
  GAVEL_CHECK(!workers.empty() && !job_workers_.contains(job));
  for (std::size_t rank = 0; rank < workers.size(); ++rank) {
    RoundTask task;
    task.worker_id = workers[rank];
    task.job_id = job;
    task.rank = static_cast<std::uint32_t>(rank);
    task.world_size = static_cast<std::uint32_t>(workers.size());
    task.gpu_type = gpu_type;
    tasks_[workers[rank]] = task;
  }
  job_workers_[job] = workers;
}

RoundRow OpenRound::ToRow() const {
  RoundRow row{id_, start_ms_, end_ms_, {}};
  for (const auto& [w, task] : tasks_) {
    row.tasks.push_back(RoundTaskRow{w, task.job_id, task.rank, task.world_size, false});
  }
  return row;
}

const std::vector<std::uint64_t>& OpenRound::WorkersOf(std::uint64_t job) const {
  static const std::vector<std::uint64_t> kNone;
  const auto it = job_workers_.find(job);
  return it == job_workers_.end() ? kNone : it->second;
}

std::vector<const RoundTask*> OpenRound::TasksOf(std::uint64_t job) const {
  std::vector<const RoundTask*> tasks;
  for (std::uint64_t w : WorkersOf(job)) tasks.push_back(&tasks_.at(w));
  return tasks;
}

const std::string& OpenRound::GpuTypeOf(std::uint64_t job) const {
  static const std::string kNone;
  const std::vector<std::uint64_t>& workers = WorkersOf(job);
  return workers.empty() ? kNone : tasks_.at(workers.front()).gpu_type;
}

const RoundTask* OpenRound::TaskOn(std::uint64_t worker) const {
  const auto task = tasks_.find(worker);
  return task == tasks_.end() ? nullptr : &task->second;
}

std::uint64_t OpenRound::PendingJobOn(std::uint64_t worker) const {
  const auto task = tasks_.find(worker);
  return task != tasks_.end() && !task->second.reported ? task->second.job_id : 0;
}

bool OpenRound::AllReported() const {
  return std::all_of(tasks_.begin(), tasks_.end(),
                     [](const auto& entry) { return entry.second.reported; });
}

MicroTaskSummary OpenRound::Summarize(std::uint64_t job, std::int64_t now_ms) const {
  const std::vector<const RoundTask*> tasks = TasksOf(job);
  GAVEL_CHECK(!tasks.empty());
  MicroTaskSummary m;
  m.gpu_type = tasks.front()->gpu_type;
  m.workers = WorkersOf(job);
  m.first = tasks.front();
  std::uint64_t checkpointed = std::numeric_limits<std::uint64_t>::max();
  bool known = true;
  for (const RoundTask* t : tasks) {
    if (t->checkpoint_known) {
      checkpointed = std::min(checkpointed, t->checkpointed);
    } else {
      known = false;
    }
    m.elapsed_s = std::max(m.elapsed_s, t->elapsed_s);
    m.training_s = std::max(m.training_s, t->training_s);
    m.startup_s = std::max(m.startup_s, t->startup_s);
    m.steps_trained = std::max(m.steps_trained, t->steps_trained);
    m.completed = m.completed || t->outcome == wire::COMPLETED;
    m.crashed = m.crashed || t->outcome == wire::CRASHED;
    m.launch_failed = m.launch_failed || t->outcome == wire::LAUNCH_FAILED;
    m.expired = m.expired || t->outcome == wire::LEASE_EXPIRED;
    m.killed_at_fault = m.killed_at_fault || (t->outcome == wire::KILLED && t->job_at_fault);
  }
  // (A count of 2^64 - 1 is as good as none.)
  if (known && checkpointed != std::numeric_limits<std::uint64_t>::max()) {
    m.checkpointed = checkpointed;
  }
  m.culprit = tasks.front();
  for (const RoundTask* t : tasks) {
    if (t->outcome == wire::CRASHED || t->outcome == wire::LAUNCH_FAILED ||
        (t->outcome == wire::KILLED && t->job_at_fault)) {
      m.culprit = t;
      break;
    }
  }
  if (const RoundTask* twin = TaskOn(TwinSlotOf(m.first->worker_id)); twin != nullptr) {
    m.shared = true;
    const bool partner_left_early = twin->reported && twin->outcome != wire::LEASE_EXPIRED &&
                                    twin->elapsed_s < 0.9 * m.elapsed_s;
    if (!partner_left_early) m.partner = twin->job_id;
  }
  if (m.elapsed_s <= 0.0) m.elapsed_s = static_cast<double>(now_ms - start_ms_) / 1000.0;
  return m;
}

// ------------------------------------------------------------------------------------------
// Reports and endings.

void OpenRound::MarkReported(RoundTask& task) {
  task.reported = true;
  if (journal_ != nullptr) journal_->batch.reported_workers.push_back(task.worker_id);
}

RoundTask* OpenRound::PendingTask(std::uint64_t round_id, std::uint64_t worker,
                                  std::uint64_t job) {
  if (round_id != id_) return nullptr;
  const auto it = tasks_.find(worker);
  if (it == tasks_.end() || it->second.job_id != job || it->second.reported) return nullptr;
  return &it->second;
}

OpenRound::Fate OpenRound::Record(const wire::ReportDoneRequest& report) {
  RoundTask* task = PendingTask(report.round_id(), report.worker_id(), report.job_id());
  if (task == nullptr) return Fate::kStale;
  task->outcome = report.outcome();
  task->checkpoint_known = true;
  task->checkpointed = report.checkpointed_steps();
  task->steps_trained = report.steps_trained();
  task->training_s = report.training_seconds();
  task->elapsed_s = report.elapsed_s();
  task->startup_s = report.startup_s();
  task->exit_code = report.exit_code();
  task->message = report.message().substr(0, 1024);
  // An agent kills a job when told to or when its GPU is given away: not the job's fault.
  task->job_at_fault = report.outcome() != wire::KILLED;
  MarkReported(*task);
  const std::vector<const RoundTask*> tasks = TasksOf(task->job_id);
  const bool all = std::all_of(tasks.begin(), tasks.end(),
                               [](const RoundTask* t) { return t->reported; });
  return all ? Fate::kMicroTaskEnded : Fate::kTaskEnded;
}

bool OpenRound::EndWithoutBlame(std::uint64_t job, const std::string& message) {
  bool pending = false;
  for (std::uint64_t w : WorkersOf(job)) {
    RoundTask& task = tasks_.at(w);
    if (task.reported) continue;
    task.outcome = wire::KILLED;
    task.job_at_fault = false;
    task.message = message;
    MarkReported(task);
    pending = true;
  }
  return pending;
}

std::set<std::uint64_t> OpenRound::EndTasksOn(
    const std::function<bool(std::uint64_t worker)>& on_agent, const std::string& message) {
  std::set<std::uint64_t> jobs;
  for (const auto& [worker, task] : tasks_) {
    if (!task.reported && on_agent(worker)) jobs.insert(task.job_id);
  }
  // Job by job, in rank order (the first task ended carries the message to the job's record).
  for (std::uint64_t job : jobs) {
    for (std::uint64_t w : job_workers_.at(job)) {
      RoundTask& task = tasks_.at(w);
      if (task.reported || !on_agent(w)) continue;
      task.outcome = wire::KILLED;
      task.job_at_fault = false;
      task.message = message;
      MarkReported(task);
    }
  }
  return jobs;
}

std::set<std::uint64_t> OpenRound::EndStragglers(
    const std::function<bool(std::uint64_t worker)>& job_at_fault, std::uint64_t* killed) {
  std::set<std::uint64_t> jobs;
  for (auto& [worker, task] : tasks_) {
    if (task.reported) continue;
    task.outcome = wire::KILLED;
    task.job_at_fault = job_at_fault(worker);
    task.exit_code = -9;
    task.message = "no report by the round's deadline";
    MarkReported(task);
    jobs.insert(task.job_id);
    ++*killed;
  }
  return jobs;
}

// ------------------------------------------------------------------------------------------
// Times.

bool OpenRound::TakeMidRound(std::int64_t now_ms) {
  if (solved_ahead_ || now_ms < mid_ms_) return false;
  solved_ahead_ = true;
  return true;
}

std::int64_t OpenRound::NextWakeMs() const {
  std::int64_t wake = deadline_ms_;
  if (tasks_.empty()) wake = std::min(wake, end_ms_);
  if (!solved_ahead_) wake = std::min(wake, mid_ms_);
  return wake;
}

}  // namespace gavel::daemon
