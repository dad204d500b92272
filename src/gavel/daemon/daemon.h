// Daemon: `gavel serve` as a library — the SchedulerCore on its own thread, fed by the gRPC
// services (scheduler.proto: Scheduler; worker.proto: WorkerToScheduler) and by time.
//
// Threads: gRPC's handler threads authenticate and validate a request, then hand a closure to
// the core thread (CoreLoop) and wait. The core thread runs closures in batches: it drains
// every queued closure, lets the core do what time asks (Tick), commits the batch's writes to
// the store in ONE transaction, and only then releases the waiting handlers — so every reply
// describes durable state, and a burst of submissions shares one fsync (group commit).
// Reads (ListJobs, ListWorkers, GetStatus) run first in a batch and answer at once: the state
// they see is the previous batch's, already committed, so they wait for no one's fsync.
// A failed commit is fatal: the daemon stops, and a restart recovers from the last commit.
//
// Ownership: the Daemon owns the store, the transport, the clock (unless tests pass their
// own), the core, the loop and the gRPC server. Public methods are thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "gavel/core/clock.h"
#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/daemon/agent_transport.h"
#include "gavel/daemon/observations.h"
#include "gavel/daemon/scheduler_core.h"
#include "gavel/daemon/store.h"
#include "gavel/rpc/auth.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/rpc/http_server.h"
#include "gavel/rpc/listener.h"
#include "gavel/rpc/tls.h"

namespace gavel::daemon {

struct DaemonOptions {
  std::string listen = "127.0.0.1:50060";  // port 0 = pick a free one (see Daemon::port)
  std::string state_dir;                   // required
  std::string token_file;                  // empty = no tokens (open, loopback use only)
  CoreOptions core;
  bool log_events = true;  // print the event log to stderr as it is committed
  rpc::ServerLimits limits;  // connections (docs/runtime.md, "Connections")
  // HOST:PORT of the observation port: /metrics (Prometheus), / (dashboard), /api/state.
  // Empty = none. Any address may be given (Prometheus scrapes from elsewhere).
  std::string metrics_listen;
  // TLS on the gRPC port (--tls-cert/--tls-key); off when empty. With TLS, gRPC accepts on
  // its own (Debian's gRPC 1.51 takes handed-over sockets in plaintext only), so the
  // GuardedListener's idle-connection guard (listener.h) does not apply: docs/runtime.md, "TLS".
  rpc::ServerTlsFiles tls;
  // The CA that signed the agents' certificates (--tls-ca): the daemon's calls to agents use
  // TLS with it; empty = plaintext to agents.
  std::string tls_ca;
};

// Runs closures against the core on one thread, with group commit (see the file comment).
class CoreLoop {
 public:
  // `on_fatal` runs (on the core thread) when a commit fails and the loop stops.
  CoreLoop(SchedulerCore* core, std::function<void()> on_fatal);
  ~CoreLoop();
  CoreLoop(const CoreLoop&) = delete;
  CoreLoop& operator=(const CoreLoop&) = delete;

  void Start();
  // Runs after every batch once it is committed, on the core thread (the daemon's
  // observations). Set before Start.
  void SetAfterBatch(std::function<void(SchedulerCore&)> fn) { after_batch_ = std::move(fn); }
  // Runs `fn` on the core thread; returns its status once the changes it made are durable
  // (INTERNAL if they could not be saved, UNAVAILABLE if the loop has stopped).
  grpc::Status Call(std::function<grpc::Status(SchedulerCore&)> fn);
  // Runs the read-only `fn` on the core thread at the start of the next batch, before its
  // changes, and returns without waiting for that batch's commit: what it sees is what the
  // last batch committed (read-committed; a caller's own acknowledged writes are included).
  grpc::Status Read(std::function<grpc::Status(const SchedulerCore&)> fn);
  // Runs `fn` on the core thread without waiting.
  void Post(std::function<void(SchedulerCore&)> fn);
  // The jobs as of the last commit (job_listing.h), published after each commit before the
  // batch's replies and at Start: any thread reads it without waiting for the core thread.
  std::shared_ptr<const JobListing> listing() const { return listing_.Latest(); }
  void Stop();
  // Not OK once a commit failed (the loop has then stopped).
  Status fatal() const;
  void WaitStopped();

 private:
  struct Item {
    std::function<void(SchedulerCore&)> run;
    std::function<void(const Status&)> committed;  // may be empty
    bool read_only = false;  // run before the batch's changes, answered without its commit
  };
  grpc::Status RunAndWait(Item item, grpc::Status* result);
  void Run();
  bool Enqueue(Item item);

  SchedulerCore* core_;
  std::function<void()> on_fatal_;
  mutable Mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_ GAVEL_GUARDED_BY(mutex_);
  bool stop_ GAVEL_GUARDED_BY(mutex_) = false;
  bool stopped_ GAVEL_GUARDED_BY(mutex_) = false;
  Status fatal_ GAVEL_GUARDED_BY(mutex_);
  std::function<void(SchedulerCore&)> after_batch_;  // set before the thread starts
  ListingBoard listing_;
  std::thread thread_;
};

class Daemon {
 public:
  // Opens the state, resumes, starts the core thread and the gRPC server. `clock` and
  // `transport` default to the system clock and gRPC.
  static Result<std::unique_ptr<Daemon>> Start(DaemonOptions options,
                                               std::unique_ptr<Clock> clock = nullptr,
                                               std::unique_ptr<AgentTransport> transport = nullptr,
                                               std::unique_ptr<Store> store = nullptr);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int port() const { return port_; }
  std::string address() const;
  // The observation port (--metrics-listen); 0 when there is none.
  int metrics_port() const;
  std::string metrics_address() const;  // HOST:PORT of the observation port
  // Stops serving (in-flight requests finish) and the core thread. Idempotent.
  void Shutdown();
  // Blocks until Shutdown is called or a commit fails; returns the failure, if any (call
  // Shutdown afterwards either way).
  Status Wait();
  CoreLoop& loop() { return *loop_; }

 private:
  class SchedulerService;
  class WorkerService;
  Daemon() = default;

  DaemonOptions options_;
  std::unique_ptr<rpc::TokenRegistry> tokens_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<AgentTransport> transport_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<CoreLoop> loop_;
  std::unique_ptr<SchedulerService> scheduler_service_;
  std::unique_ptr<WorkerService> worker_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::GuardedListener> listener_;  // after server_: destroyed first
  std::unique_ptr<Observations> observations_;  // durations, events, utilisation history
  std::unique_ptr<rpc::HttpServer> observe_server_;  // --metrics-listen
  int port_ = 0;
  Mutex mutex_;
  std::condition_variable cv_;
  bool shut_down_ GAVEL_GUARDED_BY(mutex_) = false;
  bool failed_ GAVEL_GUARDED_BY(mutex_) = false;
  // Set before Shutdown so that hooks stop posting to the loop.
  std::shared_ptr<std::atomic<CoreLoop*>> hook_target_;
};

}  // namespace gavel::daemon
