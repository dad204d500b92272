// AgentServer: a running worker agent — the Agent core (agent.h) wired to the world:
//   * the WorkerAgent gRPC service (StartRound, KillJob) on `listen` (loopback by default),
//     refusing calls without the agent's callback token (a fresh random secret unless the
//     options give one, sent to the scheduler at registration: the scheduler presents it);
//   * the iterator endpoint (iterator_endpoint.h) on an HTTP port on loopback;
//   * the monitor thread that runs Agent::Tick every tick_interval, or at once when an event
//     needs it.
// `gavel worker` runs one; the runtime tests run several in one process, with fake or real
// ports.
//
// Ownership: the server owns the agent, both servers, the monitor thread and — with Start()'s
// first form — the real ports (SteadyClock, PosixProcessLauncher, GrpcSchedulerClient).
// Shutdown() (also run by the destructor) ends every job (SIGTERM, SIGKILL after the grace;
// reported KILLED), gives the reports a bounded time to reach the scheduler, then stops.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gavel/agent/agent.h"
#include "gavel/agent/http_server.h"
#include "gavel/agent/ports.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/rpc/listener.h"
#include "gavel/rpc/tls.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace gavel::agent {

struct AgentServerOptions {
  // The agent's options; `address` and `iterator_url` are filled in from the ports bound.
  AgentOptions agent;
  std::string scheduler_address = "127.0.0.1:50060";
  // The WorkerAgent service: "host:port" (port 0 = any free one); the scheduler is told
  // "host:<bound port>", so the host must be one the scheduler can reach.
  std::string listen = "127.0.0.1:0";
  HttpServerOptions iterator_http;  // loopback; port 0 = any free one
  Seconds tick_interval{0.05};
  Seconds rpc_timeout{5.0};  // deadline of each call to the scheduler
  rpc::ServerLimits limits;  // of the WorkerAgent service (docs/runtime.md, "Connections")
  rpc::ServerTlsFiles tls;           // TLS on the WorkerAgent service (rpc/tls.h); off if empty
  std::string scheduler_tls_ca;      // PEM CA of a TLS scheduler; empty = plaintext
  // How job processes are started (first Start form only); null = PosixProcessLauncher.
  // `gavel worker --launch slurm-step` gives slurm::SlurmStepLauncher (docs/slurm.md).
  std::shared_ptr<ProcessLauncher> launcher;
};

class AgentServer {
 public:
  // With the real ports.
  static Result<std::unique_ptr<AgentServer>> Start(AgentServerOptions options);
  // With the given ports (borrowed; they must outlive the server).
  static Result<std::unique_ptr<AgentServer>> Start(AgentServerOptions options,
                                                    SchedulerClient* scheduler,
                                                    ProcessLauncher* launcher, const Clock* clock);
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;
  ~AgentServer();

  Agent& agent() { return *agent_; }
  const std::string& agent_id() const { return agent_id_; }
  const std::string& address() const { return address_; }  // WorkerAgent service
  const std::string& iterator_url() const { return iterator_url_; }

  // Ends the jobs and stops; waits at most kill_grace + `flush_timeout`. Idempotent.
  void Shutdown(Seconds flush_timeout = Seconds(3.0));

 private:
  class Service;
  AgentServer() = default;
  void MonitorLoop();

  // Real ports (first Start form only).
  std::unique_ptr<Clock> owned_clock_;
  std::shared_ptr<ProcessLauncher> owned_launcher_;
  std::unique_ptr<SchedulerClient> owned_scheduler_;

  std::string agent_id_;
  std::string address_;
  std::string iterator_url_;
  Seconds tick_interval_{0.05};
  Seconds kill_grace_{10.0};
  std::atomic<Agent*> ready_agent_{nullptr};  // what the servers forward to, once made
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<rpc::GuardedListener> listener_;
  std::unique_ptr<HttpServer> http_server_;
  std::atomic<bool> stop_monitor_{false};
  std::thread monitor_;
  std::once_flag shutdown_once_;
};

}  // namespace gavel::agent
