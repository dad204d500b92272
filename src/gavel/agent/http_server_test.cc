// Tests of the minimal HTTP/1.1 server behind the iterator endpoint.
#include "gavel/agent/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "gavel/agent/http_test_util.h"

namespace gavel::agent {
namespace {

using ::testing::HasSubstr;
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

TEST(HttpServerTest, KeepsTheConnectionAliveForSeveralRequests) {
  auto server = Echo();
  const std::string response =
      RawExchange(server->port(),
                  "POST /1 HTTP/1.1\r\nContent-Length: 1\r\n\r\na"
                  "POST /2 HTTP/1.1\r\nContent-Length: 2\r\n\r\nbb"
                  "POST /3 HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(response, HasSubstr("POST /1 [a]"));
  EXPECT_THAT(response, HasSubstr("POST /2 [bb]"));
  EXPECT_THAT(response, HasSubstr("POST /3 []"));
}

TEST(HttpServerTest, RefusesMalformedRequestsWithClearStatuses) {
  auto server = Echo();
  EXPECT_THAT(RawExchange(server->port(), "garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(RawExchange(server->port(), "POST / HTTP/2.0\r\n\r\n"),
              HasSubstr("unsupported HTTP version"));
  EXPECT_THAT(RawExchange(server->port(), "POST / HTTP/1.1\r\nno colon here\r\n\r\n"),
              HasSubstr("malformed header line"));
  EXPECT_THAT(RawExchange(server->port(), "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"),
              HasSubstr("malformed Content-Length"));
  EXPECT_THAT(RawExchange(server->port(), "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
              StartsWith("HTTP/1.1 411"));
  EXPECT_THAT(RawExchange(server->port(), "POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n"),
              StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(RawExchange(server->port(), "POST / HTTP/1.1\r\nX: " + std::string(20000, 'a')),
              StartsWith("HTTP/1.1 431"));
  // Still serving.
  EXPECT_THAT(RawExchange(server->port(), "POST /ok HTTP/1.0\r\nContent-Length: 0\r\n\r\n"),
              HasSubstr("POST /ok"));
}

TEST(HttpServerTest, ListensOnLoopbackOnly) {
  HttpServerOptions options;
  options.host = "0.0.0.0";
  const auto server = HttpServer::Start(options, [](const HttpRequest&) { return HttpResponse{}; });
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("only loopback"));
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
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  idle.join();
}

}  // namespace
}  // namespace gavel::agent
