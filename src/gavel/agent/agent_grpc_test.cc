// The agent over real gRPC and real processes: registration with a token, StartRound and
// KillJob from a "scheduler" stub, and reconnection after the scheduler restarts on the same
// port having forgotten the agent — while the agent's job keeps running.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "gavel/agent/agent_server.h"
#include "gavel/agent/fake_scheduler_server.h"
#include "gavel/rpc/grpc_util.h"

namespace gavel::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kToken = "agent-token-123456";

template <class Predicate>
bool Eventually(Predicate done, double seconds = 15.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

class AgentGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gavel_agent_grpc_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = scheduler_->Start();
    ASSERT_GT(port_, 0);
    AgentServerOptions options;
    options.scheduler_address = "127.0.0.1:" + std::to_string(port_);
    options.agent.agent_id = "grpc-agent";
    options.agent.gpu_type = "k80";
    options.agent.num_gpus = 2;
    options.agent.token = kToken;
    options.agent.log_dir = (dir_ / "logs").string();
    options.agent.checkpoint_root = (dir_ / "ckpt").string();
    options.agent.run_dir = dir_.string();
    options.agent.program_path = "/usr/bin:/bin";
    options.agent.kill_grace = Seconds(1.0);
    options.agent.backoff_max = Seconds(0.5);
    options.agent.log = [](const std::string&) {};
    auto server = AgentServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    agent_ = std::move(server).value();
    stub_ = wire::WorkerAgent::NewStub(rpc::MakeChannel(agent_->address()));
  }
  void TearDown() override {
    agent_.reset();
    scheduler_.reset();
    fs::remove_all(dir_);
  }

  // The callback token the agent registered with: what the scheduler presents to it.
  std::string Callback() const {
    const auto registrations = scheduler_->registrations();
    return registrations.empty() ? std::string() : registrations[0].callback_token();
  }
  // `token` null = the agent's callback token.
  grpc::Status StartRound(std::uint64_t round, std::vector<wire::Task> tasks,
                          const char* token = nullptr) {
    wire::StartRoundRequest request;
    request.set_round_id(round);
    for (auto& task : tasks) *request.add_tasks() = std::move(task);
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(5.0), token == nullptr ? Callback() : token);
    wire::StartRoundResponse response;
    return stub_->StartRound(&context, request, &response);
  }

  static wire::Task SleepTask(std::uint64_t worker, std::uint64_t job) {
    wire::Task task;
    task.set_worker_id(worker);
    task.mutable_job()->set_job_id(job);
    for (const char* arg : {"sh", "-c", "echo started; sleep 60"})
      task.mutable_job()->add_command(arg);
    task.mutable_job()->set_total_steps(10);
    task.mutable_lease()->set_stop_at_step(10);
    task.mutable_lease()->set_max_duration_s(120.0);
    return task;
  }

  fs::path dir_;
  std::unique_ptr<testing::FakeSchedulerServer> scheduler_ =
      std::make_unique<testing::FakeSchedulerServer>(kToken);
  int port_ = 0;
  std::unique_ptr<AgentServer> agent_;
  std::unique_ptr<wire::WorkerAgent::Stub> stub_;
};

TEST_F(AgentGrpcTest, RegistersRunsJobsAndReconnectsAfterASchedulerRestart) {
  ASSERT_TRUE(Eventually([&] { return !scheduler_->registrations().empty(); }));
  const wire::RegisterWorkerRequest registration = scheduler_->registrations()[0];
  EXPECT_EQ(registration.agent_id(), "grpc-agent");
  EXPECT_EQ(registration.gpu_type(), "k80");
  EXPECT_EQ(registration.address(), agent_->address());
  EXPECT_THAT(registration.address(), ::testing::StartsWith("127.0.0.1:"));
  ASSERT_TRUE(Eventually([&] { return scheduler_->heartbeats() >= 2; }));

  // The scheduler's calls need the callback token the agent chose: a fresh secret, not the
  // agent's own token (which the scheduler never keeps), and nothing else is accepted.
  ASSERT_EQ(Callback().size(), 64u);
  EXPECT_NE(Callback(), kToken);
  EXPECT_EQ(StartRound(1, {SleepTask(10, 4)}, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(StartRound(1, {SleepTask(10, 4)}, kToken).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(StartRound(1, {SleepTask(10, 4)}, "wrong-token-0000").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const grpc::Status bad = StartRound(1, {SleepTask(77, 4)});
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("tasks[0].worker_id: 77"));
  ASSERT_TRUE(StartRound(1, {SleepTask(10, 4), SleepTask(11, 5)}).ok());
  int pid4 = 0;
  int pid5 = 0;
  ASSERT_TRUE(Eventually([&] {
    const AgentSnapshot snapshot = agent_->agent().Snapshot();
    pid4 = snapshot.gpus[0].pid;
    pid5 = snapshot.gpus[1].pid;
    return pid4 != 0 && pid5 != 0;
  }));

  // ---- The scheduler goes away; job 5 crashes meanwhile ----
  scheduler_->Stop();
  ASSERT_EQ(::kill(pid5, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // heartbeats and the report fail
  EXPECT_EQ(::kill(pid4, 0), 0) << "job 4 must keep running while the scheduler is down";

  // ---- It comes back on the same port, having forgotten the agent ----
  scheduler_ = std::make_unique<testing::FakeSchedulerServer>(kToken);
  ASSERT_EQ(scheduler_->Start(port_), port_);
  ASSERT_TRUE(Eventually(
      [&] { return !scheduler_->registrations().empty() && !scheduler_->reports().empty(); }));
  // It learns from the re-registration that job 4 still runs on GPU 10...
  const wire::RegisterWorkerRequest again = scheduler_->registrations().back();
  EXPECT_EQ(again.agent_id(), "grpc-agent");
  ASSERT_EQ(again.running_size(), 1);
  EXPECT_EQ(again.running(0).job_id(), 4u);
  EXPECT_EQ(again.running(0).worker_id(), 10u);
  // ...and receives the crash report it missed.
  const wire::ReportDoneRequest report = scheduler_->reports()[0];
  EXPECT_EQ(report.job_id(), 5u);
  EXPECT_EQ(report.outcome(), wire::CRASHED);
  EXPECT_EQ(report.exit_code(), -SIGKILL);
  EXPECT_EQ(::kill(pid4, 0), 0);

  // KillJob over gRPC: SIGTERM to the group, reported KILLED.
  wire::KillJobRequest kill;
  kill.set_job_id(4);
  kill.set_reason("cancelled");
  grpc::ClientContext context;
  rpc::PrepareContext(&context, Seconds(5.0), Callback());
  wire::KillJobResponse response;
  ASSERT_TRUE(stub_->KillJob(&context, kill, &response).ok());
  ASSERT_TRUE(Eventually([&] { return scheduler_->reports().size() >= 2; }));
  EXPECT_EQ(scheduler_->reports()[1].outcome(), wire::KILLED);
  EXPECT_EQ(scheduler_->reports()[1].exit_code(), -SIGTERM);
  EXPECT_TRUE(Eventually([&] { return ::kill(pid4, 0) != 0; }));
}

TEST_F(AgentGrpcTest, ShutdownEndsJobsAndFlushesTheirReports) {
  ASSERT_TRUE(Eventually([&] { return !scheduler_->registrations().empty(); }));
  ASSERT_TRUE(StartRound(1, {SleepTask(11, 9)}).ok());
  int pid = 0;
  ASSERT_TRUE(Eventually([&] { return (pid = agent_->agent().Snapshot().gpus[1].pid) != 0; }));
  agent_->Shutdown();
  EXPECT_NE(::kill(pid, 0), 0);
  ASSERT_EQ(scheduler_->reports().size(), 1u);
  EXPECT_EQ(scheduler_->reports()[0].outcome(), wire::KILLED);
  EXPECT_THAT(scheduler_->reports()[0].message(), HasSubstr("agent shutting down"));
}

}  // namespace
}  // namespace gavel::agent
