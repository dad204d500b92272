// The C++ iterator client against the real agent endpoint (an Agent with fake scheduler,
// launcher and clock behind the HTTP server), and its checkpoint store.
#include "gavel/iterator/gavel_iterator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "gavel/agent/agent.h"
#include "gavel/agent/fakes.h"
#include "gavel/agent/http_server.h"
#include "gavel/agent/iterator_endpoint.h"

namespace gavel::iterator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class GavelIteratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gavel_cpp_iterator_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    agent::AgentOptions options;
    options.agent_id = "agent-i";
    options.gpu_type = "v100";
    options.num_gpus = 1;
    options.log_dir = (dir_ / "logs").string();
    options.checkpoint_root = (dir_ / "ckpt").string();
    options.run_dir = dir_.string();
    options.log = [](const std::string&) {};
    agent_ = std::make_unique<agent::Agent>(options, &scheduler_, &launcher_, &clock_);
    agent_->Tick();  // registered: worker 10
    auto server = agent::HttpServer::Start({}, agent::MakeIteratorHandler(agent_.get()));
    ASSERT_TRUE(server.ok());
    server_ = std::move(server).value();
  }
  void TearDown() override {
    server_.reset();
    agent_.reset();
    fs::remove_all(dir_);
  }

  void StartRound(std::uint64_t round, std::uint64_t job, std::uint64_t total,
                  std::uint64_t stop_at) {
    wire::StartRoundRequest request;
    request.set_round_id(round);
    wire::Task* task = request.add_tasks();
    task->set_worker_id(10);
    task->mutable_job()->set_job_id(job);
    task->mutable_job()->add_command("true");
    task->mutable_job()->set_total_steps(total);
    task->mutable_lease()->set_stop_at_step(stop_at);
    task->mutable_lease()->set_max_duration_s(1000.0);
    ASSERT_TRUE(agent_->StartRound(request).ok());
    agent_->Tick();
  }

  GavelIterator::Options IteratorOptions(std::uint64_t job) {
    GavelIterator::Options options;
    options.env = Environment{
        {"GAVEL_AGENT_URL", server_->url()},
        {"GAVEL_JOB_ID", std::to_string(job)},
        {"GAVEL_WORKER_ID", "10"},
        {"GAVEL_ROUND_ID", "1"},
        {"GAVEL_CHECKPOINT_DIR", (dir_ / "ckpt" / ("job-" + std::to_string(job))).string()},
        // The key the agent gave the latest process (each process gets its own).
        {"GAVEL_TOKEN", launcher_.num_launched() == 0
                            ? std::string()
                            : launcher_.Env(launcher_.num_launched() - 1, "GAVEL_TOKEN")}};
    options.log = [](const std::string&) {};
    options.handle_sigterm = false;
    return options;
  }

  // Ticks the agent until the fake scheduler holds `n` reports.
  void WaitForReports(std::size_t n) {
    for (int i = 0; i < 500 && scheduler_.reports().size() < n; ++i) {
      agent_->Tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(scheduler_.reports().size(), n);
  }

  fs::path dir_;
  ManualClock clock_{agent::testing::kTestClockStart};
  agent::testing::FakeSchedulerClient scheduler_;
  agent::testing::FakeProcessLauncher launcher_;
  std::unique_ptr<agent::Agent> agent_;
  std::unique_ptr<agent::HttpServer> server_;
};

TEST_F(GavelIteratorTest, LeasesCheckpointsExtensionsAndCompletion) {
  StartRound(1, 7, 10, 5);
  int model = 0;  // the "model": the number of steps it has seen
  std::vector<std::string> saves;
  std::vector<std::string> loads;
  auto save = [&](const std::string& dir) {
    saves.push_back(dir);
    std::ofstream(dir + "/model.txt") << model;
  };
  auto load = [&](const std::string& dir) {
    loads.push_back(dir);
    std::ifstream(dir + "/model.txt") >> model;
  };

  // ---- Process 1: lease to step 5, extended to 8 in round 2, then the GPU goes elsewhere ----
  auto first = std::async(std::launch::async, [&] {
    GavelIterator it(save, load, IteratorOptions(7));
    std::vector<std::uint64_t> seen;
    while (it.Next()) {
      EXPECT_EQ(static_cast<std::uint64_t>(model), it.steps_done());
      seen.push_back(it.steps_done());
      ++model;
    }
    EXPECT_FALSE(it.completed());
    return seen;
  });
  WaitForReports(1);  // Done(LEASE_REACHED) at 5 is held; the agent reported it
  EXPECT_EQ(scheduler_.reports()[0].checkpointed_steps(), 5u);
  EXPECT_EQ(scheduler_.reports()[0].outcome(), wire::LEASE_EXPIRED);
  StartRound(2, 7, 10, 8);  // the same job keeps the GPU: the held Done continues
  WaitForReports(2);
  EXPECT_EQ(scheduler_.reports()[1].checkpointed_steps(), 8u);
  EXPECT_EQ(scheduler_.reports()[1].round_id(), 2u);
  StartRound(3, 99, 10, 10);  // another job gets the GPU: the held Done says stop
  EXPECT_EQ(first.get(), (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(saves.size(), 2u);
  EXPECT_TRUE(loads.empty());
  const auto latest = CheckpointStore(dir_ / "ckpt" / "job-7").Latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->second, 8u);
  EXPECT_THAT(latest->first, HasSubstr("ckpt-000000000008"));

  // ---- Process 2: restores at 8 and completes at 10 ----
  launcher_.Exit(0, 0);
  StartRound(4, 7, 10, 10);
  agent_->Tick();
  model = -1;
  GavelIterator it(save, load, IteratorOptions(7));
  EXPECT_EQ(loads.size(), 1u);
  EXPECT_EQ(model, 8);
  EXPECT_EQ(it.steps_done(), 8u);
  EXPECT_EQ(it.total_steps(), 10u);
  std::vector<std::uint64_t> seen;
  while (it.Next()) {
    seen.push_back(it.steps_done());
    ++model;
  }
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{8, 9}));
  EXPECT_TRUE(it.completed());
  EXPECT_EQ(it.checkpointed_steps(), 10u);
  EXPECT_FALSE(it.Next());  // stays finished
}

TEST_F(GavelIteratorTest, TimeBoundedLeaseWithAnInjectedClock) {
  StartRound(1, 7, 1000, 1000);
  double now = 0.0;
  GavelIterator::Options options = IteratorOptions(7);
  options.clock = [&] { return now; };
  auto run = std::async(std::launch::async, [&] {
    GavelIterator it([](const std::string&) {}, [](const std::string&) {}, options);
    EXPECT_DOUBLE_EQ(it.lease().max_duration_s, 1000.0);
    std::uint64_t steps = 0;
    while (it.Next()) {
      now += 100.0;  // each step takes 100 s of training
      ++steps;
    }
    return steps;
  });
  WaitForReports(1);
  StartRound(2, 99, 1000, 1000);
  EXPECT_EQ(run.get(), 10u);
  EXPECT_EQ(scheduler_.reports()[0].checkpointed_steps(), 10u);
  EXPECT_NEAR(scheduler_.reports()[0].training_seconds(), 1000.0, 1e-6);
}

TEST_F(GavelIteratorTest, AgentErrorsAreThrown) {
  StartRound(1, 7, 10, 5);
  EXPECT_THROW(
      {
        try {
          GavelIterator it([](const std::string&) {}, [](const std::string&) {},
                           IteratorOptions(8));
        } catch (const AgentError& error) {
          EXPECT_EQ(error.status(), 404);
          EXPECT_THAT(error.what(), HasSubstr("this agent runs no job 8 on worker 10"));
          throw;
        }
      },
      AgentError);
  GavelIterator::Options unreachable = IteratorOptions(7);
  (*unreachable.env)["GAVEL_AGENT_URL"] = "http://127.0.0.1:1";
  EXPECT_THROW(GavelIterator([](const std::string&) {}, [](const std::string&) {}, unreachable),
               AgentError);
  (*unreachable.env)["GAVEL_AGENT_URL"] = "http://example.com:80";
  EXPECT_THROW(GavelIterator([](const std::string&) {}, [](const std::string&) {}, unreachable),
               AgentError);
}

TEST_F(GavelIteratorTest, StandaloneRunsItsTotalSteps) {
  GavelIterator::Options options;
  options.env = Environment{};
  options.total_steps = 4;
  options.checkpoint_dir = (dir_ / "standalone").string();
  options.log = [](const std::string&) {};
  options.handle_sigterm = false;
  GavelIterator it([](const std::string&) {}, [](const std::string&) {}, options);
  int steps = 0;
  while (it.Next()) ++steps;
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(CheckpointStore(dir_ / "standalone").Latest()->second, 4u);
}

TEST_F(GavelIteratorTest, CheckpointStoreReadsThePythonLayoutAndRejectsCorruption) {
  const fs::path root = dir_ / "layout";
  fs::create_directories(root / "ckpt-000000000042");
  std::ofstream(root / "ckpt-000000000042" / "gavel_iterator.json")
      << R"({"format": 1, "steps": 42, "job_id": 3})";
  std::ofstream(root / "LATEST") << "ckpt-000000000042\n";
  const auto latest = CheckpointStore(root).Latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->second, 42u);
  std::ofstream(root / "ckpt-000000000042" / "gavel_iterator.json") << R"({"steps": 41})";
  EXPECT_THROW(CheckpointStore(root).Latest(), CheckpointError);
  std::ofstream(root / "LATEST") << "nonsense\n";
  try {
    CheckpointStore(root).Latest();
    FAIL() << "no error";
  } catch (const CheckpointError& error) {
    EXPECT_THAT(error.what(), HasSubstr("LATEST: 'nonsense' is not a checkpoint name"));
  }
  // A failed save leaves the current checkpoint as it was; the next save cleans up.
  CheckpointStore store(dir_ / "fresh");
  store.Save(3, [](const std::string& d) { std::ofstream(d + "/x") << 3; });
  EXPECT_THROW(store.Save(5, [](const std::string&) { throw std::runtime_error("disk full"); }),
               std::runtime_error);
  EXPECT_EQ(store.Latest()->second, 3u);
  store.Save(6, [](const std::string&) {});
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir_ / "fresh"))
    entries.push_back(entry.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"LATEST", "ckpt-000000000006"}));
}

// The fence (docs/checkpointing.md, "The layout on disk"): a process of a launch the scheduler
// replaced (launch 0 here, still running after launch 1 started) writes on, but only in its
// own namespace; the next launch claims launch 1's line, never the zombie's, even when the
// zombie holds more steps, and launch 1's checkpoint is never overwritten or shrunk.
TEST_F(GavelIteratorTest, AReplacedLaunchCanNeitherOverwriteNorShrinkTheJobsCheckpoint) {
  const fs::path root = dir_ / "job-3";
  // Each checkpoint records which launch wrote it, so the test sees whose line is restored.
  const auto by = [](int launch) {
    return [launch](const std::string& d) { std::ofstream(d + "/who") << launch; };
  };
  const auto who = [](const std::string& d) {
    int launch = -1;
    std::ifstream(d + "/who") >> launch;
    return launch;
  };
  CheckpointStore zero(root, 0);
  ASSERT_FALSE(zero.Claim().has_value()) << "a fresh job: nothing to claim";
  zero.Save(100, by(0));

  CheckpointStore one(root, 1);
  const auto claimed = one.Claim();
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->second, 100u);
  EXPECT_EQ(who(claimed->first), 0);
  EXPECT_THAT(claimed->first, HasSubstr("attempt-1"));
  EXPECT_FALSE(fs::exists(CheckpointStore::NamespaceOf(root, 0)))
      << "the replaced launch's namespace is gone";

  // The zombie (launch 0) checkpoints late, then more steps than launch 1 has.
  zero.Save(120, by(0));
  one.Save(150, by(1));
  zero.Save(180, by(0));
  EXPECT_EQ(one.Latest()->second, 150u) << "launch 1's checkpoint is untouched";
  EXPECT_EQ(who(one.Latest()->first), 1);
  EXPECT_EQ(CheckpointStore(root).Latest()->second, 150u)
      << "the job's checkpoint is its latest launch's";

  CheckpointStore two(root, 2);
  const auto next = two.Claim();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->second, 150u) << "the next launch continues launch 1's line";
  EXPECT_EQ(who(next->first), 1);
  EXPECT_FALSE(fs::exists(CheckpointStore::NamespaceOf(root, 0)));
  EXPECT_FALSE(fs::exists(CheckpointStore::NamespaceOf(root, 1)));
  // A launch never claims from a later one, and claiming twice moves nothing.
  EXPECT_EQ(two.Claim()->second, 150u);
  EXPECT_FALSE(CheckpointStore(root, 1).Claim().has_value());
  EXPECT_EQ(two.Latest()->second, 150u);

  // The iterator of a launch claims at start, and refuses to begin below the scheduler's count.
  GavelIterator::Options options;
  options.env = Environment{{"GAVEL_ATTEMPT", "3"}, {"GAVEL_CHECKPOINTED_STEPS", "150"}};
  options.total_steps = 160;
  options.checkpoint_dir = root.string();
  options.log = [](const std::string&) {};
  options.handle_sigterm = false;
  int loaded_from = -1;
  GavelIterator resumed(by(3), [&](const std::string& d) { loaded_from = who(d); }, options);
  EXPECT_EQ(resumed.steps_done(), 150u);
  EXPECT_EQ(loaded_from, 1);
  while (resumed.Next()) {
  }
  EXPECT_EQ(CheckpointStore(root).Latest()->second, 160u);
  (*options.env)["GAVEL_ATTEMPT"] = "4";
  (*options.env)["GAVEL_CHECKPOINTED_STEPS"] = "170";  // credited, yet no checkpoint holds it
  try {
    GavelIterator below([](const std::string&) {}, [](const std::string&) {}, options);
    FAIL() << "no error";
  } catch (const CheckpointError& error) {
    EXPECT_THAT(error.what(), HasSubstr("no checkpoint holds the 170 steps"));
  }
}

// A launch replaced while it claims: launch 2 has moved launch 1's checkpoint into its own
// namespace but has not yet written its LATEST (a slow or killed host) when launch 3 starts.
// Launch 3 finds the checkpoint where launch 2 put it instead of removing launch 2's namespace
// with the job's checkpoint in it; launch 2, going on, only writes in its own namespace.
TEST_F(GavelIteratorTest, ALaunchReplacedInTheMiddleOfItsClaimLeavesTheCheckpointToTheNext) {
  const fs::path root = dir_ / "job-5";
  CheckpointStore(root, 1).Save(320, [](const std::string& d) { std::ofstream(d + "/model") << 320; });
  const fs::path in_flight = CheckpointStore::NamespaceOf(root, 2);
  fs::create_directories(in_flight);
  fs::rename(CheckpointStore::NamespaceOf(root, 1) / "ckpt-000000000320",
             in_flight / "ckpt-000000000320");  // launch 2's rename; its LATEST never came
  ASSERT_TRUE(fs::exists(CheckpointStore::NamespaceOf(root, 1) / "LATEST"));

  CheckpointStore three(root, 3);
  const auto claimed = three.Claim();
  ASSERT_TRUE(claimed.has_value()) << "the checkpoint in launch 2's namespace was lost";
  EXPECT_EQ(claimed->second, 320u);
  EXPECT_THAT(claimed->first, HasSubstr("attempt-3"));
  int model = 0;
  std::ifstream(claimed->first + "/model") >> model;
  EXPECT_EQ(model, 320);
  EXPECT_FALSE(fs::exists(in_flight));
  EXPECT_FALSE(fs::exists(CheckpointStore::NamespaceOf(root, 1)));
  EXPECT_EQ(CheckpointStore(root).Latest()->second, 320u);
}

// Ranks other than 0 load what rank 0 claimed: they wait for its mark.
TEST_F(GavelIteratorTest, OtherRanksWaitForRankZerosClaim) {
  const fs::path root = dir_ / "job-4";
  CheckpointStore(root, 0).Save(7, [](const std::string&) {});
  CheckpointStore rank1(root, 1);
  EXPECT_FALSE(rank1.WaitForClaim(0.1));
  EXPECT_FALSE(rank1.Latest().has_value());
  CheckpointStore rank0(root, 1);
  EXPECT_EQ(rank0.Claim()->second, 7u);
  rank0.MarkClaimed();
  EXPECT_TRUE(rank1.WaitForClaim(0.1));
  EXPECT_EQ(rank1.Latest()->second, 7u);
}

TEST(GavelIteratorJsonTest, Proto3JsonNumbers) {
  const Lease lease = internal::LeaseFromJson(nlohmann::json{
      {"stopAtStep", "18446744073709551615"}, {"maxDurationS", "Infinity"}, {"roundEndUnixMs", 5}});
  EXPECT_EQ(lease.stop_at_step, std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(std::isinf(lease.max_duration_s));
  EXPECT_EQ(lease.round_end_unix_ms, 5);
  EXPECT_THROW(internal::LeaseFromJson(nlohmann::json{{"stopAtStep", "-3"}}), AgentError);
}

}  // namespace
}  // namespace gavel::iterator
