// TLS terminated by the TlsFront behind the GuardedListener (ServeGrpc with --tls-cert/key),
// against real gRPC clients on loopback with certificates the openssl CLI makes: TLS calls
// are served, plaintext and foreign-CA clients are refused, and the idle-connection guard now
// holds on the TLS port too — silent connections are closed after the timeout, a client that
// starts a handshake and stalls is dropped, and with descriptors short a flood of silent
// connections evicts itself while a TLS client is served (gRPC's own TLS port had no guard).
#include "gavel/rpc/tls_front.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "gavel/rpc/socket_test_util.h"
#include "gavel/rpc/tls.h"
#include "gavel/wire/scheduler.grpc.pb.h"

namespace gavel::rpc {
namespace {

namespace fs = std::filesystem;

class StatusService final : public wire::Scheduler::Service {
  grpc::Status GetStatus(grpc::ServerContext*, const wire::GetStatusRequest*,
                         wire::GetStatusResponse* response) override {
    response->set_policy("served");
    return grpc::Status::OK;
  }
};

// A CA and a certificate it signed for 127.0.0.1: NAME.pem, NAME.key, CA.pem in `dir`.
bool MakeCertificates(const std::string& dir, const std::string& ca, const std::string& name) {
  std::ofstream(dir + "/san.ext") << "subjectAltName=IP:127.0.0.1\n";
  const std::string q = " >>" + dir + "/openssl.log 2>&1";
  for (const std::string& command : {
           "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/" + ca + ".key -out " +
               dir + "/" + ca + ".pem -days 1 -subj /CN=" + ca + q,
           "openssl req -newkey rsa:2048 -nodes -keyout " + dir + "/" + name + ".key -out " + dir +
               "/" + name + ".csr -subj /CN=127.0.0.1" + q,
           "openssl x509 -req -in " + dir + "/" + name + ".csr -CA " + dir + "/" + ca +
               ".pem -CAkey " + dir + "/" + ca + ".key -CAcreateserial -days 1 -extfile " + dir +
               "/san.ext -out " + dir + "/" + name + ".pem" + q}) {
    if (std::system(command.c_str()) != 0) return false;
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class TlsFrontTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "openssl is absent (Debian package openssl)";
    }
    std::string pattern = (fs::temp_directory_path() / "gavel_tls_front_XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    ASSERT_TRUE(MakeCertificates(dir_, "ca", "node")) << ReadFile(dir_ + "/openssl.log");
    ASSERT_TRUE(MakeCertificates(dir_, "other-ca", "impostor")) << ReadFile(dir_ + "/openssl.log");
  }
  void Serve(Seconds handshake_timeout) {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    ServerLimits limits;
    limits.handshake_timeout = handshake_timeout;
    ApplyServerLimits(&builder, limits);
    Result<ServingGrpc> serving =
        ServeGrpc(builder, HostPort{"127.0.0.1", 0},
                  ServerTlsFiles{dir_ + "/node.pem", dir_ + "/node.key"}, limits);
    ASSERT_TRUE(serving.ok()) << serving.status().ToString();
    serving_ = *std::move(serving);
    ASSERT_NE(serving_.listener, nullptr) << "the TLS port has the guarded listener";
  }
  void TearDown() override {
    if (serving_.listener) serving_.listener->Stop();
    if (serving_.server) serving_.server->Shutdown(std::chrono::system_clock::now());
    serving_.listener.reset();
    serving_.server.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // A call on a fresh channel: over TLS trusting `ca` ("" = plaintext).
  bool Served(const std::string& ca) const {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    Result<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(ca.empty() ? "" : dir_ + "/" + ca + ".pem");
    EXPECT_TRUE(credentials.ok());
    auto stub = wire::Scheduler::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(serving_.port), *credentials, args));
    grpc::ClientContext context;
    PrepareContext(&context, Seconds(3.0), "");
    wire::GetStatusResponse response;
    return stub->GetStatus(&context, wire::GetStatusRequest(), &response).ok() &&
           response.policy() == "served";
  }
  std::vector<int> Connections(int n, const std::string& first_bytes = "") const {
    return testing::LoopbackConnections(serving_.port, n, first_bytes);
  }

  std::string dir_;
  StatusService service_;
  ServingGrpc serving_;
};

TEST_F(TlsFrontTest, ServesTlsAndRefusesPlaintextAndForeignCertificates) {
  Serve(Seconds(10.0));
  EXPECT_TRUE(Served("ca"));
  EXPECT_FALSE(Served(""));
  EXPECT_FALSE(Served("other-ca"));
  EXPECT_TRUE(Served("ca"));
  // Several calls at once, each on its own connection and relay.
  std::vector<std::thread> callers;
  std::atomic<int> served{0};
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] { served += Served("ca") ? 1 : 0; });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(served.load(), 8);
}

TEST_F(TlsFrontTest, SilentAndStalledHandshakesAreClosedAndCallsServedMeanwhile) {
  Serve(Seconds(0.5));
  std::vector<int> idle = Connections(100);
  // A TLS record header promising a ClientHello that never comes: handed to the front (the
  // client spoke), whose handshake deadline ends it.
  std::vector<int> stalled = Connections(20, std::string("\x16\x03\x01\x02\x00", 5));
  EXPECT_TRUE(Served("ca"));
  int closed = 0;
  for (int fd : idle) {
    closed += testing::ClosedByPeer(fd, 5) ? 1 : 0;
    ::close(fd);
  }
  for (int fd : stalled) {
    closed += testing::ClosedByPeer(fd, 5) ? 1 : 0;
    ::close(fd);
  }
  EXPECT_EQ(closed, 120);
  EXPECT_EQ(serving_.listener->timed_out(), 100u);
  EXPECT_TRUE(Served("ca"));
}

// As ListenerTest's: only ~60 more descriptors may be opened; a flood of 300 silent
// connections evicts its own oldest members and a TLS client (three descriptors: its socket
// and the relay's pair) is served meanwhile.
TEST_F(TlsFrontTest, ShortOfDescriptorsSilentConnectionsMakeRoomForTlsClients) {
  // The test's own 300 client sockets take descriptors too: room is left for them.
  const int reserve = testing::ReserveLeavingRoom(300, 60);
  ASSERT_GT(reserve, 0);
  grpc::ServerBuilder builder;
  builder.RegisterService(&service_);
  ApplyServerLimits(&builder);
  TlsFrontOptions front;
  front.cert_file = dir_ + "/node.pem";
  front.key_file = dir_ + "/node.key";
  Result<std::unique_ptr<TlsFront>> made = TlsFront::Make(front);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  serving_.server = builder.BuildAndStart();
  ASSERT_NE(serving_.server, nullptr);
  auto listener = GuardedListener::Start(
      HostPort{"127.0.0.1", 0}, serving_.server.get(),
      ListenerOptions{Seconds(60.0), reserve, std::shared_ptr<TlsFront>(*std::move(made))});
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  serving_.listener = *std::move(listener);
  serving_.port = serving_.listener->port();
  std::vector<int> idle = Connections(300);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(Served("ca"));
  EXPECT_GT(serving_.listener->evicted(), 0u);
  for (int fd : idle) ::close(fd);
}

TEST(TlsFront, BadFilesAreNamed) {
  Result<std::unique_ptr<TlsFront>> missing =
      TlsFront::Make(TlsFrontOptions{"/nonexistent/cert.pem", "/nonexistent/key.pem"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--tls-cert '/nonexistent/cert.pem'"),
            std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace gavel::rpc
