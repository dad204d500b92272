// The pilot keeper on a fake Slurm: one pilot per (schedulable node, GPU type), adopted and
// not doubled by a restarted keeper, replaced when Slurm ends it, none for drained nodes or
// nodes outside the partition. The pilot's batch script is run by /bin/sh with a stand-in for
// `gavel` that writes its arguments, so what the agent would be started with is observed, not
// read back from the script text.
#include "gavel/slurm/pilots.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "gavel/slurm/fake_slurm.h"

namespace gavel::slurm {
namespace {

namespace fs = std::filesystem;

SlurmNode Node(std::string name, std::string gres, bool schedulable = true,
               std::vector<std::string> partitions = {"gpu"}) {
  return {std::move(name), schedulable ? "IDLE" : "DOWN", schedulable, std::move(gres),
          std::move(partitions)};
}

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gavel_pilots_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

PilotOptions Options(const std::string& root) {
  PilotOptions options;
  options.gavel_binary = root + "/bin/gavel";
  options.scheduler_address = "127.0.0.1:5000";
  options.work_root = root + "/slurm";
  options.name_prefix = NamePrefixFor(root + "/state");
  return options;
}

TEST(PlanPilots, OnePerSchedulableNodeAndTypeInThePartition) {
  std::vector<std::string> skipped;
  const std::vector<Pilot> pilots = PlanPilots(
      {Node("a", "gpu:k80:2"), Node("b", "gpu:v100:1,gpu:k80:3(S:0)"),
       Node("c", "gpu:v100:4", /*schedulable=*/false), Node("d", "gpu:v100:4", true, {"cpu"}),
       Node("e", "gpu:2"), Node("f", "(null)")},
      "gpu", "p", &skipped);
  EXPECT_EQ(pilots, (std::vector<Pilot>{{"a", "k80", 2, "p.a.k80"},
                                        {"b", "v100", 1, "p.b.v100"},
                                        {"b", "k80", 3, "p.b.k80"}}));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("node e"), std::string::npos) << skipped[0];
  // No partition: every schedulable node.
  EXPECT_EQ(PlanPilots({Node("d", "gpu:v100:4", true, {"cpu"})}, "", "p", nullptr).size(), 1u);
}

TEST(NamePrefixFor, IsStablePerStateDirectoryAndDiffersBetweenThem) {
  EXPECT_EQ(NamePrefixFor("/srv/gavel"), NamePrefixFor("/srv/gavel"));
  EXPECT_NE(NamePrefixFor("/srv/gavel"), NamePrefixFor("/srv/gavel2"));
  // FNV-1a of the empty string is its offset basis: the hash is the published one.
  EXPECT_EQ(NamePrefixFor(""), "gavel-811c9dc5");
}

TEST(PilotKeeper, SubmitsMissingPilotsOnceAdoptsLiveOnesAndReplacesEndedOnes) {
  TempDir dir;
  FakeSlurm slurm;
  slurm.nodes = {Node("a", "gpu:k80:2"), Node("b", "gpu:v100:1,gpu:k80:1")};
  const PilotOptions options = Options(dir.path);
  {
    PilotKeeper keeper(&slurm, options, nullptr);
    EXPECT_EQ(*keeper.ReconcileOnce(), 3);
    EXPECT_EQ(*keeper.ReconcileOnce(), 0) << "pilots pending in Slurm are not doubled";
  }
  // A new keeper (the daemon restarted after kill -9) adopts the pilots Slurm still holds.
  PilotKeeper keeper(&slurm, options, nullptr);
  EXPECT_EQ(*keeper.ReconcileOnce(), 0);
  // Slurm ended one (its node failed, its time ran out): it is replaced, the others are not.
  ASSERT_TRUE(slurm.Signal(slurm.jobs[1].id, 9).ok());
  EXPECT_EQ(*keeper.ReconcileOnce(), 1);
  ASSERT_EQ(slurm.submitted.size(), 4u);
  EXPECT_EQ(slurm.submitted[3].name, slurm.submitted[1].name);
  // A drained node gets no new pilot.
  slurm.nodes[0].schedulable = false;
  ASSERT_TRUE(slurm.Signal(slurm.jobs[0].id, 9).ok());
  EXPECT_EQ(*keeper.ReconcileOnce(), 0);
  // Each submission asks for exactly its node's GPUs of its type, requeueable.
  std::map<std::string, std::string> tres;
  for (const BatchJob& job : slurm.submitted) {
    tres[job.node + "/" + job.name] = job.tres_per_node;
    EXPECT_TRUE(job.requeue);
    EXPECT_TRUE(fs::is_directory(job.work_dir)) << job.work_dir;
  }
  EXPECT_EQ(tres.at("a/" + PilotName(options.name_prefix, "a", "k80")), "gres:gpu:k80:2");
  EXPECT_EQ(tres.at("b/" + PilotName(options.name_prefix, "b", "v100")), "gres:gpu:v100:1");
  EXPECT_EQ(tres.at("b/" + PilotName(options.name_prefix, "b", "k80")), "gres:gpu:k80:1");
}

TEST(PilotKeeper, OneRefusedPilotDoesNotKeepTheOthersOut) {
  TempDir dir;
  FakeSlurm slurm;
  slurm.nodes = {Node("a", "gpu:k80:2"), Node("b", "gpu:v100:1"), Node("c", "gpu:p100:1")};
  slurm.refuse_node = "a";
  PilotKeeper keeper(&slurm, Options(dir.path), nullptr);
  Result<int> pass = keeper.ReconcileOnce();
  ASSERT_FALSE(pass.ok());
  EXPECT_NE(pass.status().message().find("refused"), std::string::npos);
  ASSERT_EQ(slurm.submitted.size(), 2u);
  EXPECT_EQ(slurm.submitted[0].node, "b");
  EXPECT_EQ(slurm.submitted[1].node, "c");
  slurm.refuse_node.clear();  // Slurm takes it on a later pass
  EXPECT_EQ(*keeper.ReconcileOnce(), 1);
}

TEST(PilotKeeper, CancelPilotsStopsRunningOnesGentlyAndOnlyItsOwn) {
  TempDir dir;
  FakeSlurm slurm;
  slurm.nodes = {Node("a", "gpu:k80:2"), Node("b", "gpu:v100:1")};
  const PilotOptions options = Options(dir.path);
  PilotKeeper keeper(&slurm, options, nullptr);
  ASSERT_EQ(*keeper.ReconcileOnce(), 2);
  slurm.jobs[0].state = "RUNNING";                         // a's pilot runs, b's is pending
  slurm.jobs.push_back({7, "gavel-other.a.k80", "RUNNING", true, "a"});  // another daemon's
  slurm.jobs.push_back({8, "user-job", "RUNNING", true, "a"});
  EXPECT_EQ(*keeper.CancelPilots(Seconds(5.0)), 2);
  // The running pilot's batch script got SIGTERM (its agent checkpoints its jobs), nothing
  // else was signalled; the pending one was cancelled outright.
  EXPECT_EQ(slurm.signals,
            (std::vector<std::tuple<std::uint32_t, long, int>>{{slurm.jobs[0].id, -1, SIGTERM}}));
  EXPECT_FALSE(slurm.jobs[0].active);
  EXPECT_FALSE(slurm.jobs[1].active);
  EXPECT_TRUE(slurm.jobs[2].active);
  EXPECT_TRUE(slurm.jobs[3].active);
}

TEST(PilotKeeper, CancelPilotsKillsAPilotThatOutlivesTheGrace) {
  TempDir dir;
  FakeSlurm slurm;
  slurm.nodes = {Node("a", "gpu:k80:2")};
  slurm.batch_ends_on_sigterm = false;  // an agent stuck in shutdown
  PilotKeeper keeper(&slurm, Options(dir.path), nullptr);
  ASSERT_EQ(*keeper.ReconcileOnce(), 1);
  slurm.jobs[0].state = "RUNNING";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(*keeper.CancelPilots(Seconds(0.5)), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_FALSE(slurm.jobs[0].active) << "cancelled after the grace";
}

// Runs the pilot's script under /bin/sh with `gavel` (at `binary`) replaced by a script that
// writes its arguments one per line to <scratch>/args; returns them.
std::vector<std::string> RunPilotScript(const BatchJob& job, const std::string& binary,
                                        const std::string& scratch, const char* visible_devices) {
  fs::create_directories(fs::path(binary).parent_path());
  const std::string args_file = scratch + "/args";
  {
    std::ofstream fake(binary);
    fake << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '" << args_file << "'\n";
  }
  fs::permissions(binary, fs::perms::owner_all);
  const std::string script = scratch + "/pilot.sh";
  std::ofstream(script) << job.script;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (visible_devices != nullptr) {
      ::setenv("CUDA_VISIBLE_DEVICES", visible_devices, 1);
    } else {
      ::unsetenv("CUDA_VISIBLE_DEVICES");
    }
    ::execl("/bin/sh", "sh", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::vector<std::string> args;
  std::ifstream in(args_file);
  for (std::string line; std::getline(in, line);) args.push_back(line);
  return args;
}

TEST(PilotJob, StartsTheAgentOnTheDevicesSlurmBound) {
  TempDir dir;
  PilotOptions options = Options(dir.path + "/it's here");  // a quote in a path survives
  options.token_file = dir.path + "/agent token";
  const Pilot pilot{"n1", "v100", 2, "x.n1.v100"};
  const BatchJob job = PilotJob(pilot, options);
  const std::vector<std::string> args =
      RunPilotScript(job, options.gavel_binary, dir.path, "3,5");
  const std::string work = options.work_root + "/n1.v100";
  EXPECT_EQ(args, (std::vector<std::string>{"worker", "--scheduler", "127.0.0.1:5000", "--type",
                                            "v100", "--gpus", "2", "--work-dir", work,
                                            "--kill-grace-seconds", "10.000000", "--launch", "slurm-step",
                                            "--token-file",
                                            options.token_file, "--visible-devices", "3,5"}));
  EXPECT_EQ(job.work_dir, work);
  EXPECT_EQ(job.node, "n1");
  // Without device files Slurm sets no CUDA_VISIBLE_DEVICES: the agent numbers its GPUs.
  options.token_file.clear();
  const std::vector<std::string> plain =
      RunPilotScript(PilotJob(pilot, options), options.gavel_binary, dir.path, nullptr);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.back(), "slurm-step");
}

}  // namespace
}  // namespace gavel::slurm
