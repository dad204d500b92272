// Tests of the runtime HTTP server (cpp-httplib) behind the iterator endpoint and metrics.
#include "gavel/rpc/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <future>
#include <thread>

#include "gavel/rpc/http_test_util.h"

namespace gavel::rpc {
namespace {

using ::testing::HasSubstr;
using testing::BodyOf;
using testing::RawExchange;
using ::testing::StartsWith;

std::unique_ptr<HttpServer> Echo() {
  auto server = HttpServer::Start({}, [](const HttpRequest& request) {
    HttpResponse response;
    response.content_type = "text/plain";
    response.body = request.method + " " + request.target + " [" + request.body +
                    "] x=" + request.Header("x-test").value_or("-");
    return response;
  });
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return std::move(server).value();
}

TEST(HttpServerTest, AnswersAPostOnLoopback) {
  auto server = Echo();
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->url(), "http://127.0.0.1:" + std::to_string(server->port()));
  const std::string response = RawExchange(
      server->port(),
      "POST /a/b HTTP/1.1\r\nX-Test: yes\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(response, HasSubstr("Content-Length: 23\r\n"));
  EXPECT_THAT(response, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(testing::BodyOf(response), "POST /a/b [hello] x=yes");
}

// A client socket kept open across requests: each request is sent after the previous answer
// (cpp-httplib does not read pipelined requests ahead).
class Connection {
 public:
  explicit Connection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Connection() { ::close(fd_); }
  bool connected() const { return connected_; }
  // Sends `raw` and reads one response framed by its Content-Length ("" on EOF or timeout).
  std::string Exchange(const std::string& raw) {
    if (::send(fd_, raw.data(), raw.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(raw.size()))
      return "";
    std::string in;
    char buffer[4096];
    while (true) {
      const std::size_t head = in.find("\r\n\r\n");
      if (head != std::string::npos) {
        const std::size_t at = in.find("Content-Length: ");
        const std::size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
        if (in.size() >= head + 4 + length) return in;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) return "";
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return "";
      in.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

TEST(HttpServerTest, KeepsTheConnectionAliveForSeveralRequests) {
  auto server = Echo();
  Connection connection(server->port());
  ASSERT_TRUE(connection.connected());
  EXPECT_EQ(BodyOf(connection.Exchange("POST /1 HTTP/1.1\r\nContent-Length: 1\r\n\r\na")),
            "POST /1 [a] x=-");
  EXPECT_EQ(BodyOf(connection.Exchange("POST /2 HTTP/1.1\r\nContent-Length: 2\r\n\r\nbb")),
            "POST /2 [bb] x=-");
  const std::string last = connection.Exchange(
      "POST /3 HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(last, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(BodyOf(last), "POST /3 [] x=-");
}

TEST(HttpServerTest, RefusesMalformedRequestsWithClearStatuses) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  auto started = HttpServer::Start(options, [](const HttpRequest& request) {
    return HttpResponse{200, "text/plain", request.target};
  });
  ASSERT_TRUE(started.ok());
  const int port = (*started)->port();
  constexpr int kWaitMs = 300;  // refused connections may stay open until the idle timeout
  const std::string bad_request = "HTTP/1.1 400 Bad Request\r\n";
  for (const std::string raw : {"garbage\r\n\r\n", "POST / HTTP/2.0\r\n\r\n"}) {
    const std::string response = RawExchange(port, raw, kWaitMs);
    EXPECT_THAT(response, StartsWith(bad_request)) << raw;
    EXPECT_EQ(BodyOf(response), "{\"error\": \"400 Bad Request\"}") << raw;
  }
  const std::string too_large = RawExchange(
      port, "POST / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n" + std::string(2000, 'x'), kWaitMs);
  EXPECT_THAT(too_large, StartsWith("HTTP/1.1 413 Payload Too Large\r\n"));
  EXPECT_THAT(BodyOf(too_large), HasSubstr("413 Payload Too Large"));
  // Headers that cannot be parsed: the library drops the connection without an answer; what
  // matters is that no handler sees the request.
  EXPECT_THAT(RawExchange(port, "POST / HTTP/1.1\r\nno colon here\r\n\r\n", kWaitMs),
              ::testing::Not(HasSubstr(" 200 OK")));
  EXPECT_THAT(RawExchange(port, "POST / HTTP/1.1\r\nX: " + std::string(20000, 'a'), kWaitMs),
              ::testing::Not(HasSubstr(" 200 OK")));
  // Still serving.
  EXPECT_EQ(BodyOf(RawExchange(port, "POST /ok HTTP/1.0\r\nContent-Length: 0\r\n\r\n")), "/ok");
}

TEST(HttpServerTest, AcceptsAChunkedBody) {
  auto server = Echo();
  EXPECT_EQ(BodyOf(RawExchange(server->port(),
                               "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                               "Connection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")),
            "POST /c [abcde] x=-");
}

TEST(HttpServerTest, AHandlerThatThrowsGets500WithTheMessage) {
  auto server = HttpServer::Start({}, [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("boom");
  });
  ASSERT_TRUE(server.ok());
  const std::string response = testing::Post((*server)->port(), "/x", "");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 500"));
  EXPECT_EQ(BodyOf(response), "{\"error\": \"internal error: boom\"}");
}

TEST(HttpServerTest, ListensOnLoopbackOnly) {
  HttpServerOptions options;
  options.host = "0.0.0.0";
  const auto server = HttpServer::Start(options, [](const HttpRequest&) { return HttpResponse{}; });
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("only loopback"));
  options.allow_remote = true;  // the metrics port
  EXPECT_TRUE(HttpServer::Start(options, [](const HttpRequest&) { return HttpResponse{}; }).ok());
}

// The threads of this process (Linux).
std::size_t ThreadCount() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++count;
  return count;
}

// A local process that opens many connections and sends nothing must
// neither make the server start a thread per connection without bound nor keep a real request
// waiting for longer than about the idle timeout.
TEST(HttpServerTest, IdleConnectionsAreBoundedInThreadsAndInTheDelayTheyCause) {
  HttpServerOptions options;
  options.max_connections = 4;
  options.idle_timeout = Seconds(1.0);
  auto started = HttpServer::Start(options, [](const HttpRequest& request) {
    return HttpResponse{200, "text/plain", request.target};
  });
  ASSERT_TRUE(started.ok());
  const int port = (*started)->port();
  const std::size_t threads_before = ThreadCount();
  std::vector<std::unique_ptr<Connection>> idle;
  for (int i = 0; i < 16; ++i) {
    idle.push_back(std::make_unique<Connection>(port));
    ASSERT_TRUE(idle.back()->connected());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(ThreadCount(), threads_before + 4);
  // 16 idle connections queued ahead of it on 4 threads: each thread frees after ~1 s of
  // idleness, so the request is served after about 16 / 4 = 4 idle timeouts at most (plus
  // slack); with one thread per connection and no idle limit it would wait forever.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(BodyOf(RawExchange(port,
                               "POST /progress HTTP/1.1\r\nContent-Length: 0\r\n"
                               "Connection: close\r\n\r\n",
                               8000)),
            "/progress");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(7));
  EXPECT_LE(ThreadCount(), threads_before + 4);
}

TEST(HttpServerTest, ABlockedHandlerDoesNotBlockOtherConnections) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto server = HttpServer::Start({}, [released](const HttpRequest& request) {
    if (request.target == "/block") released.wait();
    return HttpResponse{200, "text/plain", request.target};
  });
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  auto blocked =
      std::async(std::launch::async, [port] { return testing::Post(port, "/block", ""); });
  EXPECT_EQ(testing::BodyOf(testing::Post(port, "/free", "")), "/free");
  EXPECT_EQ(blocked.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(testing::BodyOf(blocked.get()), "/block");
}

TEST(HttpServerTest, StopsPromptlyWithIdleConnectionsOpen) {
  auto server = Echo();
  const int port = server->port();
  // An idle keep-alive connection, left open.
  std::thread idle(
      [port] { RawExchange(port, "POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 3000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  server->Stop();
  // Idle keep-alive connections notice within the idle timeout (2 s by default).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  idle.join();
}

}  // namespace
}  // namespace gavel::rpc
