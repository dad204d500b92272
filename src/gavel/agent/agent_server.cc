#include "gavel/agent/agent_server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "gavel/agent/iterator_endpoint.h"
#include "gavel/agent/process.h"
#include "gavel/agent/scheduler_client.h"
#include "gavel/rpc/auth.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/rpc/listener.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::agent {

// The WorkerAgent gRPC service: checks the token, then hands the call to the agent.
class AgentServer::Service final : public wire::WorkerAgent::Service {
 public:
  Service(std::atomic<Agent*>* agent, std::string token)
      : agent_(agent), token_(std::move(token)) {}

  grpc::Status StartRound(grpc::ServerContext* context, const wire::StartRoundRequest* request,
                          wire::StartRoundResponse* /*response*/) override {
    Agent* agent = nullptr;
    if (grpc::Status refused = Admit(*context, &agent); !refused.ok()) return refused;
    return rpc::ToGrpc(agent->StartRound(*request));
  }

  grpc::Status KillJob(grpc::ServerContext* context, const wire::KillJobRequest* request,
                       wire::KillJobResponse* /*response*/) override {
    Agent* agent = nullptr;
    if (grpc::Status refused = Admit(*context, &agent); !refused.ok()) return refused;
    return rpc::ToGrpc(agent->KillJob(*request));
  }

  grpc::Status ReadLogs(grpc::ServerContext* context, const wire::ReadLogsRequest* request,
                        wire::ReadLogsResponse* response) override {
    Agent* agent = nullptr;
    if (grpc::Status refused = Admit(*context, &agent); !refused.ok()) return refused;
    Result<wire::ReadLogsResponse> logs = agent->ReadLogs(*request);
    if (!logs.ok()) return rpc::ToGrpc(logs.status());
    *response = *std::move(logs);
    return grpc::Status::OK;
  }

 private:
  grpc::Status Admit(const grpc::ServerContext& context, Agent** agent) const {
    if (!token_.empty()) {
      const auto& metadata = context.client_metadata();
      const auto it = metadata.find(
          grpc::string_ref(rpc::kAuthorizationKey.data(), rpc::kAuthorizationKey.size()));
      if (it == metadata.end() ||
          !rpc::SecretsEqual(std::string_view(it->second.data(), it->second.size()),
                             rpc::BearerValue(token_))) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "missing or wrong token for this agent");
      }
    }
    *agent = agent_->load();
    if (*agent == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is starting");
    return grpc::Status::OK;
  }

  std::atomic<Agent*>* agent_;
  const std::string token_;
};

Result<std::unique_ptr<AgentServer>> AgentServer::Start(AgentServerOptions options) {
  auto clock = std::make_unique<SteadyClock>();
  std::shared_ptr<ProcessLauncher> launcher =
      options.launcher ? options.launcher : std::make_shared<PosixProcessLauncher>();
  GAVEL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                         rpc::MakeChannelCredentials(options.scheduler_tls_ca));
  auto scheduler = std::make_unique<GrpcSchedulerClient>(
      options.scheduler_address, options.agent.token, options.rpc_timeout, std::move(credentials));
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<AgentServer> server,
                         Start(std::move(options), scheduler.get(), launcher.get(), clock.get()));
  // The server owns the ports; the agent it made borrows them, and the server destroys the
  // agent first (member order: see ~AgentServer).
  server->owned_clock_ = std::move(clock);
  server->owned_launcher_ = std::move(launcher);
  server->owned_scheduler_ = std::move(scheduler);
  return server;
}

Result<std::unique_ptr<AgentServer>> AgentServer::Start(AgentServerOptions options,
                                                        SchedulerClient* scheduler,
                                                        ProcessLauncher* launcher,
                                                        const Clock* clock) {
  std::unique_ptr<AgentServer> server(new AgentServer());
  server->tick_interval_ = options.tick_interval;
  server->kill_grace_ = options.agent.kill_grace;
  server->agent_id_ = options.agent.agent_id;

  // ---- The WorkerAgent service ----
  Result<rpc::HostPort> parsed_listen = rpc::ParseAddress(options.listen);
  if (!parsed_listen.ok()) return parsed_listen.status().WithContext("--listen");
  const rpc::HostPort listen = *parsed_listen;
  // The scheduler calls us with a secret of our own making, never with a token of its file.
  if (options.agent.callback_token.empty()) options.agent.callback_token = rpc::NewSecret();
  server->service_ =
      std::make_unique<Service>(&server->ready_agent_, options.agent.callback_token);
  // Plaintext behind the GuardedListener, or TLS on gRPC's own port (rpc/tls.h).
  grpc::ServerBuilder builder;
  builder.RegisterService(server->service_.get());
  rpc::ApplyServerLimits(&builder, options.limits);
  Result<rpc::ServingGrpc> serving = rpc::ServeGrpc(builder, listen, options.tls, options.limits);
  if (!serving.ok()) return serving.status();
  server->grpc_server_ = std::move(serving->server);
  server->listener_ = std::move(serving->listener);
  server->address_ = rpc::HostPort{listen.host, serving->port}.ToString();

  // ---- The iterator endpoint ----
  AgentServer* self = server.get();
  GAVEL_ASSIGN_OR_RETURN(
      server->http_server_,
      HttpServer::Start(
          options.iterator_http, [self](const HttpRequest& request) -> HttpResponse {
            Agent* agent = self->ready_agent_.load();
            if (agent == nullptr)
              return HttpResponse{503, "application/json", "{\"error\": \"agent is starting\"}"};
            return MakeIteratorHandler(agent)(request);
          }));
  server->iterator_url_ = server->http_server_->url();

  // ---- The agent, then the monitor ----
  options.agent.address = server->address_;
  options.agent.iterator_url = server->iterator_url_;
  GAVEL_RETURN_IF_ERROR(CheckAgentOptions(options.agent));
  server->agent_ = std::make_unique<Agent>(std::move(options.agent), scheduler, launcher, clock);
  server->ready_agent_.store(server->agent_.get());
  server->monitor_ = std::thread([self] { self->MonitorLoop(); });
  return server;
}

void AgentServer::MonitorLoop() {
  while (!stop_monitor_.load()) {
    agent_->Tick();
    agent_->WaitForWork(tick_interval_);
  }
}

void AgentServer::Shutdown(Seconds flush_timeout) {
  std::call_once(shutdown_once_, [&] {
    if (agent_ != nullptr && monitor_.joinable()) {
      agent_->BeginShutdown();
      const auto deadline =
          std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(kill_grace_.value() + flush_timeout.value()));
      while (!agent_->ShutdownComplete() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    stop_monitor_.store(true);
    if (monitor_.joinable()) monitor_.join();
    if (http_server_) http_server_->Stop();
    if (listener_) listener_->Stop();
    if (grpc_server_)
      grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    ready_agent_.store(nullptr);
  });
}

AgentServer::~AgentServer() {
  Shutdown();
  http_server_.reset();
  listener_.reset();
  grpc_server_.reset();
  service_.reset();
  agent_.reset();  // before the ports it borrows
}

}  // namespace gavel::agent
