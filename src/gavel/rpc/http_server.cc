#include "gavel/rpc/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>

#include "gavel/core/mutex.h"

namespace gavel::rpc {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string JsonError(const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped.push_back('\\');
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped.push_back(c);
  }
  return "{\"error\": \"" + escaped + "\"}";
}

// cpp-httplib's task queue, replaced: one thread per connection as long as there are fewer
// than `limit` of them (its own pool has a fixed, small size, and a few held Done calls would
// starve everyone else), the rest wait in arrival order. Threads are started on demand and
// kept until shutdown (at most `limit`), so nothing needs reaping.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(std::size_t limit) : limit_(limit) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(fn));
    if (idle_ == 0 && threads_.size() < limit_) {
      threads_.emplace_back([this] { Work(); });
    } else {
      wake_.notify_one();
    }
  }

  // Called by the listener once it stops accepting: the queued connections still run (they
  // see the closed listener and close at once), then every thread ends.
  void shutdown() override {
    std::vector<std::thread> threads;
    {
      MutexLock lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    wake_.notify_all();
    for (std::thread& thread : threads) thread.join();
  }

 private:
  void Work() {
    UniqueLock lock(mu_);
    while (true) {
      while (tasks_.empty() && !stopping_) {
        ++idle_;
        wake_.wait(lock.native());
        --idle_;
      }
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.native().unlock();
      task();
      lock.native().lock();
    }
  }

  const std::size_t limit_;
  Mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_ GAVEL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GAVEL_GUARDED_BY(mu_);
  std::size_t idle_ GAVEL_GUARDED_BY(mu_) = 0;
  bool stopping_ GAVEL_GUARDED_BY(mu_) = false;
};

HttpRequest FromLibrary(const httplib::Request& in) {
  HttpRequest out;
  out.method = in.method;
  out.target = in.target;
  for (const auto& [name, value] : in.headers) out.headers.emplace_back(Lower(name), value);
  out.body = in.body;
  return out;
}

}  // namespace

const char* HttpReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 416:
      return "Range Not Satisfiable";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

std::optional<std::string> HttpRequest::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                      HttpHandler handler) {
  const bool v6 = options.host == "::1";
  if (!options.allow_remote && options.host != "127.0.0.1" && !v6) {
    return Status::InvalidArgument("HTTP listen address '" + options.host +
                                   "': only loopback (127.0.0.1 or ::1) is allowed");
  }
  if (options.port < 0 || options.port > 65535) {
    return Status::InvalidArgument("HTTP port " + std::to_string(options.port) +
                                   " is out of range");
  }
  if (options.max_connections < 1) {
    return Status::InvalidArgument("HTTP max_connections must be at least 1");
  }
  auto server = std::make_unique<httplib::Server>();
  const auto limit = static_cast<std::size_t>(options.max_connections);
  server->new_task_queue = [limit] { return new ConnectionThreads(limit); };
  const auto idle = static_cast<time_t>(std::max(1.0, std::ceil(options.idle_timeout.value())));
  server->set_keep_alive_timeout(idle);
  server->set_read_timeout(idle, 0);
  server->set_write_timeout(idle, 0);
  server->set_keep_alive_max_count(1000);
  server->set_payload_max_length(options.max_body_bytes);
  // Every method and target reaches the handler, which owns the answers (404, 405, ...).
  auto route = [handler](const httplib::Request& request, httplib::Response& response) {
    HttpResponse answer = handler(FromLibrary(request));
    response.status = answer.status;
    response.set_content(answer.body, answer.content_type);
  };
  server->Get(".*", route);
  server->Post(".*", route);
  server->Put(".*", route);
  server->Patch(".*", route);
  server->Delete(".*", route);
  server->Options(".*", route);
  // The library's own refusals (unparsable request, body too large, ...) carry no body: say
  // what was refused, in the same JSON shape as the handlers' errors.
  server->set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& response) {
    if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    response.set_content(JsonError(std::to_string(response.status) + " " +
                                   HttpReason(response.status)),
                         "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  server->set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        response.status = 500;
        response.set_content(JsonError("internal error: " + what), "application/json");
      });
  const int port = options.port == 0 ? server->bind_to_any_port(options.host)
                                     : (server->bind_to_port(options.host, options.port)
                                            ? options.port
                                            : -1);
  if (port <= 0) {
    return Status::IoError("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                           " (address in use or not local)");
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(options), std::move(server), port));
}

HttpServer::HttpServer(HttpServerOptions options, std::unique_ptr<httplib::Server> server,
                       int port)
    : options_(std::move(options)), server_(std::move(server)), port_(port) {
  listen_thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing before the listener runs: wait for it, so that a Stop()
  // right after Start() cannot leave the listen thread behind.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

HttpServer::~HttpServer() { Stop(); }

std::string HttpServer::url() const {
  const std::string host = options_.host.find(':') != std::string::npos ? "[" + options_.host + "]"
                                                                        : options_.host;
  return "http://" + host + ":" + std::to_string(port_);
}

void HttpServer::Stop() {
  std::call_once(stop_once_, [this] {
    server_->stop();
    listen_thread_.join();
  });
}

}  // namespace gavel::rpc
