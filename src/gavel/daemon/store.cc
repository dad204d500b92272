#include "gavel/daemon/store.h"

#include <algorithm>

namespace gavel::daemon {

MemoryStore::MemoryStore(StoredState state) : meta_(std::move(state.meta)) {
  for (JobRow& row : state.jobs) jobs_[row.id] = std::move(row);
  for (AgentRow& row : state.agents) agents_[row.agent_id] = std::move(row);
  round_ = std::move(state.open_round);
}

Result<StoredState> MemoryStore::Load() {
  MutexLock lock(mutex_);
  StoredState state;
  state.meta = meta_;
  for (const auto& [id, row] : jobs_) state.jobs.push_back(row);
  for (const auto& [id, row] : agents_) state.agents.push_back(row);
  std::sort(state.agents.begin(), state.agents.end(), [](const AgentRow& a, const AgentRow& b) {
    return a.first_worker_id < b.first_worker_id;
  });
  state.open_round = round_;
  return state;
}

Status MemoryStore::Commit(const WriteBatch& batch) {
  MutexLock lock(mutex_);
  ++commits_;
  for (const JobRow& row : batch.jobs) jobs_[row.id] = row;
  for (const AgentRow& row : batch.agents) agents_[row.agent_id] = row;
  if (batch.close_round) round_.reset();
  if (batch.open_round) round_ = batch.open_round;
  if (round_) {
    for (std::uint64_t worker : batch.reported_workers) {
      for (RoundTaskRow& task : round_->tasks) {
        if (task.worker_id == worker) task.reported = true;
      }
    }
  }
  events_.insert(events_.end(), batch.events.begin(), batch.events.end());
  for (const auto& [key, value] : batch.meta) meta_[key] = value;
  return Status::Ok();
}

}  // namespace gavel::daemon
