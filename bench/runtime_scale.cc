// runtime_scale: the runtime at scale on loopback. One `gavel serve` (a real process), many
// worker agents (real AgentServers with real ports, several per "agent host" process: this
// program re-executed with `agent-host`), and thousands of jobs of bench/scale_job (a real
// process per job and GPU, speaking the iterator protocol, sleeping instead of training).
//
// It measures what an operator of a large cluster needs to hold, and exits 1 naming each
// property that failed:
//   * rounds begin on time: a round's start lateness = its start − (the previous round's start +
//     the round length), from GetStatus's round id and elapsed time polled every 0.25 s; p99
//     under 1% of the round length (the round after a daemon restart is counted apart);
//   * the daemon's peak RSS (VmHWM of each incarnation) under 1 GiB;
//   * `gavel jobs` (the real command as a user runs it: the queued and running jobs, every
//     page) p99 under 200 ms while loaded; `gavel jobs --all` (finished jobs too) and the
//     ListJobs RPC of every job are measured beside it;
//   * a `kill -9` of the daemon in the middle of a round loses no job and no step: every job's
//     credited steps right after the restart (same state directory and port) are at least
//     those listed just before the kill; at the end every job is DONE with all its steps
//     credited and checkpointed (the job's own checkpoint file).
// The emulated cluster (the agent hosts and the job processes they start) runs under
// SCHED_IDLE (--cluster-scheduling idle, the default) or at --cluster-nice (nice): on a real
// cluster those run on other machines, and here they would otherwise take the daemon's and
// the client's cores; the output says which, and `--cluster-scheduling nice --cluster-nice 0`
// runs everything at one priority. The load average is sampled with the other figures, and
// every `gavel jobs` sample is written to gavel_jobs_samples.csv in the run's directory.
// Figures go to stdout and, with --json, to a file. docs/runtime.md ("Runtime at scale")
// and bench/README.md hold the command and the measured figures.
//
// Thread-safety: the driver's samplers are threads that share only the Samples (one mutex).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gavel/agent/agent_server.h"
#include "gavel/core/status.h"
#include "gavel/daemon/child_process.h"
#include "gavel/iterator/gavel_iterator.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/wire/scheduler.grpc.pb.h"

namespace gavel::bench {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ------------------------------------------------------------------------------------------
// Options.

struct ScaleOptions {
  std::string gavel = GAVEL_BINARY;
  std::string job_program = SCALE_JOB_BINARY;
  std::string dir;  // empty = a fresh temporary directory (removed after a passing run)
  int agents = 500;
  int gpus_per_agent = 4;
  int agents_per_host = 50;
  int jobs = 5000;
  double round_seconds = 30.0;
  double step_seconds = 0.05;
  // Each job needs between these many and max rounds' worth of one GPU's time.
  double min_job_rounds = 1.0;
  double max_job_rounds = 3.0;
  int kill_at_round = 3;  // kill -9 the daemon halfway through this round; 0 = never
  std::string policy = "max_min_fairness_perf";
  double jobs_interval_seconds = 1.0;  // between two `gavel jobs`
  // The agent hosts and their jobs stand for other machines: under SCHED_IDLE ("idle": they run
  // only on CPU time no other process wants) or at --cluster-nice ("nice").
  std::string cluster_scheduling = "idle";
  int cluster_nice = 19;
  double limit_seconds = 1200.0;       // give up waiting for the jobs after this
  std::uint64_t seed = 1;
  std::string json;  // write the figures here too
  std::vector<std::string> serve_args;  // more `gavel serve` flags, as they are
  // The properties asserted.
  double max_lateness_fraction = 0.01;
  double max_rss_mib = 1024.0;
  double max_jobs_p99_ms = 200.0;
};

struct AgentHostOptions {
  std::string scheduler;
  std::string dir;
  int first = 0;
  int count = 1;
  int gpus = 4;
  bool idle = false;  // SCHED_IDLE; else `nice`
  std::string cpu_group;  // an idle CPU group to join first; "" = none
  int nice = 0;
};

constexpr const char* kTypes[] = {"v100", "p100", "k80"};

// ------------------------------------------------------------------------------------------
// Child processes.

// The bench's children get 30 s to stop: a daemon with 5,000 jobs flushes its state first.
class Child : public gavel::daemon::ChildProcess {
 public:
  Child() = default;
  Child(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err)
      : ChildProcess(argv, out.string(), err.string(), 30.0) {}
};

// User + system CPU of this process's children that have been waited for (seconds): around
// one child's wait, with no other child ending meanwhile, that child's CPU time.
double ChildrenCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A child's main thread's scheduler statistics (/proc/PID/schedstat: time on a CPU, time
// runnable but waiting for one), read once it has exited and before it is reaped (waitid
// with WNOWAIT), so the wait status is still the caller's to collect; zeros if unreadable.
struct SchedStat {
  double on_cpu_ms = 0.0, runqueue_ms = 0.0;
};
SchedStat SchedStatAtExit(pid_t pid) {
  SchedStat stat;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) return stat;
  std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
  double on_cpu_ns = 0.0, runqueue_ns = 0.0;
  if (in >> on_cpu_ns >> runqueue_ns) stat = {on_cpu_ns / 1e6, runqueue_ns / 1e6};
  return stat;
}

// A field of /proc/PID/status in KiB (VmHWM, VmRSS); 0 if unreadable.
std::uint64_t ProcStatusKib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return 0;
}

// ------------------------------------------------------------------------------------------
// The emulated cluster's CPU group. Tasks under SCHED_IDLE each weigh 3 against a nice-0
// task's 1,024, so 2,000 runnable job processes still outweigh the daemon and the client; a
// control group with cpu.idle set is one idle entity however many tasks it holds. Made under
// the cgroup v1 cpu hierarchy or the v2 root where the cpu controller is enabled, by a
// process allowed to (root); elsewhere the cluster runs under per-task SCHED_IDLE only.

// Creates an idle CPU group named after this process; nullopt where none can be made.
std::optional<fs::path> MakeIdleCpuGroup() {
  const std::string name = "gavel_scale_" + std::to_string(::getpid());
  for (const fs::path& root : {fs::path("/sys/fs/cgroup/cpu"), fs::path("/sys/fs/cgroup")}) {
    std::error_code ec;
    const fs::path group = root / name;
    if (!fs::create_directory(group, ec) || ec) continue;
    // A control group's directory comes with its files; a plain directory (a tmpfs where no
    // hierarchy is mounted) does not, and gets none written.
    if (fs::exists(group / "cgroup.procs") && fs::exists(group / "cpu.idle")) {
      std::ofstream idle(group / "cpu.idle");
      idle << "1" << std::flush;
      if (idle) return group;
    }
    fs::remove(group, ec);
  }
  return std::nullopt;
}

// Moves the calling process (and so the processes it starts) into `group`.
bool JoinCpuGroup(const fs::path& group) {
  std::ofstream procs(group / "cgroup.procs");
  procs << ::getpid() << std::flush;
  return static_cast<bool>(procs);
}

// ------------------------------------------------------------------------------------------
// Agent host: `count` agents in this process until SIGTERM.

int RunAgentHost(const AgentHostOptions& options) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  (void)rpc::RaiseDescriptorLimit();
  // The job processes the agents start inherit both.
  if (!options.cpu_group.empty() && !JoinCpuGroup(options.cpu_group)) {
    std::cerr << "agent-host: cannot join the CPU group " << options.cpu_group << "\n";
    return 1;
  }
  if (options.idle) {
    sched_param param{};
    param.sched_priority = 0;
    if (::sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
      std::cerr << "agent-host: sched_setscheduler SCHED_IDLE failed\n";
      return 1;
    }
  } else if (options.nice > 0 && ::setpriority(PRIO_PROCESS, 0, options.nice) != 0) {
    std::cerr << "agent-host: setpriority " << options.nice << " failed\n";
    return 1;
  }

  std::vector<std::pair<std::string, std::string>> env;
  std::string path;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    env.emplace_back(text.substr(0, eq), text.substr(eq + 1));
    if (text.compare(0, eq, "PATH") == 0) path = text.substr(eq + 1);
  }
  std::vector<std::unique_ptr<agent::AgentServer>> servers;
  for (int i = options.first; i < options.first + options.count; ++i) {
    const fs::path work = fs::path(options.dir) / "agents" / std::to_string(i);
    fs::create_directories(work / "logs");
    agent::AgentServerOptions server;
    server.scheduler_address = options.scheduler;
    server.rpc_timeout = Seconds(10.0);
    agent::AgentOptions& agent = server.agent;
    agent.agent_id = "scale-" + std::to_string(i);
    agent.gpu_type = kTypes[i % 3];
    agent.num_gpus = options.gpus;
    agent.log_dir = (work / "logs").string();
    agent.checkpoint_root = (fs::path(options.dir) / "ckpt").string();
    agent.run_dir = work.string();
    agent.base_env = env;
    agent.program_path = path;
    agent.kill_grace = Seconds(5.0);
    const Status valid = agent::CheckAgentOptions(agent);
    if (!valid.ok()) {
      std::cerr << "agent-host: " << valid.ToString() << "\n";
      return 1;
    }
    Result<std::unique_ptr<agent::AgentServer>> started = agent::AgentServer::Start(server);
    if (!started.ok()) {
      std::cerr << "agent-host: agent " << i << ": " << started.status().ToString() << "\n";
      return 1;
    }
    servers.push_back(std::move(started).value());
  }
  std::cout << "agents ready\n" << std::flush;
  int signal = 0;
  sigwait(&stop, &signal);
  // Stop them together: each Shutdown waits for its jobs' kill grace.
  std::vector<std::thread> stoppers;
  for (auto& server : servers) stoppers.emplace_back([&server] { server.reset(); });
  for (std::thread& t : stoppers) t.join();
  return 0;
}

// ------------------------------------------------------------------------------------------
// The driver.

struct Percentiles {
  std::size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
};

Percentiles Summarize(std::vector<double> values) {
  Percentiles p;
  p.n = values.size();
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {  // nearest rank
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
  };
  p.p50 = at(0.50);
  p.p99 = at(0.99);
  p.max = values.back();
  return p;
}

nlohmann::json ToJson(const Percentiles& p) {
  return {{"n", p.n}, {"p50", p.p50}, {"p99", p.p99}, {"max", p.max}};
}

// What the samplers saw; shared by the driver's threads.
struct Samples {
  std::mutex mu;
  bool daemon_up = false;
  // Round id → the round's start on the driver's clock (seconds). A restarted daemon resumes
  // the open round with its start, so ids and starts carry across the kill.
  std::map<std::uint64_t, double> round_starts;
  std::uint64_t current_round = 0;
  double current_elapsed = 0.0;
  std::vector<double> jobs_ms;      // `gavel jobs`, whole command (queued and running jobs)
  std::vector<double> jobs_all_ms;  // `gavel jobs --all`, whole command (every job)
  std::vector<double> list_rpc_ms;  // ListJobs of every job, every page, in process
  // One row per `gavel jobs` sample, for finding what its slow answers coincide with: when it
  // started (driver clock, s), how far into its round, the command's wall and CPU time (ms)
  // and its output lines.
  struct JobsSample {
    double at_s, into_round_s, wall_ms, cpu_ms, on_cpu_ms, runqueue_ms;
    std::size_t lines;
  };
  std::vector<JobsSample> jobs_trace;
  double load_min = -1.0, load_max = 0.0;  // 1-minute load average seen
  std::uint64_t peak_rss_kib = 0;
  int jobs_failures = 0;
};

class Driver {
 public:
  explicit Driver(ScaleOptions options) : options_(std::move(options)) {}

  int Run();

 private:
  fs::path dir() const { return dir_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Status StartDaemon();
  Result<std::vector<wire::JobInfo>> ListAll(double timeout_s);
  Status SubmitAll();
  void PollStatus(const std::atomic<bool>& stop);
  void PollJobs(const std::atomic<bool>& stop);
  void SampleRss();
  void SampleLoad();
  void KillAndRestart();
  int Report();

  ScaleOptions options_;
  fs::path dir_;
  int port_ = 0;
  Child daemon_;
  std::vector<Child> hosts_;
  std::optional<fs::path> cpu_group_;  // the emulated cluster's idle CPU group, if made
  std::shared_ptr<grpc::Channel> channel_;
  SteadyClock::time_point t0_ = SteadyClock::now();
  Samples samples_;
  std::map<std::uint64_t, std::uint64_t> total_steps_;  // job → steps
  // Kill -9 findings.
  bool killed_ = false;
  std::uint64_t killed_in_round_ = 0;
  double recovery_seconds_ = 0.0;
  std::vector<std::string> losses_;
  std::vector<std::string> failures_;
  double run_seconds_ = 0.0;
  double first_round_delay_s_ = 0.0;
  double submit_seconds_ = 0.0;
};

Status Driver::StartDaemon() {
  const fs::path out = dir_ / "serve.out";
  fs::remove(out);
  const int total_gpus = options_.agents * options_.gpus_per_agent;
  std::vector<std::string> argv = {
      options_.gavel, "serve", "--listen", "127.0.0.1:" + std::to_string(port_), "--state",
      (dir_ / "state").string(), "--policy", options_.policy, "--round-seconds",
      std::to_string(options_.round_seconds), "--checkpoint-dir", (dir_ / "ckpt").string(),
      "--expected-gpus", std::to_string(total_gpus), "--seed", std::to_string(options_.seed)};
  argv.insert(argv.end(), options_.serve_args.begin(), options_.serve_args.end());
  daemon_ = Child(argv, out, dir_ / "serve.err");
  const std::string marker = "listening on 127.0.0.1:";
  const auto deadline = SteadyClock::now() + std::chrono::seconds(120);
  while (SteadyClock::now() < deadline) {
    const std::string text = ReadText(out);
    const std::size_t at = text.find(marker);
    if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
      port_ = std::stoi(text.substr(at + marker.size()));
      // Made once: the restarted daemon listens on the same port, and gRPC reconnects.
      if (!channel_) channel_ = rpc::MakeChannel(address());
      return Status::Ok();
    }
    int status = 0;
    if (::waitpid(daemon_.pid(), &status, WNOHANG) == daemon_.pid()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::IoError("gavel serve did not start: " + ReadText(dir_ / "serve.err"));
}

Result<std::vector<wire::JobInfo>> Driver::ListAll(double timeout_s) {
  auto stub = wire::Scheduler::NewStub(channel_);
  std::vector<wire::JobInfo> jobs;
  std::string token;
  do {
    wire::ListJobsRequest request;
    request.set_limit(1000);
    request.set_page_token(token);
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(timeout_s), "");
    context.set_wait_for_ready(true);
    wire::ListJobsResponse response;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(stub->ListJobs(&context, request, &response), "jobs"));
    for (auto& job : *response.mutable_jobs()) jobs.push_back(std::move(job));
    token = response.next_page_token();
  } while (!token.empty());
  return jobs;
}

Status Driver::SubmitAll() {
  std::mt19937_64 random(options_.seed);
  std::uniform_real_distribution<double> rounds(options_.min_job_rounds, options_.max_job_rounds);
  std::vector<std::uint64_t> steps(static_cast<std::size_t>(options_.jobs));
  const double rate = 1.0 / options_.step_seconds;
  for (auto& s : steps) {
    s = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(rounds(random) * options_.round_seconds * rate));
  }
  std::mutex mu;
  Status failed = Status::Ok();
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      auto stub = wire::Scheduler::NewStub(channel_);
      for (int i = next++; i < options_.jobs; i = next++) {
        wire::SubmitJobRequest request;
        wire::JobSpec& spec = *request.mutable_spec();
        spec.add_command(options_.job_program);
        spec.add_command(std::to_string(options_.step_seconds));
        spec.set_name("scale-" + std::to_string(i));
        spec.set_total_steps(steps[static_cast<std::size_t>(i)]);
        spec.set_scale_factor(1);
        spec.set_job_type("ResNet-18 (batch size 64)");
        for (const char* type : kTypes) (*spec.mutable_throughputs())[type] = rate;
        grpc::ClientContext context;
        rpc::PrepareContext(&context, Seconds(60.0), "");
        context.set_wait_for_ready(true);
        wire::SubmitJobResponse response;
        const Status status = rpc::FromGrpc(stub->SubmitJob(&context, request, &response), "submit");
        std::lock_guard lock(mu);
        if (!status.ok()) {
          failed = status;
          return;
        }
        total_steps_[response.job_id()] = steps[static_cast<std::size_t>(i)];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return failed;
}

void Driver::PollStatus(const std::atomic<bool>& stop) {
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    {
      std::lock_guard lock(samples_.mu);
      if (!samples_.daemon_up) continue;
    }
    auto stub = wire::Scheduler::NewStub(channel_);
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(2.0), "");
    wire::GetStatusResponse status;
    const double sent = SecondsSince(t0_);
    if (!stub->GetStatus(&context, wire::GetStatusRequest(), &status).ok()) continue;
    const double received = SecondsSince(t0_);
    // The daemon read its clock somewhere in between: the midpoint is off by at most half the
    // call, a few ms against a 1% bound of hundreds.
    const double start = (sent + received) / 2.0 - status.round_elapsed_s();
    std::lock_guard lock(samples_.mu);
    if (!samples_.daemon_up) continue;
    samples_.current_round = status.round_id();
    samples_.current_elapsed = status.round_elapsed_s();
    if (status.round_elapsed_s() > 0.0) samples_.round_starts.try_emplace(status.round_id(), start);
  }
}

void Driver::SampleLoad() {
  double load = 0.0;
  if (!(std::ifstream("/proc/loadavg") >> load)) return;
  std::lock_guard lock(samples_.mu);
  samples_.load_min = samples_.load_min < 0.0 ? load : std::min(samples_.load_min, load);
  samples_.load_max = std::max(samples_.load_max, load);
}

void Driver::SampleRss() {
  const std::uint64_t hwm = ProcStatusKib(daemon_.pid(), "VmHWM");
  std::lock_guard lock(samples_.mu);
  samples_.peak_rss_kib = std::max(samples_.peak_rss_kib, hwm);
}

void Driver::PollJobs(const std::atomic<bool>& stop) {
  // The command's output goes to memory (/dev/shm where there is one), as a terminal would
  // take it: a file beside the emulated jobs' checkpoints can wait behind their fsyncs in the
  // file system's journal, which no user's `gavel jobs` does.
  const fs::path shm = "/dev/shm";
  const fs::path out = fs::is_directory(shm)
                           ? shm / ("gavel_scale_jobs_" + std::to_string(::getpid()) + ".out")
                           : dir_ / "jobs.out";
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.jobs_interval_seconds));
    {
      std::lock_guard lock(samples_.mu);
      if (!samples_.daemon_up) continue;
    }
    const auto start = SteadyClock::now();
    const double cpu_before = ChildrenCpuSeconds();
    Child cli({options_.gavel, "jobs", "--scheduler", address()}, out, dir_ / "jobs.err");
    const SchedStat sched = SchedStatAtExit(cli.pid());
    const int status = cli.Wait();
    const double cli_ms = SecondsSince(start) * 1000.0;
    const double cli_cpu_ms = (ChildrenCpuSeconds() - cpu_before) * 1000.0;
    std::size_t lines = 0;
    {
      std::ifstream listing(out);
      for (std::string line; std::getline(listing, line);) ++lines;
    }
    const auto all_start = SteadyClock::now();
    Child all_cli({options_.gavel, "jobs", "--all", "--scheduler", address()}, out,
                  dir_ / "jobs.err");
    const int all_status = all_cli.Wait();
    const double all_ms = SecondsSince(all_start) * 1000.0;
    const auto rpc_start = SteadyClock::now();
    const bool listed = ListAll(10.0).ok();
    const double rpc_ms = SecondsSince(rpc_start) * 1000.0;
    fs::remove(out);
    std::lock_guard lock(samples_.mu);
    if (!samples_.daemon_up) continue;  // the kill fell inside: not an answer of a live daemon
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      samples_.jobs_ms.push_back(cli_ms);
      const double at = std::chrono::duration<double>(start - t0_).count();
      double into_round = -1.0;
      for (const auto& [round, round_start] : samples_.round_starts) {
        if (round_start <= at) into_round = at - round_start;
      }
      samples_.jobs_trace.push_back(
          {at, into_round, cli_ms, cli_cpu_ms, sched.on_cpu_ms, sched.runqueue_ms, lines});
    } else {
      ++samples_.jobs_failures;
    }
    if (WIFEXITED(all_status) && WEXITSTATUS(all_status) == 0) {
      samples_.jobs_all_ms.push_back(all_ms);
    } else {
      ++samples_.jobs_failures;
    }
    if (listed) samples_.list_rpc_ms.push_back(rpc_ms);
  }
}

void Driver::KillAndRestart() {
  Result<std::vector<wire::JobInfo>> before = ListAll(30.0);
  SampleRss();
  {
    std::lock_guard lock(samples_.mu);
    samples_.daemon_up = false;
  }
  daemon_.Kill9();
  killed_ = true;
  {
    std::lock_guard lock(samples_.mu);
    killed_in_round_ = samples_.current_round;
  }
  const auto down = SteadyClock::now();
  std::cout << "t=" << SecondsSince(t0_) << "s: kill -9 of the daemon in round "
            << samples_.current_round << "\n"
            << std::flush;
  if (!before.ok()) {
    failures_.push_back("kill -9: could not list the jobs before the kill: " + before.status().ToString());
    return;
  }
  const Status restarted = StartDaemon();
  if (!restarted.ok()) {
    failures_.push_back("kill -9: the daemon did not restart: " + restarted.ToString());
    return;
  }
  // The channel's old connection may fail a first call ("Socket closed"): retry a while.
  Result<std::vector<wire::JobInfo>> after = ListAll(60.0);
  for (int attempt = 0; !after.ok() && attempt < 60; ++attempt) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    after = ListAll(60.0);
  }
  recovery_seconds_ = SecondsSince(down);
  {
    std::lock_guard lock(samples_.mu);
    samples_.daemon_up = true;
  }
  if (!after.ok()) {
    failures_.push_back("kill -9: could not list the jobs after the restart: " + after.status().ToString());
    return;
  }
  std::map<std::uint64_t, std::uint64_t> steps_after;
  for (const wire::JobInfo& job : *after) steps_after[job.id()] = job.steps_done();
  for (const wire::JobInfo& job : *before) {
    const auto it = steps_after.find(job.id());
    if (it == steps_after.end()) {
      losses_.push_back("job " + std::to_string(job.id()) + " is gone after the restart");
    } else if (it->second < job.steps_done()) {
      losses_.push_back("job " + std::to_string(job.id()) + ": " + std::to_string(job.steps_done()) +
                        " steps before the kill, " + std::to_string(it->second) + " after");
    }
  }
  if (before->size() != after->size()) {
    losses_.push_back(std::to_string(before->size()) + " jobs before the kill, " +
                      std::to_string(after->size()) + " after");
  }
}

int Driver::Run() {
  if (options_.dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "gavel_scale_XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  } else {
    dir_ = fs::absolute(options_.dir);
    if (fs::exists(dir_ / "state")) {
      std::cerr << "runtime_scale: --dir " << dir_ << " already holds a state directory\n";
      return 2;
    }
  }
  fs::create_directories(dir_ / "ckpt");
  (void)rpc::RaiseDescriptorLimit();
  const bool idle = options_.cluster_scheduling == "idle";
  if (idle) cpu_group_ = MakeIdleCpuGroup();
  std::cout << "runtime_scale: " << options_.agents << " agents x " << options_.gpus_per_agent
            << " GPUs, " << options_.jobs << " jobs, " << options_.round_seconds
            << "-s rounds, in " << dir_.string() << "\n"
            << "runtime_scale: the emulated cluster (agent hosts, job processes) "
            << (!idle       ? "at nice " + std::to_string(options_.cluster_nice)
                : cpu_group_ ? "in the idle CPU group " + cpu_group_->string() + ", under SCHED_IDLE"
                             : std::string("under SCHED_IDLE (no idle CPU group could be made)"))
            << "; the daemon, `gavel jobs` and this driver at nice "
            << ::getpriority(PRIO_PROCESS, 0) << "\n"
            << std::flush;

  if (const Status started = StartDaemon(); !started.ok()) {
    std::cerr << "runtime_scale: " << started.ToString() << "\n";
    return 1;
  }
  {
    std::lock_guard lock(samples_.mu);
    samples_.daemon_up = true;
  }
  // Agent hosts.
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  for (int first = 0; first < options_.agents; first += options_.agents_per_host) {
    const int count = std::min(options_.agents_per_host, options_.agents - first);
    const std::string name = "host-" + std::to_string(first);
    hosts_.emplace_back(
        std::vector<std::string>{self, "agent-host", "--scheduler", address(), "--dir",
                                 dir_.string(), "--first", std::to_string(first), "--count",
                                 std::to_string(count), "--gpus",
                                 std::to_string(options_.gpus_per_agent), "--nice",
                                 std::to_string(options_.cluster_nice), "--idle",
                                 idle ? "true" : "false", "--cpu-group",
                                 cpu_group_ ? cpu_group_->string() : ""},
        dir_ / (name + ".out"), dir_ / (name + ".err"));
  }
  const auto submit_start = SteadyClock::now();
  if (const Status submitted = SubmitAll(); !submitted.ok()) {
    std::cerr << "runtime_scale: " << submitted.ToString() << "\n";
    return 1;
  }
  submit_seconds_ = SecondsSince(submit_start);
  std::cout << "t=" << SecondsSince(t0_) << "s: " << options_.jobs << " jobs submitted in "
            << submit_seconds_ << " s\n"
            << std::flush;

  std::atomic<bool> stop{false};
  std::thread status_thread([&] { PollStatus(stop); });
  std::thread jobs_thread([&] { PollJobs(stop); });

  const auto deadline = SteadyClock::now() + std::chrono::duration<double>(options_.limit_seconds);
  bool all_done = false;
  std::uint64_t last_round = 0;
  std::optional<double> first_round;
  while (SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    SampleRss();
    SampleLoad();
    std::uint64_t round = 0;
    double elapsed = 0;
    {
      std::lock_guard lock(samples_.mu);
      round = samples_.current_round;
      elapsed = samples_.current_elapsed;
      if (!first_round && !samples_.round_starts.empty()) first_round = samples_.round_starts.begin()->second;
    }
    if (round != last_round) {
      last_round = round;
      std::cout << "t=" << SecondsSince(t0_) << "s: round " << round << ", daemon RSS "
                << ProcStatusKib(daemon_.pid(), "VmRSS") / 1024 << " MiB\n"
                << std::flush;
    }
    if (!killed_ && options_.kill_at_round > 0 && round >= static_cast<std::uint64_t>(options_.kill_at_round) &&
        elapsed >= options_.round_seconds / 2.0) {
      KillAndRestart();
      if (!failures_.empty()) break;
    }
    // Finished? (a listing of the active jobs only: cheap)
    wire::ListJobsRequest request;
    request.set_active_only(true);
    request.set_limit(1);
    grpc::ClientContext context;
    rpc::PrepareContext(&context, Seconds(10.0), "");
    wire::ListJobsResponse response;
    if (wire::Scheduler::NewStub(channel_)->ListJobs(&context, request, &response).ok() &&
        response.jobs_size() == 0 && (killed_ || options_.kill_at_round == 0)) {
      all_done = true;
      break;
    }
  }
  run_seconds_ = SecondsSince(t0_);
  if (first_round) first_round_delay_s_ = *first_round;
  stop = true;
  status_thread.join();
  jobs_thread.join();
  if (!all_done && failures_.empty()) {
    failures_.push_back("the jobs did not finish within --limit-seconds " +
                        std::to_string(options_.limit_seconds));
  }
  const int code = Report();
  for (Child& host : hosts_) host.Stop();
  daemon_.Stop();
  if (cpu_group_) {
    // Empty once the hosts and their jobs are gone (a straggler keeps it: named, not fatal).
    std::error_code ec;
    if (!fs::remove(*cpu_group_, ec)) {
      std::cerr << "runtime_scale: left the CPU group " << cpu_group_->string() << "\n";
    }
  }
  if (code == 0 && options_.dir.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  return code;
}

int Driver::Report() {
  nlohmann::json figures;
  // Rounds: lateness of each round against its predecessor. The round after the one the kill
  // fell into is counted apart (its predecessor's reports waited for the restart).
  std::vector<double> lateness;
  std::optional<double> after_restart_s;
  {
    std::lock_guard lock(samples_.mu);
    const auto& starts = samples_.round_starts;
    for (auto it = starts.begin(); it != starts.end(); ++it) {
      const auto next = std::next(it);
      if (next == starts.end() || next->first != it->first + 1) continue;  // a round not seen
      const double late = std::max(0.0, next->second - it->second - options_.round_seconds);
      if (killed_ && it->first == killed_in_round_) {
        after_restart_s = late;
      } else {
        lateness.push_back(late);
      }
    }
    figures["rounds_seen"] = starts.size();
    figures["round_lateness_s"] = ToJson(Summarize(lateness));
    figures["gavel_jobs_ms"] = ToJson(Summarize(samples_.jobs_ms));
    figures["gavel_jobs_all_ms"] = ToJson(Summarize(samples_.jobs_all_ms));
    std::vector<double> cpu_ms;
    const fs::path trace_path = dir_ / "gavel_jobs_samples.csv";
    std::ofstream trace(trace_path);
    trace << "at_s,into_round_s,wall_ms,cpu_ms,on_cpu_ms,runqueue_ms,lines\n";
    for (const Samples::JobsSample& sample : samples_.jobs_trace) {
      cpu_ms.push_back(sample.cpu_ms);
      trace << sample.at_s << "," << sample.into_round_s << "," << sample.wall_ms << ","
            << sample.cpu_ms << "," << sample.on_cpu_ms << "," << sample.runqueue_ms << ","
            << sample.lines << "\n";
    }
    figures["gavel_jobs_cpu_ms"] = ToJson(Summarize(cpu_ms));
    figures["gavel_jobs_samples_csv"] = trace_path.string();
    figures["load_average_1m"] = {{"min", samples_.load_min}, {"max", samples_.load_max}};
    figures["list_jobs_rpc_ms"] = ToJson(Summarize(samples_.list_rpc_ms));
    figures["gavel_jobs_failures"] = samples_.jobs_failures;
    figures["daemon_peak_rss_mib"] = static_cast<double>(samples_.peak_rss_kib) / 1024.0;
  }
  if (after_restart_s) figures["round_after_kill_late_s"] = *after_restart_s;
  figures["restart_to_listing_s"] = recovery_seconds_;
  figures["submit_s"] = submit_seconds_;
  figures["run_s"] = run_seconds_;
  figures["agents"] = options_.agents;
  figures["gpus"] = options_.agents * options_.gpus_per_agent;
  figures["jobs"] = options_.jobs;
  figures["round_s"] = options_.round_seconds;
  figures["cluster_scheduling"] = options_.cluster_scheduling;
  figures["cluster_cpu_group"] = cpu_group_ ? cpu_group_->string() : "";
  figures["cluster_nice"] = options_.cluster_nice;

  // Every job DONE with all its steps credited and checkpointed.
  Result<std::vector<wire::JobInfo>> final_jobs = ListAll(60.0);
  int done = 0;
  if (!final_jobs.ok()) {
    failures_.push_back("final listing: " + final_jobs.status().ToString());
  } else {
    std::size_t reported = 0;
    for (const wire::JobInfo& job : *final_jobs) {
      const auto want = total_steps_.find(job.id());
      if (want == total_steps_.end()) continue;
      ++reported;
      const std::string name = "job " + std::to_string(job.id());
      if (job.state() != wire::DONE) {
        if (losses_.size() < 20) losses_.push_back(name + " ended " + wire::JobState_Name(job.state()));
        continue;
      }
      ++done;
      if (job.steps_done() != want->second) {
        losses_.push_back(name + ": " + std::to_string(job.steps_done()) + " steps credited of " +
                          std::to_string(want->second));
      }
      // The job's latest launch's checkpoint, as a next launch would claim it.
      const fs::path root = dir_ / "ckpt" / ("job-" + std::to_string(job.id()));
      std::optional<std::pair<std::string, std::uint64_t>> latest;
      try {
        latest = iterator::CheckpointStore(root).Latest();
      } catch (const iterator::CheckpointError& error) {
        losses_.push_back(name + ": " + error.what());
      }
      const auto state = nlohmann::json::parse(
          latest ? ReadText(fs::path(latest->first) / "model.json") : std::string(), nullptr, false);
      const std::uint64_t checkpointed =
          state.is_object() && state.contains("step") ? state["step"].get<std::uint64_t>() : 0;
      if (checkpointed != want->second) {
        losses_.push_back(name + ": checkpoint at step " + std::to_string(checkpointed) + " of " +
                          std::to_string(want->second));
      }
    }
    if (reported != total_steps_.size()) {
      losses_.push_back(std::to_string(total_steps_.size() - reported) + " submitted jobs missing");
    }
  }
  figures["jobs_done"] = done;
  figures["losses"] = losses_;

  const Percentiles late = Summarize(lateness);
  const Percentiles jobs = Summarize(samples_.jobs_ms);
  const double rss_mib = figures["daemon_peak_rss_mib"].get<double>();
  if (lateness.empty()) failures_.push_back("no two consecutive rounds were seen");
  if (late.p99 > options_.max_lateness_fraction * options_.round_seconds) {
    failures_.push_back("round start lateness p99 " + std::to_string(late.p99) + " s > " +
                        std::to_string(options_.max_lateness_fraction * options_.round_seconds) + " s");
  }
  if (rss_mib > options_.max_rss_mib) {
    failures_.push_back("daemon peak RSS " + std::to_string(rss_mib) + " MiB > " +
                        std::to_string(options_.max_rss_mib) + " MiB");
  }
  if (jobs.n == 0) failures_.push_back("`gavel jobs` never answered");
  if (jobs.p99 > options_.max_jobs_p99_ms) {
    failures_.push_back("`gavel jobs` p99 " + std::to_string(jobs.p99) + " ms > " +
                        std::to_string(options_.max_jobs_p99_ms) + " ms");
  }
  if (!losses_.empty()) failures_.push_back(std::to_string(losses_.size()) + " lost jobs or steps (see \"losses\")");
  figures["failures"] = failures_;
  std::cout << figures.dump(2) << "\n";
  if (!options_.json.empty()) std::ofstream(options_.json) << figures.dump(2) << "\n";
  for (const std::string& failure : failures_) std::cerr << "runtime_scale: FAILED: " << failure << "\n";
  if (!failures_.empty()) std::cerr << "runtime_scale: keeping " << dir_.string() << "\n";
  return failures_.empty() ? 0 : 1;
}

}  // namespace
}  // namespace gavel::bench

int main(int argc, char** argv) {
  using gavel::bench::AgentHostOptions;
  using gavel::bench::ScaleOptions;
  CLI::App app{"The runtime at scale on loopback (bench/runtime_scale.cc)"};
  ScaleOptions run;
  app.add_option("--gavel", run.gavel, "The gavel binary");
  app.add_option("--job-program", run.job_program, "The job program (bench/scale_job)");
  app.add_option("--dir", run.dir, "Work directory (default: a fresh temporary one)");
  app.add_option("--agents", run.agents, "Worker agents")->check(CLI::Range(1, 100000));
  app.add_option("--gpus-per-agent", run.gpus_per_agent)->check(CLI::Range(1, 64));
  app.add_option("--agents-per-host", run.agents_per_host, "Agents per agent-host process")
      ->check(CLI::Range(1, 10000));
  app.add_option("--jobs", run.jobs)->check(CLI::Range(1, 1000000));
  app.add_option("--round-seconds", run.round_seconds)->check(CLI::Range(1.0, 3600.0));
  app.add_option("--step-seconds", run.step_seconds)->check(CLI::Range(0.001, 60.0));
  app.add_option("--min-job-rounds", run.min_job_rounds)->check(CLI::Range(0.01, 1000.0));
  app.add_option("--max-job-rounds", run.max_job_rounds)->check(CLI::Range(0.01, 1000.0));
  app.add_option("--kill-at-round", run.kill_at_round, "kill -9 the daemon halfway through this round (0 = never)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--policy", run.policy);
  app.add_option("--jobs-interval-seconds", run.jobs_interval_seconds)->check(CLI::Range(0.01, 3600.0));
  app.add_option("--cluster-scheduling", run.cluster_scheduling,
                 "how the emulated cluster (agent hosts and their jobs), which stands for other "
                 "machines, yields the CPU: idle = SCHED_IDLE (default), nice = --cluster-nice")
      ->check(CLI::IsMember({"idle", "nice"}));
  app.add_option("--cluster-nice", run.cluster_nice,
                 "nice of the emulated cluster with --cluster-scheduling nice (default 19; 0 = "
                 "the daemon's priority)")
      ->check(CLI::Range(0, 19));
  app.add_option("--limit-seconds", run.limit_seconds)->check(CLI::Range(1.0, 1e6));
  app.add_option("--seed", run.seed);
  app.add_option("--json", run.json, "Write the figures here too");
  app.add_option("--serve-arg", run.serve_args,
                 "A flag for `gavel serve`, repeatable (e.g. --serve-arg=--heartbeat-timeout-seconds=30)")
      ->allow_extra_args(false);
  app.add_option("--max-rss-mib", run.max_rss_mib);
  app.add_option("--max-jobs-p99-ms", run.max_jobs_p99_ms);
  app.add_option("--max-lateness-fraction", run.max_lateness_fraction);
  AgentHostOptions host;
  CLI::App* host_cmd = app.add_subcommand("agent-host", "(internal) run agents until SIGTERM");
  host_cmd->add_option("--scheduler", host.scheduler)->required();
  host_cmd->add_option("--dir", host.dir)->required();
  host_cmd->add_option("--first", host.first)->required();
  host_cmd->add_option("--count", host.count)->required();
  host_cmd->add_option("--gpus", host.gpus)->required();
  host_cmd->add_option("--nice", host.nice)->check(CLI::Range(0, 19));
  host_cmd->add_option("--idle", host.idle);
  host_cmd->add_option("--cpu-group", host.cpu_group);
  CLI11_PARSE(app, argc, argv);
  if (*host_cmd) return gavel::bench::RunAgentHost(host);
  if (run.min_job_rounds > run.max_job_rounds) {
    std::cerr << "runtime_scale: --min-job-rounds exceeds --max-job-rounds\n";
    return 2;
  }
  return gavel::bench::Driver(std::move(run)).Run();
}
