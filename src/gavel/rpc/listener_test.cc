// GuardedListener in front of a real gRPC server on loopback: calls are served, a second
// listener on the same port is refused, silent connections are closed after the timeout, and
// with descriptors (nearly) exhausted new connections are shed while the loop keeps running
// and serves again once they are gone.
#include "gavel/rpc/listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "gavel/rpc/socket_test_util.h"
#include "gavel/wire/scheduler.grpc.pb.h"

namespace gavel::rpc {
namespace {

class StatusService final : public wire::Scheduler::Service {
  grpc::Status GetStatus(grpc::ServerContext*, const wire::GetStatusRequest*,
                         wire::GetStatusResponse* response) override {
    response->set_policy("served");
    return grpc::Status::OK;
  }
};

class ListenerTest : public ::testing::Test {
 protected:
  void StartServer(ListenerOptions options) {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    ApplyServerLimits(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto listener = GuardedListener::Start(HostPort{"127.0.0.1", 0}, server_.get(), options);
    ASSERT_TRUE(listener.ok()) << listener.status().ToString();
    listener_ = *std::move(listener);
  }
  void TearDown() override {
    if (listener_) listener_->Stop();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }
  // A fresh channel each time, so that no earlier connection is reused.
  bool Served() const {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    auto stub = wire::Scheduler::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(listener_->port()), grpc::InsecureChannelCredentials(),
        args));
    grpc::ClientContext context;
    PrepareContext(&context, Seconds(3.0), "");
    wire::GetStatusResponse response;
    return stub->GetStatus(&context, wire::GetStatusRequest(), &response).ok() &&
           response.policy() == "served";
  }
  StatusService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GuardedListener> listener_;
};

TEST_F(ListenerTest, ServesAndRefusesASecondListenerOnThePort) {
  StartServer({});
  EXPECT_TRUE(Served());
  StatusService other_service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&other_service);
  auto other_server = builder.BuildAndStart();
  ASSERT_NE(other_server, nullptr);
  auto second = GuardedListener::Start(HostPort{"127.0.0.1", listener_->port()},
                                       other_server.get());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use"), std::string::npos)
      << second.status().ToString();
  other_server->Shutdown(std::chrono::system_clock::now());
  EXPECT_TRUE(Served());
}

TEST_F(ListenerTest, SilentConnectionsAreClosedAndCallsServedMeanwhile) {
  StartServer(ListenerOptions{Seconds(0.5), 64, nullptr});
  std::vector<int> idle = testing::LoopbackConnections(listener_->port(), 200);
  EXPECT_TRUE(Served());
  int closed = 0;
  for (int fd : idle) {
    closed += testing::ClosedByPeer(fd, 5) ? 1 : 0;
    ::close(fd);
  }
  EXPECT_EQ(closed, 200);
  EXPECT_EQ(listener_->timed_out(), 200u);
  EXPECT_TRUE(Served());
}

// Descriptors run short: `reserve` is set so that only ~60 more may be opened. A flood of 300
// silent connections evicts its own oldest members, and a real client is served while the
// flood's connections are all still open on the client side — where gRPC's own accept loop
// stops for good once accept() fails.
TEST_F(ListenerTest, ShortOfDescriptorsSilentConnectionsMakeRoomForRealClients) {
  // The test's own 300 client sockets take descriptors too: room is left for them.
  const int reserve = testing::ReserveLeavingRoom(300, 60);
  ASSERT_GT(reserve, 0);
  StartServer(ListenerOptions{Seconds(60.0), reserve, nullptr});
  std::vector<int> idle = testing::LoopbackConnections(listener_->port(), 300);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // (That the server then holds no more descriptors than the limit less the reserve is
  // checked across processes, where the clients' sockets do not count: runtime_e2e_test's
  // IdleConnectionsBeyondTheInheritedDescriptorLimitLeaveItServing with a hard limit of 128.)
  EXPECT_TRUE(Served());
  EXPECT_GT(listener_->evicted(), 0u);  // the flood outgrew the room
  EXPECT_EQ(listener_->timed_out(), 0u);
  for (int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace gavel::rpc
