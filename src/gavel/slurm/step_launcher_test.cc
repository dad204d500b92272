// The step launcher on fakes (agent/fakes.h's process launcher, fake_slurm.h's Slurm): what
// srun is started with, and where each signal goes — to the step through slurmctld (so srun
// does not turn SIGTERM into SIGKILL), to srun when the step is unknown or slurmctld is down,
// to both for SIGKILL. The launcher on a real Slurm is checked by backend_e2e_test.sh.
#include "gavel/slurm/step_launcher.h"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <gtest/gtest.h>

#include "gavel/agent/fakes.h"
#include "gavel/slurm/fake_slurm.h"

namespace gavel::slurm {
namespace {

namespace fs = std::filesystem;

agent::LaunchSpec Spec() {
  agent::LaunchSpec spec;
  spec.argv = {"/usr/bin/python3", "train.py", "--steps", "--"};
  spec.working_directory = "/runs";
  spec.env = {{"PATH", "/bin"}, {"GAVEL_JOB_ID", "7"}, {"GAVEL_ROUND_ID", "12"},
              {"GAVEL_WORKER_ID", "3"}};
  spec.stdout_path = "/logs/job-7.out";
  spec.stderr_path = "/logs/job-7.err";
  return spec;
}

struct Rig {
  Rig() {
    auto process_launcher = std::make_unique<agent::testing::FakeProcessLauncher>();
    auto fake_slurm = std::make_unique<FakeSlurm>();
    processes = process_launcher.get();
    slurm = fake_slurm.get();
    launcher = std::make_unique<SlurmStepLauncher>(
        StepLaunchOptions{"/usr/bin/srun", 41, "gpu:k80:1"}, std::move(process_launcher),
        std::move(fake_slurm));
  }
  agent::testing::FakeProcessLauncher* processes;
  FakeSlurm* slurm;
  std::unique_ptr<SlurmStepLauncher> launcher;
};

TEST(SlurmStepLauncher, RunsTheJobThroughSrunAsANamedStepWithOneGpu) {
  Rig rig;
  ASSERT_TRUE(rig.launcher->Launch(Spec()).ok());
  ASSERT_EQ(rig.processes->num_launched(), 1u);
  const agent::LaunchSpec started = rig.processes->process(0).spec;
  EXPECT_EQ(started.argv,
            (std::vector<std::string>{"/usr/bin/srun", "--jobid=41",
                                      "--job-name=gavel-job-7.round-12.worker-3", "--nodes=1",
                                      "--ntasks=1", "--cpus-per-task=1", "--gres=gpu:k80:1",
                                      "--export=ALL", "--quiet", "--", "/usr/bin/python3",
                                      "train.py", "--steps", "--"}));
  // Everything else is the agent's launch, unchanged: srun passes it on to the step.
  const agent::LaunchSpec original = Spec();
  EXPECT_EQ(started.env, original.env);
  EXPECT_EQ(started.working_directory, original.working_directory);
  EXPECT_EQ(started.stdout_path, original.stdout_path);
  EXPECT_EQ(started.stderr_path, original.stderr_path);
}

TEST(SlurmStepLauncher, SigtermGoesToTheNewestStepOfItsNameNotToSrun) {
  Rig rig;
  Result<std::unique_ptr<agent::Process>> process = rig.launcher->Launch(Spec());
  ASSERT_TRUE(process.ok());
  rig.slurm->steps = {{41, 2, "gavel-job-7.round-12.worker-3", "gres:gpu:k80:1", "n"},
                      {41, 5, "gavel-job-7.round-12.worker-3", "gres:gpu:k80:1", "n"},
                      {41, 6, "gavel-job-8.round-12.worker-4", "gres:gpu:k80:1", "n"},
                      {42, 9, "gavel-job-7.round-12.worker-3", "gres:gpu:k80:1", "n"}};
  (*process)->SignalGroup(SIGTERM);
  EXPECT_EQ(rig.slurm->signals,
            (std::vector<std::tuple<std::uint32_t, long, int>>{{41, 5, SIGTERM}}));
  EXPECT_TRUE(rig.processes->process(0).signals.empty()) << "srun would SIGKILL the step";
  // SIGKILL: the step and srun both.
  (*process)->SignalGroup(SIGKILL);
  EXPECT_EQ(rig.slurm->signals.back(), std::make_tuple(41u, 5L, SIGKILL));
  EXPECT_EQ(rig.processes->process(0).signals, std::vector<int>{SIGKILL});
  // Once srun is gone nothing is signalled any more.
  const std::size_t sent = rig.slurm->signals.size();
  (*process)->SignalGroup(SIGTERM);
  EXPECT_EQ(rig.slurm->signals.size(), sent);
}

TEST(SlurmStepLauncher, AStepSlurmDoesNotListOrCannotBeAskedAboutIsEndedThroughSrun) {
  Rig rig;
  rig.processes->set_exits_on_sigterm(false);
  Result<std::unique_ptr<agent::Process>> process = rig.launcher->Launch(Spec());
  ASSERT_TRUE(process.ok());
  (*process)->SignalGroup(SIGTERM);  // srun is still creating the step
  EXPECT_TRUE(rig.slurm->signals.empty());
  EXPECT_EQ(rig.processes->process(0).signals, std::vector<int>{SIGTERM});
  rig.slurm->steps = {{41, 0, "gavel-job-7.round-12.worker-3", "", "n"}};
  rig.slurm->unreachable = true;
  (*process)->SignalGroup(SIGUSR1);
  EXPECT_EQ(rig.processes->process(0).signals, (std::vector<int>{SIGTERM, SIGUSR1}));
}

TEST(StepLaunchOptionsFor, NeedsTheAllocationsJobIdAndSrun) {
  std::string pattern = (fs::temp_directory_path() / "gavel_step_XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  EXPECT_FALSE(StepLaunchOptionsFor(nullptr, dir, "k80").ok());
  const Result<StepLaunchOptions> bad = StepLaunchOptionsFor("12x", dir, "k80");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SLURM_JOB_ID is '12x'"), std::string::npos);
  const Result<StepLaunchOptions> no_srun = StepLaunchOptionsFor("12", dir, "k80");
  ASSERT_FALSE(no_srun.ok());
  EXPECT_NE(no_srun.status().message().find("srun"), std::string::npos) << no_srun.status().message();
  std::ofstream(dir + "/srun") << "#!/bin/sh\n";
  fs::permissions(dir + "/srun", fs::perms::owner_all);
  const Result<StepLaunchOptions> good = StepLaunchOptionsFor("12", "/nonexistent:" + dir, "v100");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->job_id, 12u);
  EXPECT_EQ(good->srun, dir + "/srun");
  EXPECT_EQ(good->gpu_gres, "gpu:v100:1");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gavel::slurm
