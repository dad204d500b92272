// HttpServer: a minimal HTTP/1.1 server on a loopback address, enough for the iterator
// endpoint (iterator.proto: proto3 JSON over POST), so that a training script needs nothing
// but the Python standard library to reach its agent.
//
// What it speaks: request line + headers (at most 16 KiB), a body framed by Content-Length
// (chunked bodies are refused with 411), keep-alive per HTTP/1.1 (or "Connection: close").
// Anything else malformed is answered 400 and the connection closed. One thread per
// connection (at most max_connections; more are answered 503), because a handler may block
// for a long time (a held Done waits for the next round).
//
// Ownership: the server owns its sockets and threads; the handler is called concurrently from
// connection threads and must outlive the server. Stop() (also run by the destructor) closes
// the listener, shuts every connection down and joins all threads; handlers that block must
// be released by their owner first (Agent::BeginShutdown answers held Done calls).
// Thread-safety: port(), url() and Stop() may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"

namespace gavel::agent {

struct HttpRequest {
  std::string method;                                        // "POST"
  std::string target;                                        // "/gavel.wire.Iterator/Init"
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  // The value of header `name` (lower case), if present.
  std::optional<std::string> Header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // loopback only: 127.0.0.1 or ::1
  int port = 0;                    // 0 = pick a free one (read it back with port())
  int max_connections = 64;
  std::size_t max_body_bytes = 1 << 20;
  Seconds idle_timeout{300.0};  // a keep-alive connection with no request for this long is closed
};

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, HttpHandler handler);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" (or "http://[::1]:<port>").
  std::string url() const;
  void Stop();

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  HttpServer(HttpServerOptions options, HttpHandler handler, int listen_fd, int wake_fd, int port);
  void AcceptLoop();
  void Serve(Connection* connection);
  void ReapFinished() GAVEL_REQUIRES(mu_);

  const HttpServerOptions options_;
  const HttpHandler handler_;
  int listen_fd_;
  int wake_fd_;  // an eventfd that ends the accept loop
  const int port_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  Mutex mu_;
  std::list<Connection> connections_ GAVEL_GUARDED_BY(mu_);
  std::once_flag stop_once_;
};

// The reason phrase of an HTTP status code ("OK", "Not Found", ...).
const char* HttpReason(int status);

}  // namespace gavel::agent
