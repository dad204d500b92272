#include "gavel/rpc/tls_front.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace gavel::rpc {

struct TlsFront::Context {
  ~Context() {
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
  SSL_CTX* ctx = nullptr;
};

namespace {

using Clock = std::chrono::steady_clock;

// OpenSSL's last error on this thread, as text.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// gRPC clients insist on ALPN "h2" (they refuse a server that selects none).
int SelectH2(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
             unsigned int in_length, void*) {
  static const unsigned char kH2[] = {2, 'h', '2'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, kH2, sizeof kH2, in, in_length) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

int MillisecondsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// The TLS handshake on the non-blocking `ssl` socket, by `deadline`.
bool Handshake(SSL* ssl, int fd, Clock::time_point deadline) {
  while (true) {
    ERR_clear_error();
    const int rc = SSL_accept(ssl);
    if (rc == 1) return true;
    const int error = SSL_get_error(ssl, rc);
    short events = 0;
    if (error == SSL_ERROR_WANT_READ) events = POLLIN;
    if (error == SSL_ERROR_WANT_WRITE) events = POLLOUT;
    const int wait_ms = MillisecondsLeft(deadline);
    if (events == 0 || wait_ms == 0) return false;
    pollfd one{fd, events, 0};
    if (::poll(&one, 1, wait_ms) <= 0) return false;
  }
}

bool WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// SSL_write of all of `data` (the socket is blocking with a send timeout: a client that does
// not read for that long fails the write).
bool SslWriteAll(SSL* ssl, const char* data, int size) {
  while (size > 0) {
    ERR_clear_error();
    const int n = SSL_write(ssl, data, size);
    if (n <= 0) return false;
    data += n;
    size -= n;
  }
  return true;
}

void SetBlockingWithTimeouts(int fd, Seconds timeout) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  timeval wait{};
  wait.tv_sec = static_cast<time_t>(timeout.value());
  wait.tv_usec = static_cast<suseconds_t>((timeout.value() - static_cast<double>(wait.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
}

}  // namespace

Result<std::unique_ptr<TlsFront>> TlsFront::Make(const TlsFrontOptions& options) {
  std::unique_ptr<TlsFront> front(new TlsFront());
  front->options_ = options;
  front->context_ = std::make_unique<Context>();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status::IoError("TLS: " + OpenSslError());
  front->context_->ctx = ctx;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
    return Status::InvalidArgument("--tls-cert '" + options.cert_file + "': " + OpenSslError());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Status::InvalidArgument("--tls-key '" + options.key_file + "': " + OpenSslError());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Status::InvalidArgument("--tls-key '" + options.key_file +
                                   "' is not the key of --tls-cert '" + options.cert_file + "'");
  }
  SSL_CTX_set_alpn_select_cb(ctx, SelectH2, nullptr);
  return front;
}

TlsFront::~TlsFront() {
  UniqueLock lock(mutex_);
  closing_ = true;
  for (int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
  while (relays_ != 0) relays_done_.wait(lock.native());
}

void TlsFront::StopAdopting() {
  MutexLock lock(mutex_);
  adopting_ = false;
}

void TlsFront::Adopt(int fd, grpc::Server* server) {
  {
    MutexLock lock(mutex_);
    if (closing_ || !adopting_ || relays_ >= options_.max_relays) {
      if (!closing_ && adopting_) ++refused_;
      ::close(fd);
      return;
    }
    ++relays_;
    sockets_.insert(fd);
  }
  std::thread([this, fd, server] {
    // A write to a socket the peer closed raises SIGPIPE for this thread; blocked, it only
    // fails the write.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Relay(fd, server);
  }).detach();
}

void TlsFront::Relay(int client, grpc::Server* server) {
  SSL* ssl = SSL_new(context_->ctx);
  int plain = -1;
  bool handshaken = false;
  if (ssl != nullptr && SSL_set_fd(ssl, client) == 1) {
    handshaken = Handshake(ssl, client, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                           std::chrono::duration<double>(
                                                               options_.handshake_timeout.value())));
  }
  int pair[2] = {-1, -1};
  {
    MutexLock lock(mutex_);
    if (!adopting_) handshaken = false;  // the server is shutting down: no new connection
  }
  if (handshaken && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0) {
    plain = pair[1];
    {
      MutexLock lock(mutex_);
      if (closing_) {
        ::shutdown(plain, SHUT_RDWR);
      }
      sockets_.insert(plain);
    }
    const int flags = ::fcntl(pair[0], F_GETFL);
    ::fcntl(pair[0], F_SETFL, flags | O_NONBLOCK);
    grpc::AddInsecureChannelFromFd(server, pair[0]);  // gRPC owns pair[0] from here
    SetBlockingWithTimeouts(client, options_.io_timeout);
    SetBlockingWithTimeouts(plain, options_.io_timeout);
    // ---- Copy both ways until either side ends ----
    char buffer[16384];
    while (true) {
      if (SSL_pending(ssl) == 0) {
        pollfd fds[2] = {{client, POLLIN, 0}, {plain, POLLIN, 0}};
        const int n = ::poll(fds, 2, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          const ssize_t got = ::read(plain, buffer, sizeof buffer);
          if (got <= 0 || !SslWriteAll(ssl, buffer, static_cast<int>(got))) break;
        }
        if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      }
      ERR_clear_error();
      const int got = SSL_read(ssl, buffer, sizeof buffer);
      if (got <= 0) {
        // Only part of a record, or a post-handshake message: wait for more (a stall ends
        // when gRPC drops the idle connection, closing `plain`).
        if (SSL_get_error(ssl, got) == SSL_ERROR_WANT_READ) continue;
        break;
      }
      if (!WriteAll(plain, buffer, static_cast<std::size_t>(got))) break;
    }
    SSL_shutdown(ssl);
  }
  if (ssl != nullptr) SSL_free(ssl);
  {
    MutexLock lock(mutex_);
    sockets_.erase(client);
    if (plain >= 0) sockets_.erase(plain);
  }
  ::close(client);
  if (plain >= 0) ::close(plain);
  MutexLock lock(mutex_);
  if (!handshaken) ++handshakes_failed_;
  --relays_;
  relays_done_.notify_all();
}

std::uint64_t TlsFront::handshakes_failed() const {
  MutexLock lock(mutex_);
  return handshakes_failed_;
}

std::uint64_t TlsFront::refused() const {
  MutexLock lock(mutex_);
  return refused_;
}

}  // namespace gavel::rpc
