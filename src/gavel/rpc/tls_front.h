// TlsFront: TLS terminated in the process, in front of a gRPC server that speaks plaintext,
// so that a TLS port gets the GuardedListener's idle-connection guard (listener.h) too.
//
// Debian's gRPC 1.51 takes a handed-over socket in plaintext only
// (grpc_server_add_channel_from_fd refuses other credentials), and with gRPC's own TLS port a
// flood of idle connections past the descriptor limit stops its accept loop for good
// (grpc/grpc#20418; it has no connection cap before 1.5x). So the listener accepts TLS
// connections itself and, once a client has spoken, hands the socket to Adopt: a relay thread
// runs the TLS handshake (OpenSSL; ALPN "h2", TLS 1.2 or later; the handshake must finish
// within `handshake_timeout`) and then copies bytes between the TLS connection and one end of
// a socketpair whose other end gRPC serves as a plaintext connection. gRPC's limits (idle
// connections, connection age, threads) apply to that connection as to any other; its end
// closing (GOAWAY, server shutdown) ends the relay, and so does the client's.
//
// Each TLS connection costs three descriptors (the listener's accounting sees them: it counts
// by descriptor number) and one thread while it lives; at most `max_relays` at once, beyond
// which a new connection is closed (its client retries). Tokens still authenticate callers;
// the gRPC server sees the relay as its peer.
//
// Thread-safety: Adopt may be called from any thread; the destructor ends every relay
// (shutting their sockets down) and waits for them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace gavel::rpc {

struct TlsFrontOptions {
  std::string cert_file;  // PEM certificate chain (--tls-cert)
  std::string key_file;   // PEM private key (--tls-key)
  Seconds handshake_timeout{10.0};
  // A relay waits this long for the rest of a TLS record, or for the client to take what it
  // is sent, before it gives the connection up.
  Seconds io_timeout{60.0};
  int max_relays = 512;
};

class TlsFront {
 public:
  // Loads the certificate and key; errors name the flag and file.
  static Result<std::unique_ptr<TlsFront>> Make(const TlsFrontOptions& options);
  ~TlsFront();
  TlsFront(const TlsFront&) = delete;
  TlsFront& operator=(const TlsFront&) = delete;

  // Takes `fd` (a connected socket whose client has sent its first bytes) and serves it to
  // `server` over TLS; closes it when at max_relays or when no relay can be made.
  void Adopt(int fd, grpc::Server* server);
  // No more connections reach the server (the listener stopped, the server shuts down): new
  // ones and those still in their handshake are closed; relays already serving go on.
  void StopAdopting();

  std::uint64_t handshakes_failed() const;  // refused, timed out or not TLS (diagnostics)
  std::uint64_t refused() const;            // closed at max_relays

 private:
  struct Context;
  TlsFront() = default;
  void Relay(int client, grpc::Server* server);

  TlsFrontOptions options_;           // set by Make, then read-only
  std::unique_ptr<Context> context_;  // set by Make, then read-only (SSL_CTX is thread-safe)
  // Guards the relays' bookkeeping, shared by Adopt's callers, the relay threads and the
  // destructor.
  mutable Mutex mutex_;
  std::condition_variable relays_done_;  // relays_ fell (waited on with mutex_)
  // The relays' sockets (client and plaintext ends), shut down by the destructor.
  std::set<int> sockets_ GAVEL_GUARDED_BY(mutex_);
  int relays_ GAVEL_GUARDED_BY(mutex_) = 0;
  bool closing_ GAVEL_GUARDED_BY(mutex_) = false;
  bool adopting_ GAVEL_GUARDED_BY(mutex_) = true;
  std::uint64_t handshakes_failed_ GAVEL_GUARDED_BY(mutex_) = 0;
  std::uint64_t refused_ GAVEL_GUARDED_BY(mutex_) = 0;
};

}  // namespace gavel::rpc
