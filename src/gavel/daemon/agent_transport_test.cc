// GrpcAgentTransport against a fake agent served over gRPC on loopback: calls to one agent
// arrive in the order they were made, a StartRound refused while the agent digests its
// registration is retried, and an unreachable agent is reported through the callback.
#include "gavel/daemon/agent_transport.h"

#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "gavel/rpc/grpc_util.h"

namespace gavel::daemon {
namespace {

class FakeAgentService final : public wire::WorkerAgent::Service {
 public:
  grpc::Status StartRound(grpc::ServerContext* context, const wire::StartRoundRequest* request,
                          wire::StartRoundResponse*) override {
    MutexLock lock(mutex_);
    const auto& metadata = context->client_metadata();
    const auto token = metadata.find("authorization");
    tokens_.push_back(token == metadata.end() ? "" : std::string(token->second.data(),
                                                                 token->second.size()));
    if (refusals_left_ > 0) {
      --refusals_left_;
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not registered yet");
    }
    calls_.push_back("start " + std::to_string(request->round_id()));
    return grpc::Status::OK;
  }
  grpc::Status KillJob(grpc::ServerContext*, const wire::KillJobRequest* request,
                       wire::KillJobResponse*) override {
    MutexLock lock(mutex_);
    calls_.push_back("kill " + std::to_string(request->job_id()) + "@" +
                     std::to_string(request->round_id()));
    return grpc::Status::OK;
  }
  std::vector<std::string> calls() {
    MutexLock lock(mutex_);
    return calls_;
  }
  std::vector<std::string> tokens() {
    MutexLock lock(mutex_);
    return tokens_;
  }
  void RefuseNext(int n) {
    MutexLock lock(mutex_);
    refusals_left_ = n;
  }

 private:
  Mutex mutex_;
  std::vector<std::string> calls_ GAVEL_GUARDED_BY(mutex_);
  std::vector<std::string> tokens_ GAVEL_GUARDED_BY(mutex_);
  int refusals_left_ GAVEL_GUARDED_BY(mutex_) = 0;
};

// Collects callback outcomes.
class Outcomes {
 public:
  AgentTransport::Done Callback() {
    return [this](Status status) {
      MutexLock lock(mutex_);
      statuses_.push_back(status);
      cv_.notify_all();
    };
  }
  std::vector<Status> WaitFor(std::size_t n) {
    UniqueLock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (statuses_.size() < n) {
      if (cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout) break;
    }
    return statuses_;
  }

 private:
  Mutex mutex_;
  std::condition_variable cv_;
  std::vector<Status> statuses_ GAVEL_GUARDED_BY(mutex_);
};

class AgentTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }
  AgentEndpoint Endpoint() const {
    return {"agent-1", "127.0.0.1:" + std::to_string(port_), "agent-token-1"};
  }

  FakeAgentService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(AgentTransportTest, CallsToOneAgentArriveInOrderWithTheToken) {
  GrpcAgentTransport transport(4, Seconds(5.0));
  Outcomes outcomes;
  for (std::uint64_t round = 1; round <= 20; ++round) {
    wire::StartRoundRequest start;
    start.set_round_id(round);
    transport.StartRound(Endpoint(), start, outcomes.Callback());
    wire::KillJobRequest kill;
    kill.set_job_id(7);
    kill.set_round_id(round);
    transport.KillJob(Endpoint(), kill, outcomes.Callback());
  }
  const auto statuses = outcomes.WaitFor(40);
  ASSERT_EQ(statuses.size(), 40u);
  for (const Status& s : statuses) EXPECT_TRUE(s.ok()) << s.ToString();
  const auto calls = service_.calls();
  ASSERT_EQ(calls.size(), 40u);
  for (std::uint64_t round = 1; round <= 20; ++round) {
    EXPECT_EQ(calls[2 * (round - 1)], "start " + std::to_string(round));
    EXPECT_EQ(calls[2 * (round - 1) + 1], "kill 7@" + std::to_string(round));
  }
  EXPECT_EQ(service_.tokens().front(), "Bearer agent-token-1");
}

TEST_F(AgentTransportTest, AStartRoundRefusedWhileTheAgentRegistersIsRetried) {
  GrpcAgentTransport transport(2, Seconds(5.0));
  service_.RefuseNext(2);
  Outcomes outcomes;
  wire::StartRoundRequest start;
  start.set_round_id(3);
  transport.StartRound(Endpoint(), start, outcomes.Callback());
  const auto statuses = outcomes.WaitFor(1);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].ToString();
  EXPECT_EQ(service_.calls(), std::vector<std::string>{"start 3"});
}

TEST_F(AgentTransportTest, AnUnreachableAgentIsReported) {
  GrpcAgentTransport transport(2, Seconds(1.0));
  Outcomes outcomes;
  AgentEndpoint nowhere = Endpoint();
  nowhere.address = "127.0.0.1:1";  // nothing listens on port 1
  transport.StartRound(nowhere, wire::StartRoundRequest(), outcomes.Callback());
  const auto statuses = outcomes.WaitFor(1);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_FALSE(statuses[0].ok());
  EXPECT_NE(statuses[0].message().find("agent-1"), std::string::npos);
}

}  // namespace
}  // namespace gavel::daemon
