#include "gavel/daemon/daemon.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <iostream>

#include "gavel/daemon/observe_http.h"
#include "gavel/daemon/sqlite_store.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/rpc/listener.h"
#include "gavel/wire/scheduler.grpc.pb.h"
#include "gavel/wire/worker.grpc.pb.h"

namespace gavel::daemon {
namespace {

constexpr int kMaxMessageBytes = 64 * 1024 * 1024;

grpc::Status PermissionDenied(const std::string& message) {
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, message);
}

// Who may call what (docs/runtime.md, "Who may call what"). The Scheduler service is for
// users and admins: an agent's token is refused there, so a stolen agent token cannot submit
// or cancel. The WorkerToScheduler service is for agents and admins: a user's token is
// refused there, so no user can register GPUs or speak for an agent.
grpc::Status RefuseAgents(const rpc::Principal& caller, const char* call) {
  if (!caller.agent) return grpc::Status::OK;
  return PermissionDenied(std::string(call) + ": " + caller.user +
                          " holds an agent token, which may only call the worker service "
                          "(RegisterWorker, Heartbeat, ReportDone)");
}

grpc::Status RefuseUsers(const rpc::Principal& caller, const char* call) {
  if (caller.agent || caller.admin) return grpc::Status::OK;
  return PermissionDenied(std::string(call) + ": needs an agent token (role `agent` in the "
                          "token file) or an admin's; " + caller.user + " is a user");
}

// Heartbeat and ReportDone speak for one agent: only the identity that registered it may.
grpc::Status RefuseOthersAgent(const SchedulerCore& core, const rpc::Principal& caller,
                               const std::string& agent_id, const char* call) {
  if (core.agent_registry().MaySpeakFor(caller, agent_id)) return grpc::Status::OK;
  return PermissionDenied(std::string(call) + ": agent " + agent_id +
                          " was registered by another identity; " + caller.user +
                          " may not speak for it");
}

}  // namespace

// ------------------------------------------------------------------------------------------
// CoreLoop

CoreLoop::CoreLoop(SchedulerCore* core, std::function<void()> on_fatal)
    : core_(core), on_fatal_(std::move(on_fatal)) {}

CoreLoop::~CoreLoop() {
  Stop();
  WaitStopped();
}

void CoreLoop::Start() {
  listing_.Publish(core_->Listing());
  thread_ = std::thread([this] { Run(); });
}

bool CoreLoop::Enqueue(Item item) {
  {
    MutexLock lock(mutex_);
    if (stop_) return false;
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
  return true;
}

void CoreLoop::Post(std::function<void(SchedulerCore&)> fn) {
  (void)Enqueue(Item{std::move(fn), nullptr});
}

grpc::Status CoreLoop::Call(std::function<grpc::Status(SchedulerCore&)> fn) {
  grpc::Status result;
  Item item;
  item.run = [&](SchedulerCore& core) { result = fn(core); };
  return RunAndWait(std::move(item), &result);
}

grpc::Status CoreLoop::Read(std::function<grpc::Status(const SchedulerCore&)> fn) {
  grpc::Status result;
  Item item;
  item.run = [&](SchedulerCore& core) { result = fn(core); };
  item.read_only = true;
  return RunAndWait(std::move(item), &result);
}

// `item.run` writes `*result`; this waits for the item's answer (its commit, unless read-only).
grpc::Status CoreLoop::RunAndWait(Item item, grpc::Status* result) {
  Mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
  item.committed = [&](const Status& commit) {
    MutexLock lock(done_mutex);
    if (!commit.ok()) {
      *result = grpc::Status(grpc::StatusCode::INTERNAL,
                             "the scheduler could not save its state: " + commit.message());
    }
    done = true;
    done_cv.notify_one();
  };
  if (!Enqueue(std::move(item))) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the scheduler is shutting down");
  }
  UniqueLock lock(done_mutex);
  while (!done) done_cv.wait(lock.native());
  return *result;
}

void CoreLoop::Stop() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
}

Status CoreLoop::fatal() const {
  MutexLock lock(mutex_);
  return fatal_;
}

void CoreLoop::WaitStopped() {
  if (thread_.joinable()) thread_.join();
}

void CoreLoop::Run() {
  UniqueLock lock(mutex_);
  while (true) {
    const std::int64_t wake = core_->NextWakeMs();
    const std::int64_t wait_ms = std::max<std::int64_t>(0, wake - SystemClock().NowMs());
    if (queue_.empty() && !stop_ && wait_ms > 0) {
      cv_.wait_for(lock.native(), std::chrono::milliseconds(std::min<std::int64_t>(wait_ms, 1000)));
    }
    std::deque<Item> items;
    items.swap(queue_);
    const bool stopping = stop_;
    lock.Unlock();

    // Reads first, answered at once: the state they see is the last batch's, committed. A
    // listing of thousands of jobs in pages so waits for no fsync of others' changes.
    for (Item& item : items) {
      if (!item.read_only) continue;
      item.run(*core_);
      item.committed(Status::Ok());
      item.committed = nullptr;
    }
    for (Item& item : items) {
      if (!item.read_only) item.run(*core_);
    }
    if (!stopping) core_->Tick();
    Status commit = core_->Flush();
    if (!commit.ok()) {
      std::cerr << "gavel serve: FATAL: " << commit.ToString() << "\n";
    } else {
      listing_.Publish(core_->Listing());
      if (after_batch_) after_batch_(*core_);
    }
    for (Item& item : items) {
      if (item.committed) item.committed(commit);
    }
    lock.Lock();
    if (!commit.ok()) {
      fatal_ = commit;
      stop_ = true;
      if (on_fatal_) on_fatal_();
    }
    if (stop_) {
      // Refuse whatever arrives from now on; answer what is still queued.
      for (Item& item : queue_) {
        if (item.committed) {
          item.committed(Status::IoError("the scheduler is shutting down"));
        }
      }
      queue_.clear();
      stopped_ = true;
      return;
    }
  }
}

// ------------------------------------------------------------------------------------------
// gRPC services: authenticate, then run on the core thread.

// ListJobs is served raw (bytes in, bytes out) on gRPC's callback threads: its answer is the
// published listing's bytes, copied (job_listing.h), with no message built or serialised per
// call. The other calls are synchronous.
class Daemon::SchedulerService final
    : public wire::Scheduler::WithRawCallbackMethod_ListJobs<wire::Scheduler::Service> {
 public:
  SchedulerService(CoreLoop* loop, const rpc::TokenRegistry* tokens, AgentTransport* transport)
      : loop_(loop), tokens_(tokens), transport_(transport) {}

  grpc::Status SubmitJob(grpc::ServerContext* context, const wire::SubmitJobRequest* request,
                         wire::SubmitJobResponse* response) override {
    const auto user = rpc::Authenticate(*context, *tokens_);
    if (!user) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseAgents(*user, "SubmitJob"); !refused.ok()) return refused;
    if (!request->has_spec()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "spec: missing");
    }
    return loop_->Call([&](SchedulerCore& core) {
      Result<std::uint64_t> id = core.Submit(*user, request->spec());
      if (!id.ok()) return rpc::ToGrpc(id.status());
      response->set_job_id(*id);
      return grpc::Status::OK;
    });
  }

  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ListJobsBytes(*context, *request, response));
    return reactor;
  }

  grpc::Status CancelJob(grpc::ServerContext* context, const wire::CancelJobRequest* request,
                         wire::CancelJobResponse* response) override {
    const auto user = rpc::Authenticate(*context, *tokens_);
    if (!user) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseAgents(*user, "CancelJob"); !refused.ok()) return refused;
    return loop_->Call([&](SchedulerCore& core) {
      if (core.CancelDenied(*user, request->job_id())) {
        return PermissionDenied("job " + std::to_string(request->job_id()) +
                                " belongs to another user; only its owner or an admin may "
                                "cancel it");
      }
      Result<wire::JobInfo> info = core.Cancel(*user, request->job_id());
      if (!info.ok()) return rpc::ToGrpc(info.status());
      *response->mutable_job() = *std::move(info);
      return grpc::Status::OK;
    });
  }

  grpc::Status ListWorkers(grpc::ServerContext* context, const wire::ListWorkersRequest*,
                           wire::ListWorkersResponse* response) override {
    const auto caller = rpc::Authenticate(*context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseAgents(*caller, "ListWorkers"); !refused.ok()) return refused;
    return loop_->Read([&](const SchedulerCore& core) {
      *response = core.ListWorkers();
      return grpc::Status::OK;
    });
  }

  grpc::Status GetStatus(grpc::ServerContext* context, const wire::GetStatusRequest*,
                         wire::GetStatusResponse* response) override {
    const auto caller = rpc::Authenticate(*context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseAgents(*caller, "GetStatus"); !refused.ok()) return refused;
    return loop_->Read([&](const SchedulerCore& core) {
      *response = core.GetStatus();
      return grpc::Status::OK;
    });
  }

  // The agents are asked from this thread (not the core's), one after the other, each with
  // the transport's deadline: a slow agent delays only this call.
  grpc::Status GetJobLogs(grpc::ServerContext* context, const wire::GetJobLogsRequest* request,
                          wire::GetJobLogsResponse* response) override {
    const auto caller = rpc::Authenticate(*context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseAgents(*caller, "GetJobLogs"); !refused.ok()) return refused;
    std::vector<SchedulerCore::LogSource> sources;
    const grpc::Status found = loop_->Call([&](SchedulerCore& core) {
      if (core.CancelDenied(*caller, request->job_id())) {
        return PermissionDenied("job " + std::to_string(request->job_id()) +
                                " belongs to another user; only its owner or an admin may read "
                                "its logs");
      }
      Result<std::vector<SchedulerCore::LogSource>> result = core.LogSources(request->job_id());
      if (!result.ok()) return rpc::ToGrpc(result.status());
      sources = *std::move(result);
      return grpc::Status::OK;
    });
    if (!found.ok()) return found;
    if (request->rank() < -1) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "rank: " + std::to_string(request->rank()) +
                              " is not a rank (>= 0, or -1 for all)");
    }
    for (const SchedulerCore::LogSource& source : sources) {
      const std::string& agent_id = source.endpoint.agent_id;
      if (!source.alive) {
        response->add_unreachable(agent_id + ": dead (its logs are on its host)");
        continue;
      }
      wire::ReadLogsRequest read;
      read.set_job_id(request->job_id());
      read.set_rank(request->rank());
      for (const wire::AgentLogOffset& offset : request->offsets()) {
        if (offset.agent_id() == agent_id) (*read.mutable_offsets())[offset.file()] = offset.offset();
      }
      Result<wire::ReadLogsResponse> logs = transport_->ReadLogs(source.endpoint, read);
      if (!logs.ok()) {
        response->add_unreachable(agent_id + ": " + logs.status().message());
        continue;
      }
      for (wire::LogChunk& chunk : *logs->mutable_chunks()) {
        wire::AgentLogChunk* out = response->add_chunks();
        out->set_agent_id(agent_id);
        *out->mutable_chunk() = std::move(chunk);
      }
    }
    return grpc::Status::OK;
  }

 private:
  grpc::Status ListJobsBytes(const grpc::CallbackServerContext& context,
                             const grpc::ByteBuffer& request_bytes, grpc::ByteBuffer* response) {
    const auto caller = rpc::Authenticate(context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseAgents(*caller, "ListJobs"); !refused.ok()) return refused;
    wire::ListJobsRequest request;
    grpc::ByteBuffer shared(request_bytes);  // the same slices; Deserialize consumes its buffer
    if (!grpc::SerializationTraits<wire::ListJobsRequest>::Deserialize(&shared, &request).ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "ListJobsRequest: unparsable");
    }
    // Answered here, from the last commit's listing: a busy core thread delays no listing.
    const std::shared_ptr<const JobListing> listing = loop_->listing();
    if (listing == nullptr) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the scheduler is starting");
    }
    Result<std::string> page = listing->PageBytes(request);
    if (!page.ok()) return rpc::ToGrpc(page.status());
    // The slice takes the bytes over, without a copy, and frees them once sent.
    auto* bytes = new std::string(*std::move(page));
    grpc::Slice slice(bytes->data(), bytes->size(),
                      [](void* owned) { delete static_cast<std::string*>(owned); }, bytes);
    *response = grpc::ByteBuffer(&slice, 1);
    return grpc::Status::OK;
  }

  CoreLoop* loop_;
  const rpc::TokenRegistry* tokens_;
  AgentTransport* transport_;
};

class Daemon::WorkerService final : public wire::WorkerToScheduler::Service {
 public:
  WorkerService(CoreLoop* loop, const rpc::TokenRegistry* tokens) : loop_(loop), tokens_(tokens) {}

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const wire::RegisterWorkerRequest* request,
                              wire::RegisterWorkerResponse* response) override {
    const auto caller = rpc::Authenticate(*context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseUsers(*caller, "RegisterWorker"); !refused.ok()) {
      return refused;
    }
    return loop_->Call([&](SchedulerCore& core) {
      Result<wire::RegisterWorkerResponse> registered = core.RegisterWorker(*caller, *request);
      if (!registered.ok()) return rpc::ToGrpc(registered.status());
      *response = *std::move(registered);
      return grpc::Status::OK;
    });
  }

  grpc::Status Heartbeat(grpc::ServerContext* context, const wire::HeartbeatRequest* request,
                         wire::HeartbeatResponse* response) override {
    const auto caller = rpc::Authenticate(*context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseUsers(*caller, "Heartbeat"); !refused.ok()) return refused;
    return loop_->Call([&](SchedulerCore& core) {
      if (grpc::Status refused =
              RefuseOthersAgent(core, *caller, request->agent_id(), "Heartbeat");
          !refused.ok()) {
        return refused;
      }
      *response = core.Heartbeat(*request);
      return grpc::Status::OK;
    });
  }

  grpc::Status ReportDone(grpc::ServerContext* context, const wire::ReportDoneRequest* request,
                          wire::ReportDoneResponse*) override {
    const auto caller = rpc::Authenticate(*context, *tokens_);
    if (!caller) return rpc::Unauthenticated();
    if (grpc::Status refused = RefuseUsers(*caller, "ReportDone"); !refused.ok()) return refused;
    return loop_->Call([&](SchedulerCore& core) {
      if (grpc::Status refused =
              RefuseOthersAgent(core, *caller, request->agent_id(), "ReportDone");
          !refused.ok()) {
        return refused;
      }
      return rpc::ToGrpc(core.ReportDone(*request));
    });
  }

 private:
  CoreLoop* loop_;
  const rpc::TokenRegistry* tokens_;
};

// ------------------------------------------------------------------------------------------
// Daemon

Result<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options,
                                              std::unique_ptr<Clock> clock,
                                              std::unique_ptr<AgentTransport> transport,
                                              std::unique_ptr<Store> store) {
  if (options.state_dir.empty() && !store) {
    return Status::InvalidArgument("--state: a state directory is required");
  }
  GAVEL_ASSIGN_OR_RETURN(const rpc::HostPort listen, rpc::ParseAddress(options.listen));
  // Everything that can refuse the options does so before the state directory is made: a
  // refused `gavel serve` leaves nothing behind.
  GAVEL_RETURN_IF_ERROR(ValidateCoreOptions(options.core));
  std::unique_ptr<Daemon> daemon(new Daemon());
  daemon->options_ = options;
  if (options.token_file.empty()) {
    daemon->tokens_ = std::make_unique<rpc::TokenRegistry>();
  } else {
    Result<rpc::TokenRegistry> tokens = rpc::TokenRegistry::LoadFile(options.token_file);
    if (!tokens.ok()) return tokens.status().WithContext("--token-file");
    daemon->tokens_ = std::make_unique<rpc::TokenRegistry>(*std::move(tokens));
  }
  daemon->clock_ = clock ? std::move(clock) : std::make_unique<SystemClock>();
  if (transport) {
    daemon->transport_ = std::move(transport);
  } else {
    Result<std::shared_ptr<grpc::ChannelCredentials>> to_agents =
        rpc::MakeChannelCredentials(options.tls_ca);
    if (!to_agents.ok()) return to_agents.status();
    daemon->transport_ =
        std::make_unique<GrpcAgentTransport>(8, Seconds(10.0), *std::move(to_agents));
  }
  if (store) {
    daemon->store_ = std::move(store);
  } else {
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> sqlite,
                           SqliteStore::Open(options.state_dir));
    daemon->store_ = std::move(sqlite);
  }
  auto target = std::make_shared<std::atomic<CoreLoop*>>(nullptr);
  daemon->hook_target_ = target;
  CoreHooks hooks;
  hooks.wake = [target] {
    if (CoreLoop* loop = target->load()) loop->Post([](SchedulerCore&) {});
  };
  daemon->observations_ = std::make_unique<Observations>();
  Observations* observations = daemon->observations_.get();
  const bool log_events = options.log_events;
  hooks.event = [observations, log_events](const EventRow& event) {
    observations->Event(event);
    if (log_events) {
      const std::time_t seconds = static_cast<std::time_t>(event.ts_ms / 1000);
      std::tm tm{};
      localtime_r(&seconds, &tm);
      char stamp[32];
      std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
      std::cerr << "[gavel serve " << stamp << "] " << event.kind;
      if (event.job_id != 0) std::cerr << " job=" << event.job_id;
      if (event.kind.starts_with("worker") || event.kind == "start" || event.kind == "crash") {
        std::cerr << " worker=" << event.worker_id;
      }
      std::cerr << " " << event.message << "\n";
    }
  };
  hooks.dispatch_failed = [target](const std::string& agent, std::uint64_t round) {
    if (CoreLoop* loop = target->load()) {
      loop->Post([agent, round](SchedulerCore& core) { core.OnDispatchFailed(agent, round); });
    }
  };
  GAVEL_ASSIGN_OR_RETURN(daemon->core_,
                         SchedulerCore::Create(options.core, daemon->store_.get(),
                                               daemon->transport_.get(), daemon->clock_.get(),
                                               std::move(hooks)));
  // The recovery itself is durable before anything is served.
  GAVEL_RETURN_IF_ERROR(daemon->core_->Flush());
  Daemon* self = daemon.get();
  daemon->loop_ = std::make_unique<CoreLoop>(daemon->core_.get(), [self] {
    MutexLock lock(self->mutex_);
    self->failed_ = true;
    self->cv_.notify_all();
  });
  target->store(daemon->loop_.get());
  daemon->core_->allocation_service().SetSolveObserver(
      [observations](double seconds) { observations->SolveFinished(seconds); });
  const Clock* core_clock = daemon->clock_.get();
  daemon->loop_->SetAfterBatch(
      [observations, core_clock, rounds = std::uint64_t{0}](SchedulerCore& core) mutable {
        const std::int64_t now = core_clock->NowMs();
        // A round started in this batch (rounds start in Tick, one at a time).
        const std::uint64_t started = core.counters().rounds_started;
        const bool round_started = started != rounds;
        if (round_started) {
          rounds = started;
          observations->RoundStarted(now);
        }
        if (round_started || observations->WantsSample(now)) {
          observations->Sample(Utilisation(core.ListWorkers(), now), round_started);
        }
      });
  daemon->scheduler_service_ =
      std::make_unique<SchedulerService>(daemon->loop_.get(), daemon->tokens_.get(),
                                         daemon->transport_.get());
  daemon->worker_service_ = std::make_unique<WorkerService>(daemon->loop_.get(), daemon->tokens_.get());

  // No listening port of gRPC's own: the GuardedListener accepts (see listener.h).
  grpc::ServerBuilder builder;
  builder.RegisterService(daemon->scheduler_service_.get());
  builder.RegisterService(daemon->worker_service_.get());
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  rpc::ApplyServerLimits(&builder, options.limits);  // SO_REUSEPORT off among them
  Result<rpc::ServingGrpc> serving = rpc::ServeGrpc(builder, listen, options.tls, options.limits);
  if (!serving.ok()) return serving.status();
  daemon->server_ = std::move(serving->server);
  daemon->listener_ = std::move(serving->listener);
  daemon->port_ = serving->port;
  daemon->loop_->Start();
  if (!options.metrics_listen.empty()) {
    Result<rpc::HostPort> metrics = rpc::ParseAddress(options.metrics_listen);
    if (!metrics.ok()) return metrics.status().WithContext("--metrics-listen");
    rpc::HttpServerOptions http;
    http.host = metrics->host;
    http.port = metrics->port;
    http.allow_remote = true;
    Result<std::unique_ptr<rpc::HttpServer>> server = rpc::HttpServer::Start(
        http, MakeObserveHandler(daemon->loop_.get(), daemon->observations_.get()));
    if (!server.ok()) return server.status().WithContext("--metrics-listen");
    daemon->observe_server_ = *std::move(server);
  }
  return daemon;
}

Daemon::~Daemon() { Shutdown(); }

std::string Daemon::address() const {
  auto listen = rpc::ParseAddress(options_.listen);
  rpc::HostPort hp{listen.ok() ? listen->host : "127.0.0.1", port_};
  return hp.ToString();
}

int Daemon::metrics_port() const { return observe_server_ ? observe_server_->port() : 0; }

std::string Daemon::metrics_address() const {
  auto listen = rpc::ParseAddress(options_.metrics_listen);
  return rpc::HostPort{listen.ok() ? listen->host : "127.0.0.1", metrics_port()}.ToString();
}

void Daemon::Shutdown() {
  {
    MutexLock lock(mutex_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  cv_.notify_all();
  if (observe_server_) observe_server_->Stop();
  if (listener_) listener_->Stop();  // no new connection reaches the server
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  if (hook_target_) hook_target_->store(nullptr);
  if (loop_) {
    loop_->Stop();
    loop_->WaitStopped();
  }
  // The transport's threads may still run callbacks into the core: stop them first.
  transport_.reset();
  if (core_) core_->allocation_service().WaitIdle();
}

Status Daemon::Wait() {
  {
    UniqueLock lock(mutex_);
    while (!shut_down_ && !failed_) cv_.wait(lock.native());
  }
  return loop_ ? loop_->fatal() : Status::Ok();
}

}  // namespace gavel::daemon
