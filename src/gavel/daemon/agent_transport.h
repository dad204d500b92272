// AgentTransport: how the scheduler daemon reaches worker agents (worker.proto, service
// WorkerAgent). Calls are asynchronous: the daemon's core thread never waits on the network;
// each call's outcome arrives later through its callback (on a transport thread), which the
// daemon turns into an event for the core.
//
// GrpcAgentTransport sends over gRPC from a small pool of threads, one cached channel per
// agent address, every call with a deadline. Calls to one agent are sent in the order they
// were made (an agent always maps to the same thread), so a KillJob cannot overtake the
// StartRound before it or fall behind the one after it. A StartRound refused as UNAVAILABLE or
// FAILED_PRECONDITION (an agent still digesting its registration) is retried a few times
// within about a second; StartRound is idempotent. Tests and benchmarks use a fake that
// records the requests. Implementations are thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/security/credentials.h>

#include "gavel/core/status.h"
#include "gavel/core/mutex.h"
#include "gavel/core/units.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::daemon {

struct AgentEndpoint {
  std::string agent_id;
  std::string address;  // "host:port" of the agent's WorkerAgent service
  std::string token;    // sent as the call's token ("" = none)
};

class AgentTransport {
 public:
  using Done = std::function<void(Status)>;
  virtual ~AgentTransport() = default;
  virtual void StartRound(const AgentEndpoint& agent, wire::StartRoundRequest request,
                          Done done) = 0;
  virtual void KillJob(const AgentEndpoint& agent, wire::KillJobRequest request, Done done) = 0;
  // Synchronous, for `gavel logs` (called from a request's thread, never the core's): the
  // job's output on that agent. The default has no agents to ask.
  virtual Result<wire::ReadLogsResponse> ReadLogs(const AgentEndpoint& agent,
                                                  const wire::ReadLogsRequest& request);
};

// Holds every call until Release(), then passes them on in the order they were made. The
// core sends through it and releases after each commit, so no agent ever acts on a round (a
// launch, its attempt number, its round id) that a daemon killed before the commit would
// not remember: a restarted daemon never repeats a round id or a GAVEL_ATTEMPT an agent saw.
// Thread-safety: none (the core thread makes and releases the calls).
class CommitGatedTransport final : public AgentTransport {
 public:
  explicit CommitGatedTransport(AgentTransport* inner) : inner_(inner) {}
  void StartRound(const AgentEndpoint& agent, wire::StartRoundRequest request,
                  Done done) override;
  void KillJob(const AgentEndpoint& agent, wire::KillJobRequest request, Done done) override;
  // Sends what was held.
  void Release();
  // Drops what was held (the commit failed: the agents must not act on it).
  void Discard() { held_.clear(); }

 private:
  AgentTransport* inner_;
  std::vector<std::function<void()>> held_;
};

class GrpcAgentTransport final : public AgentTransport {
 public:
  // `credentials`: TLS to the agents (rpc/tls.h); null = plaintext.
  explicit GrpcAgentTransport(int threads = 8, Seconds timeout = Seconds(10.0),
                              std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);
  ~GrpcAgentTransport() override;
  GrpcAgentTransport(const GrpcAgentTransport&) = delete;
  GrpcAgentTransport& operator=(const GrpcAgentTransport&) = delete;

  void StartRound(const AgentEndpoint& agent, wire::StartRoundRequest request,
                  Done done) override;
  void KillJob(const AgentEndpoint& agent, wire::KillJobRequest request, Done done) override;
  Result<wire::ReadLogsResponse> ReadLogs(const AgentEndpoint& agent,
                                          const wire::ReadLogsRequest& request) override;

 private:
  struct Lane {
    Mutex mutex;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue GAVEL_GUARDED_BY(mutex);
    bool stop GAVEL_GUARDED_BY(mutex) = false;
    std::thread thread;
  };
  void Post(const std::string& agent_id, std::function<void()> work);
  std::shared_ptr<wire::WorkerAgent::Stub> StubFor(const std::string& address);
  static void Loop(Lane* lane);

  const Seconds timeout_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  Mutex stubs_mutex_;
  std::map<std::string, std::shared_ptr<wire::WorkerAgent::Stub>> stubs_
      GAVEL_GUARDED_BY(stubs_mutex_);
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace gavel::daemon
