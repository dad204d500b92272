// TLS for the runtime's gRPC services (docs/runtime.md, "TLS"): credentials from PEM files.
//
// A server with TLS presents --tls-cert/--tls-key (the certificate must name the address
// clients dial: an IP SAN such as 127.0.0.1, or a DNS name); clients verify it against
// --tls-ca. Tokens still authenticate callers; TLS keeps them and the traffic private and the
// server genuine. Without these flags everything stays plaintext, as before.
// Thread-safety: free functions; credentials objects are shared and immutable.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "gavel/core/status.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/rpc/listener.h"

namespace gavel::rpc {

struct ServerTlsFiles {
  std::string cert_file;  // PEM certificate chain (--tls-cert)
  std::string key_file;   // PEM private key (--tls-key)
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// TLS server credentials; errors name the flag and the file (unreadable, not PEM, or only
// one of the pair given).
Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ServerTlsFiles& files);

// Client credentials: TLS verifying the server against the PEM CA bundle `ca_file`
// (--tls-ca), or plaintext when it is empty.
Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const std::string& ca_file);

// A started gRPC server and what accepts for it.
struct ServingGrpc {
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<GuardedListener> listener;  // destroy before `server`
  int port = 0;
};

// Builds `builder`'s server (services registered, ApplyServerLimits done) and serves it on
// `address` behind a GuardedListener (listener.h): in plaintext, or with `tls` enabled over
// TLS terminated by a TlsFront (tls_front.h) in front of the plaintext server (Debian's gRPC
// 1.51 takes handed-over sockets in plaintext only), so both get the listener's
// idle-connection guard. Errors name the address (in use) or the TLS file at fault.
Result<ServingGrpc> ServeGrpc(grpc::ServerBuilder& builder, const HostPort& address,
                              const ServerTlsFiles& tls, const ServerLimits& limits);

}  // namespace gavel::rpc
