// HttpServer: the runtime's HTTP/1.1 server, on Debian's cpp-httplib (libcpp-httplib-dev), for
// the agent's iterator endpoint (iterator.proto: proto3 JSON over POST, so that a training
// script needs nothing but the Python standard library) and the daemon's metrics and dashboard.
//
// What it speaks: whatever cpp-httplib parses (request line, headers, a body framed by
// Content-Length or chunked, keep-alive per HTTP/1.1 or "Connection: close"). Requests it
// cannot parse get its 4xx status (400 malformed, 413 body over max_body_bytes, 414 target too
// long) with a body {"error": "<reason>"}; a handler that throws gets 500 with the message.
// Every request, any method and any target, goes to the one handler.
//
// Connections and threads (bounded): each connection is served by one thread, because a
// handler may block for a long time (a held Done waits for the next round). At most
// max_connections threads exist; connections beyond that wait, in arrival order, for a thread.
// A connection gives its thread back when it is idle for idle_timeout (no new request, or a
// request that stalls mid-way), so a process that holds connections open without using them
// delays others by at most about idle_timeout, never indefinitely: what it can hold for long
// are only requests that a handler holds (Done calls, at most one per process that the agent
// runs). Wait bounds are in whole seconds (cpp-httplib's keep-alive timer).
//
// Ownership: the server owns its socket and threads; the handler is called concurrently from
// connection threads and must outlive the server. Stop() (also run by the destructor) closes
// the listener and joins all threads; it takes up to idle_timeout for idle keep-alive
// connections to notice, and handlers that block must be released by their owner first
// (Agent::BeginShutdown answers held Done calls).
// Thread-safety: port(), url() and Stop() may be called from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/core/units.h"

namespace httplib {
class Server;
}

namespace gavel::rpc {

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
  // Loopback (127.0.0.1 or ::1) unless allow_remote: the iterator endpoint is for local
  // processes only; the metrics port may be scraped from elsewhere.
  std::string host = "127.0.0.1";
  bool allow_remote = false;
  int port = 0;              // 0 = pick a free one (read it back with port())
  int max_connections = 64;  // connection threads; more connections wait for one
  std::size_t max_body_bytes = 1 << 20;
  // An idle connection (no request, or a request that stalls) is closed after this long.
  // Rounded up to whole seconds, at least 1.
  Seconds idle_timeout{2.0};
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
  HttpServer(HttpServerOptions options, std::unique_ptr<httplib::Server> server, int port);

  const HttpServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  const int port_;
  std::thread listen_thread_;
  std::once_flag stop_once_;
};

// The reason phrase of an HTTP status code ("OK", "Not Found", ...).
const char* HttpReason(int status);

}  // namespace gavel::rpc
