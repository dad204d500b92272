#include "gavel/agent/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>

namespace gavel::agent {
namespace {

constexpr std::size_t kMaxHeaderBytes = 16 * 1024;

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string Trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

bool SendAll(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::string Serialize(const HttpResponse& response, bool keep_alive) {
  std::string out =
      "HTTP/1.1 " + std::to_string(response.status) + " " + HttpReason(response.status) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  out += response.body;
  return out;
}

HttpResponse ErrorResponse(int status, const std::string& message) {
  HttpResponse response;
  response.status = status;
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped.push_back('\\');
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped.push_back(c);
  }
  response.body = "{\"error\": \"" + escaped + "\"}";
  return response;
}

// Waits until fd is readable; false on timeout or error.
bool WaitReadable(int fd, Seconds timeout) {
  pollfd p{fd, POLLIN, 0};
  const int ms = static_cast<int>(std::min(timeout.value() * 1000.0, 2.0e9));
  while (true) {
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
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
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
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
  if (options.host != "127.0.0.1" && !v6) {
    return Status::InvalidArgument("HTTP listen address '" + options.host +
                                   "': only loopback (127.0.0.1 or ::1) is allowed");
  }
  if (options.port < 0 || options.port > 65535) {
    return Status::InvalidArgument("HTTP port " + std::to_string(options.port) +
                                   " is out of range");
  }
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int bound = -1;
  if (v6) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_loopback;
    addr.sin6_port = htons(static_cast<std::uint16_t>(options.port));
    bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(options.port));
    bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (bound != 0 || ::listen(fd, 128) != 0) {
    const std::string error = std::strerror(errno);
    ::close(fd);
    return Status::IoError("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                           ": " + error);
  }
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  const int port = v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    ::close(fd);
    return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  }
  return std::unique_ptr<HttpServer>(
      new HttpServer(std::move(options), std::move(handler), fd, wake, port));
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler, int listen_fd, int wake_fd,
                       int port)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port) {
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

HttpServer::~HttpServer() { Stop(); }

std::string HttpServer::url() const {
  return options_.host == "::1" ? "http://[::1]:" + std::to_string(port_)
                                : "http://127.0.0.1:" + std::to_string(port_);
}

void HttpServer::Stop() {
  std::call_once(stop_once_, [this] {
    stopping_ = true;
    const std::uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    (void)ignored;
    accept_thread_.join();
    ::close(listen_fd_);
    ::close(wake_fd_);
    // No new connections can appear (the accept loop is gone): take the list out, then join
    // without the lock (the connection threads take it to mark themselves finished; list
    // nodes keep their addresses when moved).
    std::list<Connection> connections;
    {
      MutexLock lock(mu_);
      for (Connection& connection : connections_) {
        if (connection.fd >= 0) ::shutdown(connection.fd, SHUT_RDWR);
      }
      connections.swap(connections_);
    }
    for (Connection& connection : connections) connection.thread.join();
  });
}

void HttpServer::ReapFinished() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->finished) {
      it->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void HttpServer::AcceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int r = ::poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    MutexLock lock(mu_);
    ReapFinished();
    if (connections_.size() >= static_cast<std::size_t>(options_.max_connections)) {
      SendAll(fd, Serialize(ErrorResponse(503, "too many connections"), false));
      ::close(fd);
      continue;
    }
    Connection& connection = connections_.emplace_back();
    connection.fd = fd;
    connection.thread = std::thread([this, c = &connection] { Serve(c); });
  }
}

void HttpServer::Serve(Connection* connection) {
  const int fd = connection->fd;
  std::string buffer;
  char chunk[8192];
  // Reads more bytes into `buffer`; false on EOF, error or timeout.
  auto read_more = [&]() {
    if (!WaitReadable(fd, options_.idle_timeout)) return false;
    while (true) {
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  };
  auto reply_and_close = [&](int status, const std::string& message) {
    SendAll(fd, Serialize(ErrorResponse(status, message), false));
  };

  // Serves one request; false when the connection is to be closed.
  auto serve_one = [&]() -> bool {
    // ---- Headers ----
    std::size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (buffer.size() > kMaxHeaderBytes) {
        reply_and_close(431, "request headers exceed 16 KiB");
        return false;
      }
      if (!read_more()) return false;
    }
    {
      HttpRequest request;
      const std::string head = buffer.substr(0, header_end);
      std::size_t line_end = head.find("\r\n");
      const std::string request_line = head.substr(0, line_end);
      const std::size_t sp1 = request_line.find(' ');
      const std::size_t sp2 = sp1 == std::string::npos ? sp1 : request_line.find(' ', sp1 + 1);
      if (sp1 == std::string::npos || sp2 == std::string::npos) {
        reply_and_close(400, "malformed request line");
        return false;
      }
      request.method = request_line.substr(0, sp1);
      request.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
      const std::string version = request_line.substr(sp2 + 1);
      if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        reply_and_close(400, "unsupported HTTP version '" + version + "'");
        return false;
      }
      while (line_end != std::string::npos) {
        const std::size_t begin = line_end + 2;
        line_end = head.find("\r\n", begin);
        const std::string line = head.substr(
            begin, line_end == std::string::npos ? std::string::npos : line_end - begin);
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos || colon == 0) {
          reply_and_close(400, "malformed header line");
          return false;
        }
        request.headers.emplace_back(Lower(Trim(line.substr(0, colon))),
                                     Trim(line.substr(colon + 1)));
      }
      if (request.Header("transfer-encoding")) {
        reply_and_close(411, "chunked bodies are not supported: send Content-Length");
        return false;
      }
      std::size_t content_length = 0;
      if (const auto value = request.Header("content-length")) {
        if (value->empty() || value->size() > 12 ||
            !std::all_of(value->begin(), value->end(),
                         [](unsigned char c) { return std::isdigit(c); })) {
          reply_and_close(400, "malformed Content-Length '" + *value + "'");
          return false;
        }
        content_length = std::stoull(*value);
      }
      if (content_length > options_.max_body_bytes) {
        reply_and_close(413, "body of " + std::to_string(content_length) +
                                 " bytes exceeds the limit of " +
                                 std::to_string(options_.max_body_bytes));
        return false;
      }
      // ---- Body ----
      while (buffer.size() < header_end + 4 + content_length) {
        if (!read_more()) return false;
      }
      request.body = buffer.substr(header_end + 4, content_length);
      buffer.erase(0, header_end + 4 + content_length);

      const std::string connection_header = Lower(request.Header("connection").value_or(""));
      const bool keep_alive =
          version == "HTTP/1.1" ? connection_header != "close" : connection_header == "keep-alive";
      HttpResponse response;
      try {
        response = handler_(request);
      } catch (const std::exception& e) {
        response = ErrorResponse(500, std::string("internal error: ") + e.what());
      }
      return SendAll(fd, Serialize(response, keep_alive)) && keep_alive;
    }
  };
  while (!stopping_ && serve_one()) {
  }
  {
    MutexLock lock(mu_);
    ::close(fd);
    connection->fd = -1;
  }
  connection->finished = true;
}

}  // namespace gavel::agent
