// GuardedListener: the runtime's own accept loop in front of a gRPC server.
//
// Debian's gRPC 1.51 stops accepting for good once accept() fails for lack of descriptors
// (grpc/grpc#20418): a flood of idle connections past the descriptor limit silenced a daemon
// for ever. So the daemon and the agents bind and accept themselves, and hand a connection to
// the server (grpc::AddInsecureChannelFromFd) only once its client has sent something:
//   * a connection silent for `first_bytes_timeout` is closed (idle floods drain by
//     themselves and never reach gRPC);
//   * when a new connection would leave fewer than `reserve` descriptors free, the oldest
//     silent one is closed to make room (a real client speaks within milliseconds, so a flood
//     of silent connections only evicts itself), or, with none silent, the new one is closed
//     (the client sees a reset and retries); the process always keeps descriptors for its
//     own work (gRPC's pollers, SQLite, job logs);
//   * an accept that fails for lack of descriptors is retried a moment later: the loop never
//     stops while the process lives.
// The socket is bound without SO_REUSEPORT, so a second server on the same address fails to
// start instead of sharing the port. With a TlsFront (tls_front.h) a connection that spoke is
// handed to it instead, which terminates TLS and serves the plaintext server through a relay.
//
// Thread-safety: Start and Stop from one thread; the loop runs on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/rpc/grpc_util.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace gavel::rpc {

class TlsFront;

struct ListenerOptions {
  Seconds first_bytes_timeout{10.0};
  int reserve = 64;  // descriptors always left free
  // Connections that spoke go to this TLS front (null = to gRPC as they are). The listener
  // keeps it alive until it is destroyed (after Stop: relays of connections handed over
  // still serve in-flight calls while the server shuts down).
  std::shared_ptr<TlsFront> tls_front;
};

class GuardedListener {
 public:
  // Binds `address` (port 0 = a free one) and starts accepting for `server`, which must have
  // been built without listening ports and must outlive the listener. Errors name the address
  // and say when it is in use.
  static Result<std::unique_ptr<GuardedListener>> Start(const HostPort& address,
                                                        grpc::Server* server,
                                                        ListenerOptions options = {});
  ~GuardedListener();
  GuardedListener(const GuardedListener&) = delete;
  GuardedListener& operator=(const GuardedListener&) = delete;

  int port() const { return port_; }
  // Stops accepting and closes the connections not yet handed over. Idempotent.
  void Stop();
  // Connections closed: new ones for lack of descriptors, silent ones evicted to make room,
  // silent ones past the timeout (diagnostics, tests).
  std::uint64_t refused() const { return refused_.load(); }
  std::uint64_t evicted() const { return evicted_.load(); }
  std::uint64_t timed_out() const { return timed_out_.load(); }

 private:
  GuardedListener() = default;
  void Run();

  grpc::Server* server_ = nullptr;
  ListenerOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int epoll_fd_ = -1;
  int port_ = 0;
  std::uint64_t fd_limit_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> evicted_{0};
  std::atomic<std::uint64_t> timed_out_{0};
  std::thread thread_;
};

}  // namespace gavel::rpc
