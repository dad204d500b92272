#include "gavel/agent/scheduler_client.h"

#include "gavel/rpc/grpc_util.h"

namespace gavel::agent {

GrpcSchedulerClient::GrpcSchedulerClient(const std::string& address, std::string token,
                                         Seconds timeout,
                                         std::shared_ptr<grpc::ChannelCredentials> credentials)
    : address_(address),
      token_(std::move(token)),
      timeout_(timeout),
      stub_(wire::WorkerToScheduler::NewStub(rpc::MakeChannel(address, std::move(credentials)))) {}

Result<wire::RegisterWorkerResponse> GrpcSchedulerClient::RegisterWorker(
    const wire::RegisterWorkerRequest& request) {
  grpc::ClientContext context;
  rpc::PrepareContext(&context, timeout_, token_);
  wire::RegisterWorkerResponse response;
  const Status status = rpc::FromGrpc(stub_->RegisterWorker(&context, request, &response),
                                      "RegisterWorker at " + address_);
  if (!status.ok()) return status;
  return response;
}

Result<wire::HeartbeatResponse> GrpcSchedulerClient::Heartbeat(
    const wire::HeartbeatRequest& request) {
  grpc::ClientContext context;
  rpc::PrepareContext(&context, timeout_, token_);
  wire::HeartbeatResponse response;
  const Status status =
      rpc::FromGrpc(stub_->Heartbeat(&context, request, &response), "Heartbeat at " + address_);
  if (!status.ok()) return status;
  return response;
}

Status GrpcSchedulerClient::ReportDone(const wire::ReportDoneRequest& request) {
  grpc::ClientContext context;
  rpc::PrepareContext(&context, timeout_, token_);
  wire::ReportDoneResponse response;
  return rpc::FromGrpc(stub_->ReportDone(&context, request, &response),
                       "ReportDone at " + address_);
}

}  // namespace gavel::agent
