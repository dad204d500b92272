// Transport helpers shared by the scheduler daemon, the worker agent and the client commands:
// channels, per-call deadlines and tokens, and the mapping between gavel::Status and
// grpc::Status. Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/rpc/auth.h"

namespace gavel::rpc {

// The default address of `gavel serve`: loopback only.
inline constexpr std::string_view kDefaultSchedulerAddress = "127.0.0.1:50060";

struct HostPort {
  std::string host;  // "127.0.0.1", "localhost" or "::1" (without brackets)
  int port = 0;      // 0 = pick a free port (servers only)
  // "host:port", with brackets around an IPv6 host.
  std::string ToString() const;
};

// Parses "host:port" or "[v6]:port". Errors name the text.
Result<HostPort> ParseAddress(std::string_view text);
bool IsLoopbackHost(std::string_view host);

// A channel that reconnects quickly after the peer restarts: plaintext by default (tokens
// authenticate; addresses are loopback by default), or with `credentials` (tls.h).
std::shared_ptr<grpc::Channel> MakeChannel(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

// Limits every gRPC server of the runtime (the daemon's and each agent's) applies to the
// connections its GuardedListener (listener.h) hands over (docs/runtime.md, "Connections"):
// idle ones get a GOAWAY after `max_connection_idle`, every one is recycled after
// `max_connection_age` (clients reconnect transparently), handler threads and streams per
// connection are bounded.
struct ServerLimits {
  // A connection whose client sends nothing for this long is closed (by the GuardedListener
  // of listener.h, which accepts for the runtime's servers).
  Seconds handshake_timeout{10.0};
  Seconds max_connection_idle{300.0};
  Seconds max_connection_age{3600.0};
  Seconds max_connection_age_grace{30.0};  // in-flight calls may finish after the age
  int max_threads = 512;                   // handler threads (grpc::ResourceQuota)
  int max_concurrent_streams = 64;         // calls at once per connection
};
// Applies `limits`, and turns SO_REUSEPORT off for any port gRPC itself would listen on
// (gRPC enables it by default, which let a second server share the port).
void ApplyServerLimits(grpc::ServerBuilder* builder, const ServerLimits& limits = {});
// Raises this process's soft RLIMIT_NOFILE to its hard limit; returns the soft limit now in
// force. Called once at start by `gavel serve` and `gavel worker`.
std::uint64_t RaiseDescriptorLimit();

// Prepares a client call: deadline `timeout` from now and, if `token` is not empty, the
// `authorization` metadata.
void PrepareContext(grpc::ClientContext* context, Seconds timeout, std::string_view token);

// The caller of a server call, or nullopt when it must be refused (missing/unknown token).
std::optional<Principal> Authenticate(const grpc::ServerContextBase& context,
                                      const TokenRegistry& tokens);
// The UNAUTHENTICATED status servers answer with.
grpc::Status Unauthenticated();

grpc::Status ToGrpc(const Status& status);
// `what` names the call for the message: "<what>: <reason>".
Status FromGrpc(const grpc::Status& status, std::string_view what);

}  // namespace gavel::rpc
