// Real PyTorch training jobs end to end, labelled "slow": `gavel serve`, two
// `gavel worker` agents of one GPU each, and examples/training/ddp_train.py — the copyable
// DistributedDataParallel script, gloo on CPU — as a single-rank job and as a 2-rank job whose
// ranks run on the two agents (a job spanning two hosts). Mid-run an agent is killed with
// its jobs (kill -9, a host dying) and restarted, then the daemon is killed (kill -9) and
// restarted. Truths checked:
//   * both jobs finish with exactly their total steps, and their final weights are
//     bit-identical (torch.equal on every tensor) to an uninterrupted run of the same script
//     outside Gavel, launched as torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT);
//   * so every rank of the 2-rank job stopped at the same step under every lease (a rank
//     stopping alone would have left the other blocked, or trained steps the other did not);
//   * start-up (importing torch) is measured per job and not counted as a crash;
//   * `gavel logs` shows the 2-rank job's output from both agents, launch by launch.
// Installs nothing: python3-torch comes from scripts/install-deps.sh. Skipped (saying why)
// only when no python3 can import torch.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "gavel/daemon/e2e_cluster.h"

namespace gavel::daemon {
namespace {

constexpr double kTorchRoundSeconds = 4.0;

// A python3 that can import torch: $GAVEL_TEST_PYTHON, else python3 on PATH, else Debian's.
// Empty when none can.
std::string PythonWithTorch() {
  std::vector<std::string> candidates;
  if (const char* given = std::getenv("GAVEL_TEST_PYTHON")) candidates.emplace_back(given);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& python : candidates) {
    const std::string probe = "'" + python + "' -c 'import torch, torch.distributed' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      if (python.find('/') != std::string::npos) return python;
      // The agent resolves argv[0] through its own PATH: give it the absolute path.
      const std::string which = "command -v " + python;
      FILE* pipe = ::popen(which.c_str(), "r");
      char buffer[4096] = {0};
      std::string path;
      if (pipe != nullptr && std::fgets(buffer, sizeof(buffer), pipe) != nullptr) path = buffer;
      if (pipe != nullptr) ::pclose(pipe);
      while (!path.empty() && std::isspace(static_cast<unsigned char>(path.back()))) path.pop_back();
      if (!path.empty()) return path;
    }
  }
  return "";
}

std::string Script() { return std::string(GAVEL_SOURCE_DIR) + "/examples/training/ddp_train.py"; }
std::string PythonPath() { return std::string(GAVEL_SOURCE_DIR) + "/python"; }

// Runs the script outside Gavel as torchrun would, `world` ranks, to `steps`; waits.
void RunUninterrupted(const std::string& python, const std::string& dir, int world,
                      std::uint64_t steps, int port, const std::string& out) {
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < world; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("PYTHONPATH", PythonPath().c_str(), 1);
      ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
      ::setenv("OMP_NUM_THREADS", "1", 1);
      ::setenv("GAVEL_CHECKPOINT_DIR", (dir + "/ckpt").c_str(), 1);
      ::unsetenv("GAVEL_AGENT_URL");
      const std::string log = dir + "/rank-" + std::to_string(rank) + ".log";
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const std::string steps_arg = std::to_string(steps);
      ::execl(python.c_str(), python.c_str(), Script().c_str(), "--steps", steps_arg.c_str(),
              "--out", out.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ranks.push_back(pid);
  }
  for (pid_t pid : ranks) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "reference rank exited with " << status << ": " << ReadFile(dir + "/rank-0.log");
  }
}

// Whether two torch.save'd state dicts hold bit-identical tensors (torch.equal on each).
bool SameWeights(const std::string& python, const std::string& a, const std::string& b,
                 const std::string& report) {
  const std::string code =
      "import sys, torch\n"
      "a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])\n"
      "same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)\n"
      "print('same' if same else 'different: %s' % [k for k in a if k in b and not "
      "torch.equal(a[k], b[k])])\n"
      "sys.exit(0 if same else 1)\n";
  const std::string script = report + ".py";
  std::ofstream(script) << code;
  const std::string command = "'" + python + "' '" + script + "' '" + a + "' '" + b + "' >'" +
                              report + "' 2>&1";
  return std::system(command.c_str()) == 0;
}

wire::JobSpec TorchJob(const std::string& python, const std::string& dir, std::uint64_t steps,
                       std::uint32_t ranks, const std::string& name) {
  wire::JobSpec spec;
  for (const std::string& arg :
       {python, Script(), std::string("--out"), dir + "/" + name + ".pt"}) {
    spec.add_command(arg);
  }
  spec.set_total_steps(steps);
  spec.set_scale_factor(ranks);
  spec.set_job_type("ddp-example");  // not in the table: the prior below is the estimate
  spec.set_name(name);
  (*spec.mutable_throughputs())["v100"] = 40.0;  // a guess, low: measurements take over
  (*spec.mutable_env())["PYTHONPATH"] = PythonPath();
  (*spec.mutable_env())["PYTHONDONTWRITEBYTECODE"] = "1";
  (*spec.mutable_env())["OMP_NUM_THREADS"] = "1";
  // scripts/gpu-check.sh runs this test on a GPU (the reference runs inherit it).
  if (const char* device = std::getenv("GAVEL_TRAIN_DEVICE")) {
    (*spec.mutable_env())["GAVEL_TRAIN_DEVICE"] = device;
  }
  return spec;
}

const wire::JobInfo* Find(const wire::ListJobsResponse& jobs, std::uint64_t id) {
  for (const wire::JobInfo& job : jobs.jobs()) {
    if (job.id() == id) return &job;
  }
  return nullptr;
}

// Polls until `ready` holds for the job list (or `limit` passes); returns whether it did.
bool WaitFor(Cluster& cluster, std::chrono::seconds limit,
             const std::function<bool(const wire::ListJobsResponse&)>& ready) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    auto jobs = cluster.Jobs();
    if (jobs.ok() && ready(*jobs)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return false;
}

TEST(TorchEndToEnd, SingleAndTwoRankDdpJobsSurviveKillsWithExactStepsAndWeights) {
  const std::string python = PythonWithTorch();
  if (python.empty()) {
    GTEST_SKIP() << "no python3 here can import torch (Debian's python3-torch; "
                    "scripts/install-deps.sh installs it)";
  }
  constexpr std::uint64_t kSingleSteps = 1500;
  constexpr std::uint64_t kDdpSteps = 1200;

  Cluster cluster("torch", kTorchRoundSeconds);
  const std::string dir = cluster.dir();

  // ---- The truth: uninterrupted runs of the same script ----
  fs::create_directories(dir + "/ref1");
  fs::create_directories(dir + "/ref2");
  std::thread single_ref([&] {
    RunUninterrupted(python, dir + "/ref1", 1, kSingleSteps, 29611, dir + "/ref1/final.pt");
  });
  RunUninterrupted(python, dir + "/ref2", 2, kDdpSteps, 29612, dir + "/ref2/final.pt");
  single_ref.join();
  ASSERT_TRUE(fs::exists(dir + "/ref1/final.pt") && fs::exists(dir + "/ref2/final.pt"));

  // ---- The same jobs on the runtime: two agents, one GPU each ----
  cluster.StartDaemon(/*expected_gpus=*/2);
  cluster.StartAgent("v100", "", 1, "a");
  cluster.StartAgent("v100", "", 1, "b");
  auto single = cluster.SubmitSpec(TorchJob(python, dir, kSingleSteps, 1, "single"));
  auto ddp = cluster.SubmitSpec(TorchJob(python, dir, kDdpSteps, 2, "ddp"));
  ASSERT_TRUE(single.ok() && ddp.ok()) << single.status().ToString() << ddp.status().ToString();

  // Some checkpointed progress on the 2-rank job, then a host dies with its processes.
  ASSERT_TRUE(WaitFor(cluster, std::chrono::seconds(240), [&](const wire::ListJobsResponse& j) {
    const wire::JobInfo* job = Find(j, *ddp);
    return job != nullptr && job->steps_done() > 0;
  })) << cluster.Cli({"jobs", "--scheduler", cluster.address(), "--all"}).second;
  cluster.StopAgent("b", /*kill_jobs=*/true);
  std::this_thread::sleep_for(std::chrono::seconds(4));  // declared dead (3 s timeout)
  cluster.StartAgent("v100", "", 1, "b");  // the same host back (same work directory and id)

  // More progress, then the daemon dies and comes back on its state.
  std::uint64_t before_daemon_kill = 0;
  ASSERT_TRUE(WaitFor(cluster, std::chrono::seconds(240), [&](const wire::ListJobsResponse& j) {
    const wire::JobInfo* s = Find(j, *single);
    const wire::JobInfo* d = Find(j, *ddp);
    if (s == nullptr || d == nullptr) return false;
    before_daemon_kill = s->steps_done() + d->steps_done();
    return d->attempts() >= 2 && before_daemon_kill > 0;
  })) << cluster.Cli({"jobs", "--scheduler", cluster.address(), "--all"}).second;
  cluster.KillDaemon();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  cluster.StartDaemon(/*expected_gpus=*/2);

  ASSERT_TRUE(WaitFor(cluster, std::chrono::seconds(400), AllFinished))
      << cluster.Cli({"jobs", "--scheduler", cluster.address(), "--all"}).second;
  const auto jobs = cluster.Jobs();
  ASSERT_TRUE(jobs.ok());
  for (const auto& [id, steps, name, ref] :
       {std::tuple(*single, kSingleSteps, "single", "ref1"),
        std::tuple(*ddp, kDdpSteps, "ddp", "ref2")}) {
    const wire::JobInfo* job = Find(*jobs, id);
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->state(), wire::DONE) << job->DebugString();
    EXPECT_EQ(job->steps_done(), steps) << name;
    EXPECT_GT(job->startup_total_s(), 0.0) << name << ": start-up (import torch) is measured";
    const std::string report = dir + "/" + name + ".compare";
    EXPECT_TRUE(SameWeights(python, dir + "/" + name + ".pt", dir + "/" + std::string(ref) +
                                                                  "/final.pt", report))
        << name << ": " << ReadFile(report);
  }
  // The host kill ended the 2-rank job's processes: a restart, and no crash for it.
  const wire::JobInfo* ddp_info = Find(*jobs, *ddp);
  ASSERT_NE(ddp_info, nullptr);
  EXPECT_GE(ddp_info->attempts(), 2u);

  // `gavel logs`: the 2-rank job's output from both hosts, launches marked.
  const auto [code, logs] = cluster.Cli({"logs", "--scheduler", cluster.address(),
                                         std::to_string(*ddp)});
  EXPECT_EQ(code, 0) << logs;
  EXPECT_NE(logs.find("on a]"), std::string::npos) << logs;
  EXPECT_NE(logs.find("on b]"), std::string::npos) << logs;
  EXPECT_NE(logs.find("attempt 0"), std::string::npos) << logs;
  EXPECT_NE(logs.find("loop ended at step " + std::to_string(kDdpSteps) + " (complete)"),
            std::string::npos)
      << logs;
  const auto [rank_code, rank1] = cluster.Cli({"logs", "--scheduler", cluster.address(),
                                               std::to_string(*ddp), "--rank", "1"});
  EXPECT_EQ(rank_code, 0);
  EXPECT_EQ(rank1.find("[rank 0"), std::string::npos) << rank1;
  EXPECT_NE(rank1.find("[rank 1"), std::string::npos) << rank1;
}

}  // namespace
}  // namespace gavel::daemon
