// FakeAgentTransport: the AgentTransport fake for tests and benchmarks. Records every request
// and completes it at once (successfully, unless the agent is marked unreachable).
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/daemon/agent_transport.h"

namespace gavel::daemon {

class FakeAgentTransport final : public AgentTransport {
 public:
  void StartRound(const AgentEndpoint& agent, wire::StartRoundRequest request,
                  Done done) override {
    bool fail = false;
    {
      MutexLock lock(mutex_);
      fail = unreachable_.contains(agent.agent_id);
      if (record_) rounds_[agent.agent_id].push_back(std::move(request));
      ++start_rounds_;
    }
    if (done) done(fail ? Status::IoError("unreachable") : Status::Ok());
  }
  void KillJob(const AgentEndpoint& agent, wire::KillJobRequest request, Done done) override {
    {
      MutexLock lock(mutex_);
      kills_.emplace_back(agent.agent_id, request.job_id());
    }
    if (done) done(Status::Ok());
  }

  // The latest StartRound sent to `agent` (empty request if none).
  wire::StartRoundRequest LastRound(const std::string& agent) const {
    MutexLock lock(mutex_);
    const auto it = rounds_.find(agent);
    return it == rounds_.end() || it->second.empty() ? wire::StartRoundRequest()
                                                     : it->second.back();
  }
  std::size_t RoundsSentTo(const std::string& agent) const {
    MutexLock lock(mutex_);
    const auto it = rounds_.find(agent);
    return it == rounds_.end() ? 0 : it->second.size();
  }
  std::vector<std::pair<std::string, std::uint64_t>> kills() const {
    MutexLock lock(mutex_);
    return kills_;
  }
  std::size_t start_rounds() const {
    MutexLock lock(mutex_);
    return start_rounds_;
  }
  void SetUnreachable(const std::string& agent, bool unreachable) {
    MutexLock lock(mutex_);
    if (unreachable) {
      unreachable_.insert(agent);
    } else {
      unreachable_.erase(agent);
    }
  }
  // Benchmarks turn recording off to measure the daemon, not the fake's bookkeeping.
  void set_record(bool record) {
    MutexLock lock(mutex_);
    record_ = record;
  }

 private:
  mutable Mutex mutex_;
  std::map<std::string, std::vector<wire::StartRoundRequest>> rounds_ GAVEL_GUARDED_BY(mutex_);
  std::vector<std::pair<std::string, std::uint64_t>> kills_ GAVEL_GUARDED_BY(mutex_);
  std::set<std::string> unreachable_ GAVEL_GUARDED_BY(mutex_);
  std::size_t start_rounds_ GAVEL_GUARDED_BY(mutex_) = 0;
  bool record_ GAVEL_GUARDED_BY(mutex_) = true;
};

}  // namespace gavel::daemon
