// The end-to-end tests' cluster on loopback (test-only; included by e2e_test.cc and
// torch_e2e_test.cc, one translation unit each): `gavel serve` and `gavel worker`s as real
// processes in a temporary directory, with helpers to submit, list, run the CLI and read
// checkpoints. Not thread-safe: one test thread drives it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gavel/core/shipped_table.h"
#include "gavel/daemon/child_process.h"
#include "gavel/iterator/gavel_iterator.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/wire/scheduler.grpc.pb.h"

namespace gavel::daemon {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kRoundSeconds = 2.0;

// ------------------------------------------------------------------------------------------
// Processes.

using Process = ChildProcess;

// The direct children of `pid` (from /proc).
inline std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) children.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return children;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// train.py's checksum: c_{k+1} = (c_k * 1000003 + k + 1) mod (2^61 - 1).
inline std::uint64_t MulMod(std::uint64_t a, std::uint64_t b, std::uint64_t m) {
  std::uint64_t result = 0;
  a %= m;
  while (b > 0) {
    if (b & 1) result = (result + a) % m;
    a = (a * 2) % m;
    b >>= 1;
  }
  return result;
}
inline std::uint64_t ExpectedChecksum(std::uint64_t steps) {
  constexpr std::uint64_t kModulus = (std::uint64_t{1} << 61) - 1;
  std::uint64_t checksum = 0;
  for (std::uint64_t k = 0; k < steps; ++k) {
    checksum = (MulMod(checksum, 1000003, kModulus) + k + 1) % kModulus;
  }
  return checksum;
}

// ------------------------------------------------------------------------------------------
// A cluster on loopback.

struct JobPlan {
  std::string type;
  std::uint64_t steps = 0;
};

class Cluster {
 public:
  explicit Cluster(std::string name, double round_seconds = kRoundSeconds,
                   double report_grace_seconds = 1.5)
      : table_(ShippedThroughputTable()),
        round_seconds_(round_seconds),
        report_grace_seconds_(report_grace_seconds) {
    std::string pattern = (fs::temp_directory_path() / ("gavel_e2e_" + name + "_XXXXXX")).string();
    dir_ = ::mkdtemp(pattern.data());
    fs::create_directories(dir_ + "/ckpt");
    fs::create_directories(dir_ + "/logs");
  }
  ~Cluster() {
    for (auto& [type, agent] : agents_) StopAgent(type, /*kill_jobs=*/true);
    daemon_.Stop();
    if (!::testing::Test::HasFailure()) {
      std::error_code ec;
      for (int attempt = 0; attempt < 5 && fs::exists(dir_, ec); ++attempt) {
        fs::remove_all(dir_, ec);  // a killed job may still be exiting: try again
        if (ec) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    } else {
      std::cerr << "e2e: keeping " << dir_ << " for inspection\n";
    }
  }
  const std::string& dir() const { return dir_; }

  void StartDaemon(int expected_gpus, const std::string& token_file = "",
                   const std::string& policy = "max_min_fairness_perf",
                   const std::vector<std::string>& extra_args = {}) {
    const std::string out = dir_ + "/serve.out";
    fs::remove(out);
    std::vector<std::string> argv = {
        GAVEL_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port_), "--state",
        dir_ + "/state", "--policy", policy, "--round-seconds",
        std::to_string(round_seconds_), "--checkpoint-dir", dir_ + "/ckpt",
        "--heartbeat-seconds", "0.5", "--heartbeat-timeout-seconds", "3",
        "--report-grace-seconds", std::to_string(report_grace_seconds_), "--retry-backoff-seconds", "1", "--expected-gpus",
        std::to_string(expected_gpus)};
    if (!token_file.empty()) {
      argv.push_back("--token-file");
      argv.push_back(token_file);
    }
    // These rounds last seconds and the jobs a few rounds, while the bounded lag over their
    // measured start-ups (0.5-1 s × 200) lets a job wait minutes: the tests check time against
    // the allocation round by round, so the daemon runs Gavel's queues unless a test asks.
    const bool lag_bound_given =
        std::find(extra_args.begin(), extra_args.end(), "--lag-bound") != extra_args.end();
    if (!lag_bound_given) {
      argv.push_back("--lag-bound");
      argv.push_back("0");
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    daemon_ = Process(argv, out, dir_ + "/serve.err");
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    while (Clock::now() < deadline) {
      const std::string text = ReadFile(out);
      const std::size_t at = text.find("listening on 127.0.0.1:");
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port_ = std::stoi(text.substr(at + std::string("listening on 127.0.0.1:").size()));
        stub_ = wire::Scheduler::NewStub(rpc::MakeChannel(address()));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "gavel serve did not start: " << ReadFile(dir_ + "/serve.err");
  }
  void KillDaemon() { daemon_.Kill9(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // `name` (default: the type) names the agent's work directory and is how StopAgent finds it;
  // `extra_args` go to `gavel worker` as they are (e.g. TLS flags).
  void StartAgent(const std::string& type, const std::string& token_file = "", int gpus = 1,
                  const std::string& name = "", const std::vector<std::string>& extra_args = {}) {
    const std::string key = name.empty() ? type : name;
    std::vector<std::string> argv = {GAVEL_BINARY, "worker", "--scheduler", address(), "--type",
                                     type, "--gpus", std::to_string(gpus), "--work-dir", dir_ + "/agent-" + key,
                                     "--checkpoint-dir", dir_ + "/ckpt", "--heartbeat-seconds",
                                     "0.5", "--kill-grace-seconds", "1"};
    if (!name.empty()) {
      argv.push_back("--agent-id");
      argv.push_back(name);
    }
    if (!token_file.empty()) {
      argv.push_back("--token-file");
      argv.push_back(token_file);
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    agents_[key] = Process(argv, dir_ + "/agent-" + key + ".out",
                           dir_ + "/agent-" + key + ".err");
  }
  // Kills an agent with SIGKILL and, with kill_jobs, its job processes too (a host dying).
  void StopAgent(const std::string& type, bool kill_jobs) {
    Process& agent = agents_[type];
    if (!agent.running()) return;
    const std::vector<pid_t> jobs = ChildrenOf(agent.pid());
    agent.Kill9();
    if (kill_jobs) {
      for (pid_t job : jobs) ::kill(-job, SIGKILL);  // each job leads its own process group
      for (pid_t job : jobs) ::kill(job, SIGKILL);
    }
  }

  std::vector<std::string> TrainCommand(const JobPlan& plan, double speedup) const {
    return {"python3", std::string(GAVEL_SOURCE_DIR) + "/examples/training/train.py",
            "--speedup", std::to_string(speedup), "--exec-log",
            dir_ + "/logs/" + std::to_string(std::hash<std::string>{}(plan.type)) + "-" +
                std::to_string(plan.steps) + ".log"};
  }
  std::string ExecLog(const JobPlan& plan) const {
    return dir_ + "/logs/" + std::to_string(std::hash<std::string>{}(plan.type)) + "-" +
           std::to_string(plan.steps) + ".log";
  }

  Result<std::uint64_t> SubmitSpec(const wire::JobSpec& spec, const std::string& token = "") {
    wire::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(10.0), token);
    context.set_wait_for_ready(true);  // a loaded machine may be slow to connect
    wire::SubmitJobResponse response;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(stub_->SubmitJob(&context, request, &response), "submit"));
    return response.job_id();
  }

  Result<std::uint64_t> Submit(const JobPlan& plan, double speedup, const std::string& token = "") {
    wire::JobSpec spec;
    for (const std::string& arg : TrainCommand(plan, speedup)) spec.add_command(arg);
    spec.set_total_steps(plan.steps);
    spec.set_scale_factor(1);
    spec.set_job_type(plan.type);
    // The program runs `speedup` times faster than the table: say so, as a user would.
    for (const char* type : {"v100", "p100", "k80"}) {
      (*spec.mutable_throughputs())[type] =
          table_->Isolated(type, JobTypeKey{plan.type, 1}).value_or(0.0) * speedup;
    }
    return SubmitSpec(spec, token);
  }
  Result<wire::ListJobsResponse> Jobs(const std::string& token = "") {
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(5.0), token);
    context.set_wait_for_ready(true);
    wire::ListJobsResponse response;
    GAVEL_RETURN_IF_ERROR(
        rpc::FromGrpc(stub_->ListJobs(&context, wire::ListJobsRequest(), &response), "jobs"));
    return response;
  }
  // Runs `gavel ARGS...`; returns (exit code, stdout + stderr).
  std::pair<int, std::string> Cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GAVEL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string out = dir_ + "/cli.out";
    fs::remove(out);
    Process p(argv, out, out);
    const int status = p.Wait();
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out)};
  }

  // The checkpointed {step, checksum} of a job: its latest launch's current checkpoint, as
  // the next launch would claim it (gavel_iterator.h, CheckpointStore).
  std::pair<std::uint64_t, std::uint64_t> Checkpoint(std::uint64_t job) const {
    std::optional<std::pair<std::string, std::uint64_t>> latest;
    try {
      latest = iterator::CheckpointStore(dir_ + "/ckpt/job-" + std::to_string(job)).Latest();
    } catch (const iterator::CheckpointError&) {
    }
    if (!latest) return {0, 0};
    const auto state = nlohmann::json::parse(ReadFile(latest->first + "/model.json"), nullptr, false);
    if (state.is_discarded()) return {0, 0};
    return {state["step"].get<std::uint64_t>(), state["checksum"].get<std::uint64_t>()};
  }

 private:
  std::shared_ptr<const ThroughputTable> table_;
  double round_seconds_;
  double report_grace_seconds_;
  std::string dir_;
  int port_ = 0;
  Process daemon_;
  std::map<std::string, Process> agents_;
  std::unique_ptr<wire::Scheduler::Stub> stub_;
};

inline bool AllFinished(const wire::ListJobsResponse& jobs) {
  for (const auto& job : jobs.jobs()) {
    if (job.state() == wire::QUEUED || job.state() == wire::RUNNING) return false;
  }
  return jobs.jobs_size() > 0;
}

// Polls the job list every 200 ms until every job finished or `limit` passed; the last list.
inline Result<wire::ListJobsResponse> WaitAllFinished(Cluster& cluster, std::chrono::seconds limit) {
  wire::ListJobsResponse last;
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    GAVEL_ASSIGN_OR_RETURN(last, cluster.Jobs());
    if (AllFinished(last)) break;
  }
  return last;
}

inline std::vector<std::uint64_t> ReadExecLog(const std::string& path) {
  std::vector<std::uint64_t> steps;
  std::ifstream in(path);
  std::uint64_t s = 0;
  while (in >> s) steps.push_back(s);
  return steps;
}

}  // namespace
}  // namespace gavel::daemon
