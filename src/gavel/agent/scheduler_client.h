// GrpcSchedulerClient: the agent's SchedulerClient port (ports.h) over gRPC, calling the
// scheduler's WorkerToScheduler service (worker.proto) with a per-call deadline and, when
// the agent has one, its token as `authorization: Bearer <token>` metadata.
//
// The channel reconnects quickly after the scheduler restarts (rpc::MakeChannel), and gRPC
// errors map onto the codes the port promises (rpc::FromGrpc): UNAVAILABLE and
// DEADLINE_EXCEEDED → kIoError (retry), NOT_FOUND → kNotFound (register again),
// UNAUTHENTICATED / PERMISSION_DENIED → kPermissionDenied, FAILED_PRECONDITION →
// kFailedPrecondition.
//
// Thread-safety: thread-safe (gRPC stubs are).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>

#include "gavel/agent/ports.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::agent {

class GrpcSchedulerClient final : public SchedulerClient {
 public:
  // `address` is "host:port" of `gavel serve`.
  // `credentials`: TLS to the scheduler (rpc/tls.h); null = plaintext.
  GrpcSchedulerClient(const std::string& address, std::string token,
                      Seconds timeout = Seconds(5.0),
                      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

  Result<wire::RegisterWorkerResponse> RegisterWorker(
      const wire::RegisterWorkerRequest& request) override;
  Result<wire::HeartbeatResponse> Heartbeat(const wire::HeartbeatRequest& request) override;
  Status ReportDone(const wire::ReportDoneRequest& request) override;

 private:
  const std::string address_;
  const std::string token_;
  const Seconds timeout_;
  std::unique_ptr<wire::WorkerToScheduler::Stub> stub_;
};

}  // namespace gavel::agent
