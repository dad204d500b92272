#include "gavel/cli/slurm_backend.h"

#include <unistd.h>

#include <filesystem>

#include "gavel/cli/flag_bounds.h"
#include "gavel/core/mutex.h"

namespace gavel::cli {

namespace fs = std::filesystem;

void AddSlurmServeOptions(CLI::App* serve, SlurmServeOptions* o) {
  serve->add_option("--slurm-partition", o->partition,
                    "With --backend slurm: the partition whose nodes Gavel schedules");
  serve->add_option("--slurm-scheduler-address", o->scheduler_address,
                    "With --backend slurm: host:port the pilots reach this daemon at "
                    "(default: the --listen address)");
  serve->add_option("--slurm-agent-token-file", o->agent_token_file,
                    "With --backend slurm and --token-file: the token file (role agent) "
                    "the pilots' agents read, on storage the nodes share");
  serve->add_option("--slurm-gavel", o->gavel_binary,
                    "With --backend slurm: path of `gavel` on the nodes (default: this one)");
  serve->add_option("--slurm-reconcile-seconds", o->reconcile_seconds,
                    "With --backend slurm: how often lost pilots are replaced (default 5)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  serve->add_flag("--slurm-keep-pilots", o->keep_pilots,
                  "With --backend slurm: leave the pilot jobs running when this daemon is "
                  "stopped (default: a stop by SIGINT/SIGTERM ends them)");
}

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::Discover(const SlurmServeOptions& options,
                                                             const std::string& state_dir,
                                                             bool daemon_has_tokens,
                                                             std::ostream& log) {
  if (daemon_has_tokens && options.agent_token_file.empty()) {
    return Status::InvalidArgument(
        "--backend slurm with --token-file needs --slurm-agent-token-file (the agents' token)");
  }
  std::unique_ptr<SlurmBackend> backend(new SlurmBackend());
  backend->options_ = options;
  backend->log_ = &log;
  GAVEL_ASSIGN_OR_RETURN(backend->api_, slurm::MakeLibSlurmApi());
  Result<std::vector<slurm::SlurmNode>> nodes = backend->api_->Nodes();
  if (!nodes.ok()) return nodes.status().WithContext("--backend slurm");

  std::error_code ec;
  const std::string state = fs::absolute(state_dir, ec).lexically_normal().string();
  slurm::PilotOptions& pilot = backend->pilot_options_;
  pilot.name_prefix = slurm::NamePrefixFor(state);
  pilot.work_root = state + "/slurm";
  pilot.partition = options.partition;
  pilot.token_file =
      options.agent_token_file.empty() ? "" : fs::absolute(options.agent_token_file).string();
  if (options.gavel_binary.empty()) {
    pilot.gavel_binary = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec) return Status::IoError("cannot find this executable (give --slurm-gavel): " + ec.message());
  } else {
    pilot.gavel_binary = fs::absolute(options.gavel_binary).string();
  }

  std::vector<std::string> skipped;
  const std::vector<slurm::Pilot> pilots =
      slurm::PlanPilots(*nodes, options.partition, pilot.name_prefix, &skipped);
  for (const std::string& line : skipped) log << "gavel serve: slurm: no pilot for " << line << "\n";
  for (const slurm::Pilot& p : pilots) backend->gpus_ += p.gpus;
  if (pilots.empty()) {
    return Status::FailedPrecondition(
        "--backend slurm: no schedulable node" +
        (options.partition.empty() ? std::string() : " of partition " + options.partition) +
        " has typed GPU GRES (gpu:TYPE:N)");
  }
  log << "gavel serve: slurm: " << pilots.size() << " pilots (" << backend->gpus_
      << " GPUs) named " << pilot.name_prefix << ".NODE.TYPE\n";
  return backend;
}

Status SlurmBackend::Start(const std::string& daemon_address) {
  pilot_options_.scheduler_address =
      options_.scheduler_address.empty() ? daemon_address : options_.scheduler_address;
  // The keeper logs from its thread, the daemon's event log from others: one line at a time.
  auto mutex = std::make_shared<Mutex>();
  std::ostream* log = log_;
  keeper_ = std::make_unique<slurm::PilotKeeper>(
      api_.get(), pilot_options_, [mutex, log](const std::string& line) {
        MutexLock lock(*mutex);
        *log << "gavel serve: " << line << std::endl;
      });
  Result<int> first = keeper_->ReconcileOnce();
  if (!first.ok()) return first.status().WithContext("--backend slurm");
  keeper_->Start(Seconds(options_.reconcile_seconds));
  return Status::Ok();
}

void SlurmBackend::Stop() {
  if (!keeper_) return;
  keeper_->Stop();
  if (options_.keep_pilots) {
    *log_ << "gavel serve: slurm: --slurm-keep-pilots: leaving the pilots running\n";
    return;
  }
  // The agents' SIGTERM-to-SIGKILL grace for their jobs, and time to report them.
  const Result<int> ended = keeper_->CancelPilots(Seconds(pilot_options_.kill_grace_seconds + 10.0));
  if (!ended.ok()) {
    *log_ << "gavel serve: slurm: ending the pilots: " << ended.status().message() << "\n";
  } else {
    *log_ << "gavel serve: slurm: ended " << *ended << " pilots\n";
  }
}

SlurmBackend::~SlurmBackend() {
  if (keeper_) keeper_->Stop();
}

}  // namespace gavel::cli
