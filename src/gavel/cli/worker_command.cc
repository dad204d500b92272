// GCC 12 with -fsanitize=thread at -O2 reports a "potential null pointer dereference" inside
// libstdc++ (basic_string's move, reached from vector<string>::emplace_back on an empty vector)
// in CLI11's detail::split, which every CLI11 user emits for CLI11's own validators. It is a
// false positive of the isolate-paths pass, and only this file shows it because the gRPC
// headers (through agent_server.h and grpc_util.h) change its inlining budget. Warnings of
// that pass are judged by the location they point at, so silencing it for the headers only
// keeps -Wnull-dereference for the code of this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include "gavel/cli/worker_command.h"

#include "gavel/cli/flag_bounds.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include "gavel/agent/agent_server.h"
#include "gavel/agent/process.h"
#include "gavel/core/mutex.h"
#include "gavel/rpc/auth.h"
#include "gavel/rpc/grpc_util.h"
#include "gavel/slurm/step_launcher.h"
#pragma GCC diagnostic pop

extern char** environ;

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;

// The first refusal of the agent's registration, set from the agent's thread and read by the
// main thread after the signal wait.
struct Refusal {
  Mutex mutex;
  std::optional<Status> status GAVEL_GUARDED_BY(mutex);
};

// The agent's stable id: read from <work-dir>/agent_id, or made and written there.
Result<std::string> LoadOrCreateAgentId(const fs::path& work_dir, const std::string& gpu_type) {
  const fs::path path = work_dir / "agent_id";
  if (std::ifstream in(path); in) {
    std::string id;
    std::getline(in, id);
    if (id.empty())
      return Status::InvalidArgument("agent id file '" + path.string() + "' is empty");
    return id;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::random_device random;
  std::ostringstream id;
  id << host << "-" << gpu_type << "-" << std::hex << random() << random();
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << id.str() << "\n";
    if (!out) return Status::IoError("cannot write '" + temporary.string() + "'");
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) return Status::IoError("cannot write '" + path.string() + "': " + ec.message());
  return id.str();
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

CLI::App* AddWorkerCommand(CLI::App& app, WorkerOptions* options) {
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "Run a worker agent: register this host's GPUs with the scheduler and run jobs on them");
  cmd->add_option("--scheduler", options->scheduler,
                  "Scheduler address host:port (default 127.0.0.1:50060)");
  cmd->add_option("--type", options->gpu_type, "GPU type of this host, e.g. v100")->required();
  cmd->add_option("--gpus", options->gpus, "Number of GPUs to offer (default 1)")
      ->check(BoundedInteger(1, bounds::kMaxGpus));
  cmd->add_option("--cpus", options->host_cpus,
                  "CPU cores of this host the scheduler may hand out (drf, tetris); "
                  "default 0 = not advertised")
      ->check(Bounded(0.0, bounds::kMaxHostCpus));
  cmd->add_option("--mem-gb", options->host_mem_gb,
                  "GB of host memory the scheduler may hand out (drf, tetris); "
                  "default 0 = not advertised")
      ->check(Bounded(0.0, bounds::kMaxHostMemGb, " GB"));
  cmd->add_option("--work-dir", options->work_dir,
                  "Directory for the agent id, job logs and checkpoints")
      ->required();
  cmd->add_option("--token-file", options->token_file,
                  "File whose first field is this agent's token (role `agent` in the "
                  "scheduler's token file; never a user's)");
  cmd->add_option("--tls-ca", options->tls_ca,
                  "PEM CA of a scheduler that serves TLS (gavel serve --tls-cert)");
  cmd->add_option("--tls-cert", options->tls_cert,
                  "PEM certificate: serve this agent's service over TLS (the scheduler then "
                  "needs --tls-ca)");
  cmd->add_option("--tls-key", options->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--heartbeat-seconds", options->heartbeat_seconds,
                  "Heartbeat interval (default: the scheduler's)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option(
      "--listen", options->listen,
      "Address of this agent's service for the scheduler (default 127.0.0.1:0 = any free port)");
  cmd->add_option("--iterator-port", options->iterator_port,
                  "Loopback port of the endpoint for job iterators (default 0 = any free port)")
      ->check(BoundedInteger(0, 65535));
  cmd->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "Root of job checkpoints; shared storage when jobs move between hosts "
                  "(default <work-dir>/checkpoints)");
  cmd->add_option("--run-dir", options->run_dir,
                  "Working directory of jobs that name none (default: .)");
  cmd->add_option("--agent-id", options->agent_id,
                  "Stable agent id (default: kept in <work-dir>/agent_id)");
  cmd->add_option("--kill-grace-seconds", options->kill_grace_seconds,
                  "SIGTERM to SIGKILL grace when ending a job (default 10)")
      ->check(Bounded(0.0, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--lease-grace-seconds", options->lease_grace_seconds,
                  "End a job this long after its lease ran out without it stopping (default 30)")
      ->check(Bounded(0.0, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--startup-timeout-seconds", options->startup_timeout_seconds,
                  "End a job (as a crash) whose iterator is not ready this long after its launch; "
                  "its lease begins only once it is (default 600)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--log-retention-hours", options->log_retention_hours,
                  "Delete job logs (read by `gavel logs`) this long after their last write; "
                  "0 keeps them (default 168 = a week)")
      ->check(Bounded(0.0, bounds::kMaxSeconds / 3600.0, " h"));
  cmd->add_option(
         "--hold-seconds", options->hold_seconds,
         "How long a job paused at its lease end waits for the next round (default: a round)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--visible-devices", options->visible_devices,
                  "CUDA_VISIBLE_DEVICES value per GPU, comma-separated (default 0,1,...)")
      ->delimiter(',');
  cmd->add_option("--launch", options->launch,
                  "How jobs are started: direct (children of this agent, the default) or "
                  "slurm-step (each job lease a step of the Slurm job this agent runs in, "
                  "one GPU of --type by GRES; docs/slurm.md)")
      ->check(CLI::IsMember({"direct", "slurm-step"}));
  return cmd;
}

Status RunWorker(const WorkerOptions& options, std::ostream& out) {
  // ---- Options ----
  std::error_code ec;
  const fs::path work_dir = fs::absolute(options.work_dir, ec);
  fs::create_directories(work_dir, ec);
  if (ec) return Status::IoError("--work-dir '" + options.work_dir + "': " + ec.message());
  Result<rpc::HostPort> parsed = rpc::ParseAddress(options.scheduler);
  if (!parsed.ok()) return parsed.status().WithContext("--scheduler");
  const rpc::HostPort scheduler = *parsed;
  if (scheduler.port == 0)
    return Status::InvalidArgument("--scheduler " + options.scheduler + ": needs a port");

  agent::AgentServerOptions server;
  server.scheduler_address = scheduler.ToString();
  server.listen = options.listen;
  server.scheduler_tls_ca = options.tls_ca;
  server.tls = rpc::ServerTlsFiles{options.tls_cert, options.tls_key};
  server.iterator_http.port = options.iterator_port;
  agent::AgentOptions& agent = server.agent;
  agent.gpu_type = options.gpu_type;
  agent.num_gpus = options.gpus;
  agent.host_cpus = options.host_cpus;
  agent.host_mem_gb = options.host_mem_gb;
  agent.visible_devices = options.visible_devices;
  agent.log_dir = (work_dir / "logs").string();
  agent.checkpoint_root = options.checkpoint_dir.empty()
                              ? (work_dir / "checkpoints").string()
                              : fs::absolute(options.checkpoint_dir).string();
  agent.run_dir = options.run_dir.empty() ? fs::current_path().string()
                                          : fs::absolute(options.run_dir).string();
  if (!options.token_file.empty()) {
    std::string warning;
    Result<std::string> token = rpc::ReadClientToken(options.token_file, &warning);
    if (!token.ok()) return token.status().WithContext("--token-file");
    if (!warning.empty()) std::cerr << "gavel worker: warning: " << warning << "\n";
    agent.token = *token;
  }
  if (options.heartbeat_seconds) agent.heartbeat_interval = Seconds(*options.heartbeat_seconds);
  if (options.hold_seconds) agent.hold_timeout = Seconds(*options.hold_seconds);
  agent.kill_grace = Seconds(options.kill_grace_seconds);
  agent.lease_overrun_grace = Seconds(options.lease_grace_seconds);
  agent.startup_timeout = Seconds(options.startup_timeout_seconds);
  agent.log_retention = options.log_retention_hours > 0.0
                            ? std::optional<Seconds>(Seconds(options.log_retention_hours * 3600.0))
                            : std::nullopt;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    agent.base_env.emplace_back(text.substr(0, eq), text.substr(eq + 1));
    if (text.compare(0, eq, "PATH") == 0) agent.program_path = text.substr(eq + 1);
  }
  if (options.agent_id.empty()) {
    GAVEL_ASSIGN_OR_RETURN(agent.agent_id, LoadOrCreateAgentId(work_dir, options.gpu_type));
  } else {
    agent.agent_id = options.agent_id;
  }
  // A refused registration (a user's token, or none) ends the worker instead of retrying for
  // ever: the refusal is kept and SIGTERM wakes the sigwait below.
  auto refusal = std::make_shared<Refusal>();
  agent.on_refused = [refusal](const Status& status) {
    {
      MutexLock lock(refusal->mutex);
      if (refusal->status) return;
      refusal->status = status;
    }
    ::kill(::getpid(), SIGTERM);
  };
  GAVEL_RETURN_IF_ERROR(agent::CheckAgentOptions(agent));
  if (options.launch == "slurm-step") {
    Result<slurm::StepLaunchOptions> step = slurm::StepLaunchOptionsFor(
        std::getenv("SLURM_JOB_ID"), agent.program_path, options.gpu_type);
    if (!step.ok()) return step.status();
    Result<std::unique_ptr<slurm::SlurmApi>> api = slurm::MakeLibSlurmApi();
    if (!api.ok()) return api.status().WithContext("--launch slurm-step");
    server.launcher = std::make_shared<slurm::SlurmStepLauncher>(
        *std::move(step), std::make_unique<agent::PosixProcessLauncher>(), *std::move(api));
  }

  // ---- Signals: blocked here (and so in every thread started below), awaited at the end ----
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // ---- Run ----
  (void)rpc::RaiseDescriptorLimit();  // docs/runtime.md, "Connections"
  Result<std::unique_ptr<agent::AgentServer>> started = agent::AgentServer::Start(server);
  if (!started.ok()) return started.status();
  std::unique_ptr<agent::AgentServer> running = std::move(started).value();
  {
    const fs::path info = work_dir / "agent.json";
    const fs::path temporary = info.string() + ".tmp";
    std::ofstream(temporary) << "{\"agent_id\": " << JsonString(running->agent_id())
                             << ", \"address\": " << JsonString(running->address())
                             << ", \"iterator_url\": " << JsonString(running->iterator_url())
                             << ", \"pid\": " << ::getpid() << "}\n";
    fs::rename(temporary, info, ec);
  }
  out << "gavel worker: agent " << running->agent_id() << " (" << options.gpus << " x "
      << options.gpu_type << ") serving at " << running->address() << ", iterators at "
      << running->iterator_url() << ", scheduler " << server.scheduler_address << std::endl;

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::optional<Status> refused;
  {
    MutexLock lock(refusal->mutex);
    refused = refusal->status;
  }
  if (!refused) out << "gavel worker: signal " << signal << ": ending jobs and stopping" << std::endl;
  running->Shutdown();
  running.reset();
  if (refused) {
    return Status::FailedPrecondition("the scheduler refused this agent (" + refused->message() +
                                      "): registering GPUs needs an agent token (role `agent` in the scheduler's "
                                      "token file) or an admin's (--token-file)");
  }
  out << "gavel worker: stopped" << std::endl;
  return Status::Ok();
}

int RunWorkerCommand(const WorkerOptions& options) {
  const Status status = RunWorker(options, std::cout);
  if (!status.ok()) {
    std::cerr << "gavel worker: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
