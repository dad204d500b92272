// Tests of the iterator endpoint: proto3 JSON over HTTP onto a real Agent with fake ports.
#include "gavel/agent/iterator_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "gavel/agent/fakes.h"
#include "gavel/agent/http_test_util.h"

namespace gavel::agent {
namespace {

namespace fs = std::filesystem;
using testing::BodyOf;
using ::testing::HasSubstr;
using testing::Post;
using ::testing::StartsWith;

class IteratorEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gavel_endpoint_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    AgentOptions options;
    options.agent_id = "agent-e";
    options.gpu_type = "k80";
    options.num_gpus = 1;
    options.log_dir = (dir_ / "logs").string();
    options.checkpoint_root = (dir_ / "ckpt").string();
    options.run_dir = dir_.string();
    options.log = [](const std::string&) {};
    agent_ = std::make_unique<Agent>(options, &scheduler_, &launcher_, &clock_);
    agent_->Tick();  // registers: worker id 10
    ASSERT_TRUE(agent_->StartRound(Round(1)).ok());
    agent_->Tick();
  }
  // Round `round_id`: job 3 (500 steps) on worker 10 with a 30-s lease.
  static wire::StartRoundRequest Round(std::uint64_t round_id) {
    wire::StartRoundRequest round;
    round.set_round_id(round_id);
    wire::Task* task = round.add_tasks();
    task->set_worker_id(10);
    task->mutable_job()->set_job_id(3);
    task->mutable_job()->add_command("true");
    task->mutable_job()->set_total_steps(500);
    task->mutable_lease()->set_stop_at_step(500);
    task->mutable_lease()->set_max_duration_s(30.0);
    return round;
  }
  void TearDown() override {
    server_.reset();
    agent_.reset();
    fs::remove_all(dir_);
  }
  // The header that carries the key the agent gave the i-th launched process.
  std::string KeyOf(std::size_t i = 0) const {
    return "Authorization: Bearer " + launcher_.Env(i, "GAVEL_TOKEN") + "\r\n";
  }
  int Serve() {
    auto server = HttpServer::Start({}, MakeIteratorHandler(agent_.get()));
    EXPECT_TRUE(server.ok());
    server_ = std::move(server).value();
    return server_->port();
  }

  fs::path dir_;
  ManualClock clock_{testing::kTestClockStart};
  testing::FakeSchedulerClient scheduler_;
  testing::FakeProcessLauncher launcher_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(IteratorEndpointTest, InitAnswersWithTheLeaseInProto3Json) {
  const int port = Serve();
  const std::string response = Post(port, "/gavel.wire.Iterator/Init",
                                    R"({"jobId": "3", "workerId": 10, "restoredSteps": 20})",
                                    KeyOf());
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200"));
  const std::string body = BodyOf(response);
  // 64-bit integers are strings in proto3 JSON; every field is printed, zeros included.
  EXPECT_THAT(body, HasSubstr(R"("stopAtStep":"500")"));
  EXPECT_THAT(body, HasSubstr(R"("maxDurationS":30)"));
  EXPECT_THAT(body, HasSubstr(R"("roundEndUnixMs":"0")"));
  EXPECT_THAT(body, HasSubstr(R"("totalSteps":"500")"));
  EXPECT_THAT(body, HasSubstr(R"("holdTimeoutS":60)"));
  EXPECT_EQ(agent_->Snapshot().gpus[0].checkpointed_steps, 20u);
}

TEST_F(IteratorEndpointTest, ErrorsFollowTheContract) {
  const int port = Serve();
  const std::string unknown_job =
      Post(port, "/gavel.wire.Iterator/Init", R"({"jobId": 4, "workerId": 10})");
  EXPECT_THAT(unknown_job, StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(BodyOf(unknown_job),
              HasSubstr(R"({"error": "this agent runs no job 4 on worker 10"})"));
  const std::string malformed = Post(port, "/gavel.wire.Iterator/Progress", R"({"steps": "many"})");
  EXPECT_THAT(malformed, StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(BodyOf(malformed), HasSubstr("ProgressRequest"));
  EXPECT_THAT(BodyOf(malformed), HasSubstr("steps"));
  EXPECT_THAT(Post(port, "/gavel.wire.Iterator/Fly", "{}"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Post(port, "/elsewhere", "{}"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(testing::RawExchange(port, "GET /gavel.wire.Iterator/Init HTTP/1.0\r\n\r\n"),
              StartsWith("HTTP/1.1 405"));
  // Unknown fields are ignored (a newer client).
  EXPECT_THAT(Post(port, "/gavel.wire.Iterator/Init",
                   R"({"jobId": 3, "workerId": 10, "futureField": 1})", KeyOf()),
              StartsWith("HTTP/1.1 200"));
}

// A process holds a key for itself only. Without it, with a wrong one, with the
// agent's own token, or with another job's key, every method is refused (401) and nothing
// changes; the key of the process named in the request is accepted.
TEST_F(IteratorEndpointTest, EachProcessHoldsAKeyForItselfOnly) {
  const int port = Serve();
  // A second job on a second agent-run: job 3 on worker 10 is launched first (SetUp); the
  // agent's options carry no token, so GAVEL_TOKEN can only be the per-process key.
  const std::string key = launcher_.Env(0, "GAVEL_TOKEN");
  ASSERT_EQ(key.size(), 64u);
  const std::string body = R"({"jobId": 3, "workerId": 10, "restoredSteps": 7})";
  // The key with its last digit changed (to another digit: one in 16 keys ends in '0').
  const std::string off_by_one = key.substr(0, 63) + (key.back() == '0' ? '1' : '0');
  for (const std::string& header :
       {std::string(), std::string("Authorization: Bearer wrong\r\n"),
        std::string("Authorization: Bearer " + off_by_one + "\r\n"),
        std::string("Authorization: bearer " + key + "\r\n")}) {
    for (const char* method : {"Init", "Progress", "Done"}) {
      EXPECT_THAT(Post(port, std::string("/gavel.wire.Iterator/") + method, body, header),
                  StartsWith("HTTP/1.1 401"))
          << method << " with '" << header << "'";
    }
  }
  EXPECT_EQ(agent_->Snapshot().gpus[0].checkpointed_steps, 0u);  // nothing was applied
  EXPECT_THAT(Post(port, "/gavel.wire.Iterator/Init", body, KeyOf()), StartsWith("HTTP/1.1 200"));
  EXPECT_EQ(agent_->Snapshot().gpus[0].checkpointed_steps, 7u);

  // The next process of the same job (a relaunch) gets a new key; the old one is worthless.
  launcher_.Exit(0, 1);
  agent_->Tick();
  ASSERT_TRUE(agent_->StartRound(Round(2)).ok());
  agent_->Tick();
  ASSERT_EQ(launcher_.num_launched(), 2u);
  EXPECT_NE(launcher_.Env(1, "GAVEL_TOKEN"), key);
  EXPECT_THAT(Post(port, "/gavel.wire.Iterator/Init", body, KeyOf(0)), StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(Post(port, "/gavel.wire.Iterator/Init", body, KeyOf(1)), StartsWith("HTTP/1.1 200"));
}

TEST_F(IteratorEndpointTest, DoneIsHeldUntilTheNextRoundDecides) {
  const int port = Serve();
  ASSERT_THAT(Post(port, "/gavel.wire.Iterator/Init", R"({"jobId": 3, "workerId": 10})", KeyOf()),
              StartsWith("HTTP/1.1 200"));
  auto done = std::async(std::launch::async, [port, key = KeyOf()] {
    return Post(
        port, "/gavel.wire.Iterator/Done",
        R"({"jobId": 3, "workerId": 10, "roundId": 1, "reason": "LEASE_REACHED", )"
                R"("checkpointedSteps": 120})", key);
  });
  // The agent reports the micro-task while the call is held.
  for (int i = 0; i < 200 && scheduler_.reports().empty(); ++i) {
    agent_->Tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(scheduler_.reports().size(), 1u);
  EXPECT_EQ(scheduler_.reports()[0].checkpointed_steps(), 120u);
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);

  ASSERT_TRUE(agent_->StartRound(Round(2)).ok());
  const std::string body = BodyOf(done.get());
  EXPECT_THAT(body, HasSubstr(R"("continueRunning":true)"));
  EXPECT_THAT(body, HasSubstr(R"("roundId":"2")"));
  EXPECT_THAT(body, HasSubstr(R"("maxDurationS":30)"));
}

}  // namespace
}  // namespace gavel::agent
