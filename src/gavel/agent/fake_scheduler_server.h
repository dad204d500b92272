// Test helper: an in-process gRPC WorkerToScheduler server on 127.0.0.1 that records what
// agents tell it. It can be stopped and started again on the same port (a scheduler restart)
// and can forget agents (a restart that lost its registrations), so tests can watch agents
// reconnect. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/rpc/auth.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::agent::testing {

class FakeSchedulerServer final : public wire::WorkerToScheduler::Service {
 public:
  // `token`: the token every call must carry ("" = none checked).
  explicit FakeSchedulerServer(std::string token = "") : token_(std::move(token)) {}
  ~FakeSchedulerServer() override { Stop(); }

  // Serves on 127.0.0.1:`port` (0 = a free port); returns the bound port (0 on failure).
  int Start(int port = 0) {
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                             &bound);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    return server_ ? bound : 0;
  }
  void Stop() {
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
      server_->Wait();
      server_.reset();
    }
  }
  // Forgets every agent: heartbeats answer known = false until the agent registers again.
  void ForgetAgents() {
    MutexLock lock(mu_);
    known_.clear();
  }

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const wire::RegisterWorkerRequest* request,
                              wire::RegisterWorkerResponse* response) override {
    if (!Authorized(*context)) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token");
    MutexLock lock(mu_);
    registrations_.push_back(*request);
    known_.push_back(request->agent_id());
    for (std::uint32_t i = 0; i < request->num_gpus(); ++i) response->add_worker_ids(10 + i);
    response->set_round_duration_s(30.0);
    response->set_heartbeat_interval_s(0.2);
    response->set_heartbeat_timeout_s(2.0);
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext* context, const wire::HeartbeatRequest* request,
                         wire::HeartbeatResponse* response) override {
    if (!Authorized(*context)) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token");
    MutexLock lock(mu_);
    heartbeats_.push_back(*request);
    response->set_known(std::find(known_.begin(), known_.end(), request->agent_id()) !=
                        known_.end());
    return grpc::Status::OK;
  }
  grpc::Status ReportDone(grpc::ServerContext* context, const wire::ReportDoneRequest* request,
                          wire::ReportDoneResponse* /*response*/) override {
    if (!Authorized(*context)) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token");
    MutexLock lock(mu_);
    reports_.push_back(*request);
    return grpc::Status::OK;
  }

  std::vector<wire::RegisterWorkerRequest> registrations() const {
    MutexLock lock(mu_);
    return registrations_;
  }
  std::size_t heartbeats() const {
    MutexLock lock(mu_);
    return heartbeats_.size();
  }
  std::vector<wire::ReportDoneRequest> reports() const {
    MutexLock lock(mu_);
    return reports_;
  }

 private:
  bool Authorized(const grpc::ServerContext& context) const {
    if (token_.empty()) return true;
    const auto& metadata = context.client_metadata();
    const auto it = metadata.find("authorization");
    return it != metadata.end() &&
           std::string(it->second.data(), it->second.size()) == rpc::BearerValue(token_);
  }

  const std::string token_;
  std::unique_ptr<grpc::Server> server_;
  mutable Mutex mu_;
  std::vector<std::string> known_ GAVEL_GUARDED_BY(mu_);
  std::vector<wire::RegisterWorkerRequest> registrations_ GAVEL_GUARDED_BY(mu_);
  std::vector<wire::HeartbeatRequest> heartbeats_ GAVEL_GUARDED_BY(mu_);
  std::vector<wire::ReportDoneRequest> reports_ GAVEL_GUARDED_BY(mu_);
};

}  // namespace gavel::agent::testing
