// Journal: the changes the daemon's parts stage for the next commit (design: durable before
// the reply). Parts mark rows dirty and log events here; SchedulerCore::Flush turns the
// marks into full rows and commits the batch to the Store in one transaction.
// Thread-safety: none (the core thread).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "gavel/daemon/store.h"

namespace gavel::daemon {

struct Journal {
  WriteBatch batch;
  std::set<std::uint64_t> dirty_jobs;
  std::set<std::string> dirty_agents;

  void Log(std::int64_t now, std::string kind, std::uint64_t job, std::uint64_t worker,
           std::string message) {
    batch.events.push_back(EventRow{now, std::move(kind), job, worker, std::move(message)});
  }
  bool empty() const { return batch.empty() && dirty_jobs.empty() && dirty_agents.empty(); }
};

}  // namespace gavel::daemon
