// Real processes: the agent (real process launcher, real iterator endpoint, wall clock) runs
// examples/training/train.py through the Python iterator, while the test plays the scheduler
// (StartRound in, reports out through a fake scheduler client). Independent truth:
//   * the training program's checkpointed checksum of the steps it ran (every step exactly
//     once, in order), recomputed here;
//   * its execution log (every step ever executed, lost ones included);
//   * the throughput table (steps per second of training on the agent's GPU type).
// Labelled "slow" (seconds of real time).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "gavel/agent/agent_server.h"
#include "gavel/agent/fakes.h"
#include "gavel/agent/process.h"
#include "gavel/iterator/gavel_iterator.h"

namespace gavel::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kJobType = "ResNet-18 (batch size 64)";
// Steps/s of kJobType alone (data/simulation_throughputs.json).
constexpr double kV100 = 24.09;
constexpr double kK80 = 7.05;

// train.py's checksum after steps 0..steps-1: c = (c * 1000003 + k + 1) mod (2^61 - 1).
std::uint64_t ExpectedChecksum(std::uint64_t steps) {
  constexpr std::uint64_t kModulus = (std::uint64_t{1} << 61) - 1;
  auto times = [](std::uint64_t a, std::uint64_t b) {  // a * b mod kModulus, without overflow
    std::uint64_t product = 0;
    for (; b != 0; b >>= 1, a = (a << 1) % kModulus) {
      if ((b & 1) != 0) product = (product + a) % kModulus;
    }
    return product;
  };
  std::uint64_t checksum = 0;
  for (std::uint64_t k = 0; k < steps; ++k)
    checksum = (times(checksum, 1000003) + k + 1) % kModulus;
  return checksum;
}

// {"step": N, "checksum": C} of the job's current checkpoint (its latest launch's, as the
// next launch would claim it).
std::pair<std::uint64_t, std::uint64_t> CheckpointedModel(const fs::path& job_dir) {
  const auto latest = iterator::CheckpointStore(job_dir).Latest();
  if (!latest) return {0, 0};
  std::ifstream model(fs::path(latest->first) / "model.json");
  std::stringstream text;
  text << model.rdbuf();
  const std::string json = text.str();
  auto field = [&](const std::string& key) -> std::uint64_t {
    const std::size_t at = json.find("\"" + key + "\": ");
    return at == std::string::npos ? 0 : std::stoull(json.substr(at + key.size() + 4));
  };
  return {field("step"), field("checksum")};
}

std::vector<std::uint64_t> ReadExecLog(const fs::path& path) {
  std::vector<std::uint64_t> steps;
  std::ifstream in(path);
  for (std::uint64_t step; in >> step;) steps.push_back(step);
  return steps;
}

class AgentProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gavel_agent_process_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (auto& server : servers_) server->Shutdown(Seconds(0.5));
    servers_.clear();
    fs::remove_all(dir_);
  }

  AgentServer& StartAgent(const std::string& gpu_type, int gpus) {
    AgentServerOptions options;
    AgentOptions& agent = options.agent;
    agent.agent_id = "agent-" + gpu_type;
    agent.gpu_type = gpu_type;
    agent.num_gpus = gpus;
    agent.log_dir = (dir_ / gpu_type / "logs").string();
    agent.checkpoint_root = (dir_ / "checkpoints").string();  // shared by every agent
    agent.run_dir = GAVEL_SOURCE_DIR;
    const char* path = std::getenv("PATH");
    agent.program_path = path ? path : "/usr/bin:/bin";
    agent.base_env = {{"PATH", agent.program_path}};
    agent.kill_grace = Seconds(2.0);
    agent.hold_timeout = Seconds(20.0);
    agent.log = [](const std::string&) {};
    options.tick_interval = Seconds(0.02);
    auto server = AgentServer::Start(options, &scheduler_, &launcher_, &clock_);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    servers_.push_back(std::move(server).value());
    AgentServer& started = *servers_.back();
    WaitFor([&] { return started.agent().Snapshot().registered; }, "registration");
    return started;
  }

  wire::Task Task(std::uint64_t worker, std::uint64_t job, std::uint64_t total, double lease_s) {
    wire::Task task;
    task.set_worker_id(worker);
    wire::JobLaunch* launch = task.mutable_job();
    launch->set_job_id(job);
    for (const char* arg : {"python3", "examples/training/train.py", "--speedup", "4"})
      launch->add_command(arg);
    launch->set_total_steps(total);
    launch->set_job_type(kJobType);
    launch->set_world_size(1);
    (*launch->mutable_env())["GAVEL_TRAIN_EXEC_LOG"] =
        (dir_ / ("exec-" + std::to_string(job) + ".log")).string();
    task.mutable_lease()->set_stop_at_step(total);
    task.mutable_lease()->set_max_duration_s(lease_s);
    return task;
  }

  static wire::StartRoundRequest Round(std::uint64_t id, std::vector<wire::Task> tasks) {
    wire::StartRoundRequest round;
    round.set_round_id(id);
    for (auto& task : tasks) *round.add_tasks() = std::move(task);
    return round;
  }

  template <class Predicate>
  void WaitFor(Predicate done, const std::string& what, double seconds = 30.0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "timed out waiting for " << what;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // The report for (job, round), waiting for it.
  wire::ReportDoneRequest ReportFor(std::uint64_t job, std::uint64_t round) {
    wire::ReportDoneRequest found;
    bool have = false;
    WaitFor(
        [&] {
          for (const auto& report : scheduler_.reports()) {
            if (report.job_id() == job && report.round_id() == round) {
              found = report;
              have = true;
            }
          }
          return have;
        },
        "the report of job " + std::to_string(job) + " round " + std::to_string(round));
    return found;
  }

  fs::path dir_;
  SteadyClock clock_;
  testing::FakeSchedulerClient scheduler_;
  PosixProcessLauncher launcher_;
  std::vector<std::unique_ptr<AgentServer>> servers_;
};

TEST_F(AgentProcessTest, StepsAreExactAcrossLeasesMovesAndAKill9) {
  constexpr std::uint64_t kTotal = 300;
  constexpr std::uint64_t kJob = 5;
  AgentServer& server = StartAgent("v100", 2);  // GPUs 10 and 11
  Agent& agent = server.agent();
  const fs::path job_dir = dir_ / "checkpoints" / "job-5";
  const fs::path exec_log = dir_ / "exec-5.log";

  // Rounds: 1 start on GPU 10; 2 extension (same GPU, no restart); 3 move to GPU 11 (restart
  // from the checkpoint); 4 on GPU 11, killed with SIGKILL mid-lease; 5... on GPU 11 until done.
  std::uint64_t round = 0;
  std::uint64_t last_checkpointed = 0;
  std::uint64_t crashed_at_checkpoint = 0;
  std::uint64_t lost_from = 0;
  std::uint64_t lost_to = 0;
  int launches_seen = 0;
  int previous_pid = 0;
  bool completed = false;
  while (!completed) {
    ++round;
    ASSERT_LE(round, 30u) << "the job did not complete";
    const std::uint64_t worker = round <= 2 ? 10 : 11;
    ASSERT_TRUE(agent.StartRound(Round(round, {Task(worker, kJob, kTotal, 0.8)})).ok());
    if (round == 4) {
      // Let it train well past its restored checkpoint, then kill -9 the process.
      const std::size_t executed_before = ReadExecLog(exec_log).size();
      int pid = 0;
      WaitFor(
          [&] {
            const auto gpu = agent.Snapshot().gpus[1];
            pid = gpu.pid;
            return gpu.phase == AgentSnapshot::Phase::kRunning &&
                   ReadExecLog(exec_log).size() >= executed_before + 25;
          },
          "training in round 4");
      crashed_at_checkpoint = CheckpointedModel(job_dir).first;
      ASSERT_EQ(::kill(pid, SIGKILL), 0);
      lost_from = crashed_at_checkpoint;
    }
    const wire::ReportDoneRequest report = ReportFor(kJob, round);
    const int pid_now = agent.Snapshot().gpus[worker - 10].pid;
    if (pid_now != 0 && pid_now != previous_pid) ++launches_seen;
    if (pid_now != 0) previous_pid = pid_now;
    const auto [model_step, model_checksum] = CheckpointedModel(job_dir);
    switch (round) {
      case 4:
        EXPECT_EQ(report.outcome(), wire::CRASHED);
        EXPECT_EQ(report.exit_code(), -SIGKILL);
        EXPECT_EQ(report.checkpointed_steps(), crashed_at_checkpoint);
        lost_to = ReadExecLog(exec_log).back() + 1;
        break;
      default:
        ASSERT_TRUE(report.outcome() == wire::LEASE_EXPIRED || report.outcome() == wire::COMPLETED)
            << wire::TaskOutcome_Name(report.outcome()) << ": " << report.message();
        completed = report.outcome() == wire::COMPLETED;
        // The scheduler is told exactly what the checkpoint on disk holds.
        EXPECT_EQ(report.checkpointed_steps(), model_step) << "round " << round;
        EXPECT_EQ(model_checksum, ExpectedChecksum(model_step)) << "round " << round;
        break;
    }
    EXPECT_GE(report.checkpointed_steps(), last_checkpointed)
        << "progress went backwards in round " << round;
    last_checkpointed = report.checkpointed_steps();
  }
  // The four scripted rounds and at least one after the kill (leases begin at the iterator's
  // Init, so the interpreter's start-up costs no round its training time).
  EXPECT_GE(round, 5u);

  // ---- The whole life of the job ----
  const auto [final_step, final_checksum] = CheckpointedModel(job_dir);
  EXPECT_EQ(final_step, kTotal);
  EXPECT_EQ(final_checksum, ExpectedChecksum(kTotal));  // every step once, in order
  EXPECT_EQ(last_checkpointed, kTotal);
  // Every step ran; exactly the steps lost with the killed process ran twice.
  const std::vector<std::uint64_t> executed = ReadExecLog(exec_log);
  std::map<std::uint64_t, int> runs;
  for (std::uint64_t step : executed) ++runs[step];
  ASSERT_GT(lost_to, lost_from);
  EXPECT_EQ(executed.size(), kTotal + (lost_to - lost_from));
  for (std::uint64_t step = 0; step < kTotal; ++step) {
    const int expected = step >= lost_from && step < lost_to ? 2 : 1;
    ASSERT_EQ(runs[step], expected) << "step " << step;
  }
  // The agent is idle again, and the job's logs carry one banner per launch.
  WaitFor([&] { return agent.Snapshot().gpus[1].phase == AgentSnapshot::Phase::kIdle; },
          "the process to exit");
  std::ifstream out(dir_ / "v100" / "logs" / "job-5.out");
  std::stringstream text;
  text << out.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("==== gavel:"));
  EXPECT_THAT(text.str(), HasSubstr("\"completed\": true"));
}

TEST_F(AgentProcessTest, StepRateFollowsTheThroughputTableOfTheAgentsGpuType) {
  AgentServer& v100 = StartAgent("v100", 1);  // worker 10
  scheduler_.SetFirstWorkerId(20);
  AgentServer& k80 = StartAgent("k80", 1);  // worker 20
  ASSERT_TRUE(v100.agent().StartRound(Round(1, {Task(10, 1, 100000, 1.5)})).ok());
  ASSERT_TRUE(k80.agent().StartRound(Round(1, {Task(20, 2, 100000, 1.5)})).ok());
  const wire::ReportDoneRequest fast = ReportFor(1, 1);
  const wire::ReportDoneRequest slow = ReportFor(2, 1);
  ASSERT_EQ(fast.outcome(), wire::LEASE_EXPIRED);
  ASSERT_EQ(slow.outcome(), wire::LEASE_EXPIRED);
  const double fast_rate = static_cast<double>(fast.steps_trained()) / fast.training_seconds();
  const double slow_rate = static_cast<double>(slow.steps_trained()) / slow.training_seconds();
  std::cout << "measured steps/s: v100 " << fast_rate << " (table x4: " << 4 * kV100 << "), k80 "
            << slow_rate << " (table x4: " << 4 * kK80 << ")\n";
  // --speedup 4: four times the table's rate, within 10%.
  EXPECT_NEAR(fast_rate, 4 * kV100, 0.1 * 4 * kV100);
  EXPECT_NEAR(slow_rate, 4 * kK80, 0.1 * 4 * kK80);
  // The lease's duration is honoured: about 1.5 s of training, counted from the iterator's
  // Init (the interpreter's start-up is outside the lease), ending at the first
  // step boundary past it, plus the final checkpoint.
  EXPECT_GT(fast.training_seconds(), 1.4);
  EXPECT_LT(fast.training_seconds(), 1.5 + 0.5);
  EXPECT_GE(fast.elapsed_s(), 1.5);
}

TEST_F(AgentProcessTest, CrashOfTheTrainingProgramIsReportedWithItsExitCodeAndStderr) {
  AgentServer& server = StartAgent("p100", 1);
  wire::Task task = Task(10, 3, 1000, 30.0);
  (*task.mutable_job()->mutable_env())["GAVEL_TRAIN_FAIL_AT"] = "10";
  ASSERT_TRUE(server.agent().StartRound(Round(1, {task})).ok());
  const wire::ReportDoneRequest report = ReportFor(3, 1);
  EXPECT_EQ(report.outcome(), wire::CRASHED);
  EXPECT_EQ(report.exit_code(), 3);
  EXPECT_THAT(report.message(), HasSubstr("injected failure at step 10"));
}

TEST_F(AgentProcessTest, MissingProgramIsALaunchFailure) {
  AgentServer& server = StartAgent("p100", 1);
  wire::Task task = Task(10, 4, 1000, 30.0);
  task.mutable_job()->set_command(0, "gavel-no-such-interpreter");
  ASSERT_TRUE(server.agent().StartRound(Round(1, {task})).ok());
  const wire::ReportDoneRequest report = ReportFor(4, 1);
  EXPECT_EQ(report.outcome(), wire::LAUNCH_FAILED);
  EXPECT_THAT(report.message(), HasSubstr("gavel-no-such-interpreter"));
}

TEST_F(AgentProcessTest, ShutdownTerminatesTheJobWhichCheckpointsFirst) {
  AgentServer& server = StartAgent("v100", 1);
  ASSERT_TRUE(server.agent().StartRound(Round(1, {Task(10, 6, 100000, 60.0)})).ok());
  const fs::path exec_log = dir_ / "exec-6.log";
  WaitFor([&] { return ReadExecLog(exec_log).size() >= 20; }, "training");
  server.Shutdown(Seconds(2.0));
  const wire::ReportDoneRequest report = ReportFor(6, 1);
  EXPECT_EQ(report.outcome(), wire::KILLED);
  EXPECT_THAT(report.message(), HasSubstr("agent shutting down"));
  // SIGTERM made the iterator checkpoint the steps it had done and report them.
  const auto [step, checksum] = CheckpointedModel(dir_ / "checkpoints" / "job-6");
  EXPECT_GE(step, 20u);
  EXPECT_EQ(checksum, ExpectedChecksum(step));
  EXPECT_EQ(report.checkpointed_steps(), step);
}

}  // namespace
}  // namespace gavel::agent
