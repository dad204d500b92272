// `gavel worker` as a process: it registers with a (fake) scheduler, writes agent.json,
// heartbeats at --heartbeat-seconds, keeps its agent id across restarts, stops cleanly on
// SIGTERM, and refuses bad options with a message naming the option.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "gavel/agent/fake_scheduler_server.h"
#include "gavel/agent/process.h"

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class WorkerCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gavel_worker_command_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = scheduler_.Start();
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Starts `gavel worker <args>`; its output goes to <dir>/<name>.out|.err.
  std::unique_ptr<agent::Process> Launch(const std::string& name, std::vector<std::string> args) {
    agent::LaunchSpec spec;
    spec.argv = {GAVEL_BINARY, "worker"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.working_directory = dir_.string();
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.stdout_path = (dir_ / (name + ".out")).string();
    spec.stderr_path = (dir_ / (name + ".err")).string();
    auto process = launcher_.Launch(spec);
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    return process.ok() ? std::move(process).value() : nullptr;
  }

  static std::optional<agent::ExitStatus> WaitExit(agent::Process& process, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto exit = process.PollExit()) return exit;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

  template <class Predicate>
  static bool Eventually(Predicate done, double seconds = 15.0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  fs::path dir_;
  agent::testing::FakeSchedulerServer scheduler_;
  agent::PosixProcessLauncher launcher_;
  int port_ = 0;
};

TEST_F(WorkerCommandTest, RegistersHeartbeatsKeepsItsIdAndStopsOnSigterm) {
  const std::string work = (dir_ / "work").string();
  const std::vector<std::string> args = {"--scheduler",
                                         "127.0.0.1:" + std::to_string(port_),
                                         "--type",
                                         "v100",
                                         "--gpus",
                                         "2",
                                         "--work-dir",
                                         work,
                                         "--heartbeat-seconds",
                                         "0.1"};
  auto worker = Launch("first", args);
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(Eventually([&] { return fs::exists(fs::path(work) / "agent.json"); }));
  const std::string agent_id = ReadFile(fs::path(work) / "agent_id")
                                   .substr(0, ReadFile(fs::path(work) / "agent_id").find('\n'));
  EXPECT_THAT(agent_id, HasSubstr("-v100-"));
  const std::string info = ReadFile(fs::path(work) / "agent.json");
  EXPECT_THAT(info, HasSubstr("\"agent_id\": \"" + agent_id + "\""));
  EXPECT_THAT(info, HasSubstr("\"iterator_url\": \"http://127.0.0.1:"));
  ASSERT_TRUE(Eventually([&] { return !scheduler_.registrations().empty(); }));
  EXPECT_EQ(scheduler_.registrations()[0].agent_id(), agent_id);
  EXPECT_EQ(scheduler_.registrations()[0].num_gpus(), 2u);
  // --heartbeat-seconds 0.1 overrides the scheduler's 0.2 s.
  const std::size_t before = scheduler_.heartbeats();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_GE(scheduler_.heartbeats() - before, 6u);

  worker->SignalGroup(SIGTERM);
  const auto exit = WaitExit(*worker, 15.0);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0);
  EXPECT_THAT(ReadFile(dir_ / "first.out"), HasSubstr("gavel worker: stopped"));

  // A restarted worker keeps its id (and so its worker ids).
  auto again = Launch("second", args);
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(Eventually([&] { return scheduler_.registrations().size() >= 2; }));
  EXPECT_EQ(scheduler_.registrations()[1].agent_id(), agent_id);
  again->SignalGroup(SIGINT);
  ASSERT_TRUE(WaitExit(*again, 15.0).has_value());
}

TEST_F(WorkerCommandTest, BadOptionsAreRefusedNamingTheOption) {
  auto bad_address = Launch(
      "bad1", {"--scheduler", "nonsense", "--type", "v100", "--work-dir", (dir_ / "w").string()});
  ASSERT_NE(bad_address, nullptr);
  auto exit = WaitExit(*bad_address, 15.0);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 1);
  EXPECT_THAT(ReadFile(dir_ / "bad1.err"), HasSubstr("--scheduler"));

  auto bad_token =
      Launch("bad2", {"--scheduler", "127.0.0.1:1", "--type", "v100", "--work-dir",
                      (dir_ / "w").string(), "--token-file", (dir_ / "missing-token").string()});
  ASSERT_NE(bad_token, nullptr);
  exit = WaitExit(*bad_token, 15.0);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 1);
  EXPECT_THAT(ReadFile(dir_ / "bad2.err"), HasSubstr("missing-token"));

  auto no_type = Launch("bad3", {"--work-dir", (dir_ / "w").string()});
  ASSERT_NE(no_type, nullptr);
  exit = WaitExit(*no_type, 15.0);
  ASSERT_TRUE(exit.has_value());
  EXPECT_NE(exit->code, 0);
  EXPECT_THAT(ReadFile(dir_ / "bad3.err"), HasSubstr("--type"));

  // Job leases as Slurm steps need the allocation the worker runs in (docs/slurm.md).
  auto no_slurm = Launch("bad4", {"--scheduler", "127.0.0.1:1", "--type", "v100", "--work-dir",
                                  (dir_ / "w").string(), "--launch", "slurm-step"});
  ASSERT_NE(no_slurm, nullptr);
  exit = WaitExit(*no_slurm, 15.0);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 1);
  EXPECT_THAT(ReadFile(dir_ / "bad4.err"), HasSubstr("--launch slurm-step: SLURM_JOB_ID is ''"));
  auto bad_launch = Launch("bad5", {"--scheduler", "127.0.0.1:1", "--type", "v100",
                                    "--work-dir", (dir_ / "w").string(), "--launch", "ssh"});
  ASSERT_NE(bad_launch, nullptr);
  exit = WaitExit(*bad_launch, 15.0);
  ASSERT_TRUE(exit.has_value());
  EXPECT_NE(exit->code, 0);
  EXPECT_THAT(ReadFile(dir_ / "bad5.err"), HasSubstr("--launch"));

  // Numbers outside their documented bounds (docs/formats.md, "Bounds").
  // The flag, the value and the bound: CLI11's own conversion errors name the flag too.
  const std::vector<std::tuple<std::string, std::string, std::string>> numbers = {
      {"--gpus", "-3", "is not an integer in [1, 1000000]"},
      {"--gpus", "1e9", "is not an integer in [1, 1000000]"},
      {"--iterator-port", "70000", "is not an integer in [0, 65535]"},
      {"--heartbeat-seconds", "1e-9", "is outside [0.001, 86400] s"},
      {"--kill-grace-seconds", "nan", "is not a finite number"}};
  int n = 0;
  for (const auto& [flag, value, bound] : numbers) {
    const std::string name = "bad_number" + std::to_string(n++);
    auto bad = Launch(name, {"--scheduler", "127.0.0.1:1", "--type", "v100", "--work-dir",
                             (dir_ / "w").string(), flag, value});
    ASSERT_NE(bad, nullptr);
    exit = WaitExit(*bad, 15.0);
    ASSERT_TRUE(exit.has_value()) << flag;
    EXPECT_NE(exit->code, 0) << flag;
    EXPECT_THAT(ReadFile(dir_ / (name + ".err")),
                HasSubstr(flag + ": `" + value + "` " + bound))
        << flag << " " << value;
  }
}

TEST_F(WorkerCommandTest, AWorkerWhoseTokenIsRefusedExitsInsteadOfRetryingForEver) {
  // Regression: a non-admin (here: unknown) token made `gavel worker` retry for ever.
  agent::testing::FakeSchedulerServer guarded("the-admin-token");
  const int port = guarded.Start();
  ASSERT_GT(port, 0);
  std::ofstream(dir_ / "user-token") << "not-the-admin-token alice\n";
  auto worker = Launch("refused", {"--scheduler", "127.0.0.1:" + std::to_string(port), "--type",
                                   "v100", "--work-dir", (dir_ / "w").string(), "--token-file",
                                   (dir_ / "user-token").string()});
  ASSERT_NE(worker, nullptr);
  const auto exit = WaitExit(*worker, 20.0);
  ASSERT_TRUE(exit.has_value()) << "the worker is still retrying";
  EXPECT_EQ(exit->code, 1);
  EXPECT_THAT(ReadFile(dir_ / "refused.err"), HasSubstr("refused"));
  EXPECT_THAT(ReadFile(dir_ / "refused.err"), HasSubstr("admin"));
  EXPECT_TRUE(guarded.registrations().empty());
}

}  // namespace
}  // namespace gavel::cli
