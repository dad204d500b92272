// Fuzz target for the agent's iterator endpoint (agent/http_server.h + iterator_endpoint.h):
// what a training job, or anything else on the host, can send to the agent's loopback port.
// The first byte picks the path:
//  * even: the rest is a raw byte stream sent to a real HttpServer (request line, headers,
//    Content-Length framing, keep-alive), the write side then shut, the answer read to EOF;
//  * odd: the rest is the proto3 JSON body of a POST to Init, Progress or Done (next byte),
//    handed straight to the handler, which is faster and reaches the JSON parser more often.
// The agent runs no job, so every well-formed call ends in 404 at once (a Done for a running
// job would be held until the next round). The server and agent live for the whole process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gavel/agent/fakes.h"
#include "gavel/agent/http_server.h"
#include "gavel/agent/iterator_endpoint.h"

namespace {

using namespace gavel::agent;

struct Endpoint {
  gavel::ManualClock clock{testing::kTestClockStart};
  testing::FakeSchedulerClient scheduler;
  testing::FakeProcessLauncher launcher;
  std::unique_ptr<Agent> agent;
  HttpHandler handler;
  std::unique_ptr<HttpServer> server;

  Endpoint() {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("gavel_fuzz_endpoint_" + std::to_string(::getpid()));
    AgentOptions options;
    options.agent_id = "agent-fuzz";
    options.gpu_type = "k80";
    options.log_dir = (dir / "logs").string();
    options.checkpoint_root = (dir / "ckpt").string();
    options.run_dir = dir.string();
    options.log = [](const std::string&) {};
    agent = std::make_unique<Agent>(options, &scheduler, &launcher, &clock);
    agent->Tick();  // registers
    handler = MakeIteratorHandler(agent.get());
    HttpServerOptions server_options;
    server_options.idle_timeout = gavel::Seconds(2.0);
    auto started = HttpServer::Start(server_options, handler);
    if (!started.ok()) std::abort();
    server = std::move(started).value();
  }
};

Endpoint& TheEndpoint() {
  static Endpoint* endpoint = new Endpoint();  // lives until exit; the server's threads too
  return *endpoint;
}

void SendRaw(int port, const std::string& raw) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  // libFuzzer's -timeout arms a SIGALRM every second or so: any blocking call here may return
  // EINTR, which is no failure of the server (the cause of this target's intermittent
  // "no answer" aborts in the smoke runs).
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINTR) std::abort();
    pollfd w{fd, POLLOUT, 0};
    while (::poll(&w, 1, 8000) < 0 && errno == EINTR) {
    }
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) std::abort();
  }
  std::size_t sent = 0;
  while (sent < raw.size()) {
    const ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  char buffer[4096];
  // The server closes at EOF, or once a stalled read and the keep-alive wait have run out
  // (each idle_timeout, 2 s, in whole seconds); 8 s without an answer is a hang worth
  // reporting (libFuzzer's -timeout in fuzz-smoke.sh is 10 s).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) std::abort();
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) std::abort();
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  Endpoint& endpoint = TheEndpoint();
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    SendRaw(endpoint.server->port(), rest);
    return 0;
  }
  static const char* const kMethods[] = {"Init", "Progress", "Done", "Nope"};
  HttpRequest request;
  request.method = "POST";
  request.target = std::string("/gavel.wire.Iterator/") + kMethods[data[1] % 4];
  request.headers.emplace_back("authorization", "Bearer fuzz-token-123");
  request.body = rest.substr(1);
  const HttpResponse response = endpoint.handler(request);
  if (response.status == 200) std::abort();  // the agent runs no job: nothing can succeed
  return 0;
}
