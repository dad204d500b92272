#include "gavel/daemon/agent_transport.h"

#include <chrono>

#include "gavel/rpc/grpc_util.h"

namespace gavel::daemon {

GrpcAgentTransport::GrpcAgentTransport(int threads, Seconds timeout,
                                       std::shared_ptr<grpc::ChannelCredentials> credentials)
    : timeout_(timeout), credentials_(std::move(credentials)) {
  for (int i = 0; i < std::max(threads, 1); ++i) {
    auto lane = std::make_unique<Lane>();
    lane->thread = std::thread(&GrpcAgentTransport::Loop, lane.get());
    lanes_.push_back(std::move(lane));
  }
}

GrpcAgentTransport::~GrpcAgentTransport() {
  for (auto& lane : lanes_) {
    {
      MutexLock lock(lane->mutex);
      lane->stop = true;
    }
    lane->cv.notify_all();
  }
  for (auto& lane : lanes_) lane->thread.join();
}

void GrpcAgentTransport::Post(const std::string& agent_id, std::function<void()> work) {
  Lane& lane = *lanes_[std::hash<std::string>{}(agent_id) % lanes_.size()];
  {
    MutexLock lock(lane.mutex);
    lane.queue.push_back(std::move(work));
  }
  lane.cv.notify_one();
}

// Runs a lane's calls in order; on shutdown, the calls still queued are dropped (their
// callbacks are not run: the daemon is going away).
void GrpcAgentTransport::Loop(Lane* lane) {
  UniqueLock lock(lane->mutex);
  while (true) {
    while (!lane->stop && lane->queue.empty()) lane->cv.wait(lock.native());
    if (lane->stop) return;
    std::function<void()> work = std::move(lane->queue.front());
    lane->queue.pop_front();
    lock.Unlock();
    work();
    lock.Lock();
  }
}

std::shared_ptr<wire::WorkerAgent::Stub> GrpcAgentTransport::StubFor(const std::string& address) {
  MutexLock lock(stubs_mutex_);
  auto& stub = stubs_[address];
  if (!stub) stub = wire::WorkerAgent::NewStub(rpc::MakeChannel(address, credentials_));
  return stub;
}

Result<wire::ReadLogsResponse> AgentTransport::ReadLogs(const AgentEndpoint& agent,
                                                        const wire::ReadLogsRequest&) {
  return Status::Unimplemented("this transport cannot read the logs of agent " + agent.agent_id);
}

Result<wire::ReadLogsResponse> GrpcAgentTransport::ReadLogs(const AgentEndpoint& agent,
                                                            const wire::ReadLogsRequest& request) {
  grpc::ClientContext context;
  rpc::PrepareContext(&context, timeout_, agent.token);
  wire::ReadLogsResponse response;
  const grpc::Status status = StubFor(agent.address)->ReadLogs(&context, request, &response);
  if (!status.ok()) return rpc::FromGrpc(status, "ReadLogs from agent " + agent.agent_id);
  return response;
}

void CommitGatedTransport::StartRound(const AgentEndpoint& agent,
                                      wire::StartRoundRequest request, Done done) {
  held_.push_back([this, agent, request = std::move(request), done = std::move(done)]() mutable {
    inner_->StartRound(agent, std::move(request), std::move(done));
  });
}

void CommitGatedTransport::KillJob(const AgentEndpoint& agent, wire::KillJobRequest request,
                                   Done done) {
  held_.push_back([this, agent, request = std::move(request), done = std::move(done)]() mutable {
    inner_->KillJob(agent, std::move(request), std::move(done));
  });
}

void CommitGatedTransport::Release() {
  std::vector<std::function<void()>> calls = std::move(held_);
  held_.clear();
  for (auto& call : calls) call();
}

void GrpcAgentTransport::StartRound(const AgentEndpoint& agent, wire::StartRoundRequest request,
                                    Done done) {
  Post(agent.agent_id, [this, agent, request = std::move(request), done = std::move(done)] {
    grpc::Status status;
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
      grpc::ClientContext context;
      rpc::PrepareContext(&context, timeout_, agent.token);
      wire::StartRoundResponse response;
      status = StubFor(agent.address)->StartRound(&context, request, &response);
      const bool transient = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             status.error_code() == grpc::StatusCode::FAILED_PRECONDITION;
      if (status.ok() || !transient) break;
    }
    if (done) done(rpc::FromGrpc(status, "StartRound to agent " + agent.agent_id));
  });
}

void GrpcAgentTransport::KillJob(const AgentEndpoint& agent, wire::KillJobRequest request,
                                 Done done) {
  Post(agent.agent_id, [this, agent, request = std::move(request), done = std::move(done)] {
    grpc::ClientContext context;
    rpc::PrepareContext(&context, timeout_, agent.token);
    wire::KillJobResponse response;
    const grpc::Status status = StubFor(agent.address)->KillJob(&context, request, &response);
    if (done) done(rpc::FromGrpc(status, "KillJob to agent " + agent.agent_id));
  });
}

}  // namespace gavel::daemon
