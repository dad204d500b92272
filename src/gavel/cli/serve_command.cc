// GCC 12 at -O2 -fsanitize=thread reports a false "potential null pointer dereference" in
// CLI11's detail::split (libstdc++'s vector<string> growth), depending on this file's inlining
// budget: silenced for the headers only, as in worker_command.cc (see the comment there).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include "gavel/cli/serve_command.h"

#include "gavel/cli/flag_bounds.h"
#include "gavel/cli/throughputs_option.h"

#include <cmath>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/daemon/daemon.h"
#include "gavel/mechanism/scorers.h"
#include "gavel/rpc/auth.h"
#pragma GCC diagnostic pop

namespace gavel::cli {

CLI::App* AddServeCommand(CLI::App& app, ServeOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the scheduler daemon: rounds on a wall clock, jobs from `gavel submit`, "
               "GPUs from `gavel worker`");
  cmd->add_option("--listen", o->listen, "Address to serve on (default 127.0.0.1:50060)");
  cmd->add_option("--state", o->state_dir, "State directory (SQLite database; created)")
      ->required();
  cmd->add_option("-p,--policy", o->policy,
                  "Policy name (see `gavel policies`; default las_perf)");
  cmd->add_option("--round-seconds", o->round_seconds, "Round length in seconds (default 360)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--token-file", o->token_file,
                  "Tokens, one `<token> <user> [admin|agent]` per line; without it anyone may "
                  "call");
  cmd->add_option("--throughputs", o->throughputs_file,
                  "Throughput table (default: the shipped simulation table)");
  AddThroughputsExtraOption(*cmd, &o->throughputs_extra);
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Shared checkpoint root: job N checkpoints to DIR/job-N on every agent");
  cmd->add_option("--instance-costs", o->instance_costs,
                  "$/GPU-hour per GPU type, TYPE=PRICE,... (needed by the cost policies)")
      ->delimiter(',');
  cmd->add_option("--entity-weights", o->entity_weights,
                  "Weight per entity for the hierarchical policies, NAME=WEIGHT,... (an entity "
                  "not listed weighs 1; jobs name theirs with `gavel submit --entity`)")
      ->delimiter(',');
  cmd->add_option("--report-grace-seconds", o->report_grace_seconds,
                  "Take a round's reports this long after its end (the next round has "
                  "begun), then kill the stragglers (default min(60, round/2))")
      ->check(Bounded(0.0, bounds::kMaxRoundSeconds, " s"));
  cmd->add_flag("--rounds-on-time", o->rounds_on_time,
                "Begin each round at its time whatever reports are still out (taken late); "
                "default: a round waits for its last report, as `gavel simulate` models");
  cmd->add_option("--heartbeat-seconds", o->heartbeat_seconds,
                  "Heartbeat interval asked of agents (default 2)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--heartbeat-timeout-seconds", o->heartbeat_timeout_seconds,
                  "An agent silent this long is dead (default 10)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--max-retries", o->max_retries,
                  "Retries of a crashing job before it is failed (default 3)")
      ->check(BoundedInteger(0, 1000));
  cmd->add_option("--retry-backoff-seconds", o->retry_backoff_seconds,
                  "First retry delay; doubles per crash in a row (default 10)")
      ->check(Bounded(0.0, bounds::kMaxRoundSeconds, " s"));
  cmd->add_option("--seed", o->seed, "Seed for the policy and type shuffles (default 0)")
      ->check(SeedFlag());
  cmd->add_option("--lag-bound", o->lag_bound,
                  "Bounded lag: a running job keeps its GPUs until a waiting job is owed more "
                  "than RESTARTS of its measured start-ups (0 = off; default 200 for policies "
                  "the mechanism time-slices, as `gavel simulate`)")
      ->check(Bounded(0.0, 1e6, " restarts"));
  cmd->add_option("--expected-gpus", o->expected_gpus,
                  "Start the first round only once this many GPUs registered (default 0)")
      ->check(BoundedInteger(0, bounds::kMaxGpus));
  cmd->add_flag("-q,--quiet", o->quiet, "Do not print the event log");
  cmd->add_option("--metrics-listen", o->metrics_listen,
                  "HOST:PORT to serve Prometheus metrics (/metrics) and the dashboard (/) on");
  cmd->add_option("--tls-cert", o->tls_cert, "PEM certificate: serve gRPC over TLS");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--tls-ca", o->tls_ca,
                  "PEM CA that signed the agents' certificates: call agents over TLS");
  cmd->add_option("--backend", o->backend,
                  "agents (default: `gavel worker`s register) or slurm (the nodes and GPU GRES "
                  "of the Slurm that SLURM_CONF names; docs/slurm.md)")
      ->check(CLI::IsMember({"agents", "slurm"}));
  AddSlurmServeOptions(cmd, &o->slurm);
  return cmd;
}

namespace {

// NAME=NUMBER,... as a map; an error names the flag and the item. Each number must lie in
// [low, high] (bounds.h), so a price or weight can never reach an LP out of scale.
Result<std::map<std::string, double>> ParseNamedNumbers(const std::string& flag,
                                                        const std::string& expected,
                                                        const char* unit,
                                                        const std::vector<std::string>& items,
                                                        double low, double high) {
  std::map<std::string, double> out;
  for (const std::string& item : items) {
    const std::size_t eq = item.find('=');
    const std::string where = flag + " \"" + item + "\"";
    const std::optional<double> value =
        eq == std::string::npos || eq == 0 ? std::nullopt : ParseFiniteDouble(item.substr(eq + 1));
    if (!value) return Status::InvalidArgument(where + ": expected " + expected);
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(*value, low, high, where, unit));
    if (!out.emplace(item.substr(0, eq), *value).second) {
      return Status::InvalidArgument(flag + ": " + item.substr(0, eq) + " is given twice");
    }
  }
  return out;
}

}  // namespace

Status RunServe(const ServeOptions& o, std::ostream& out) {
  // Each number is held to its bound by its flag's validator; what is left is how two relate.
  if (!(o.heartbeat_timeout_seconds > o.heartbeat_seconds)) {
    return Status::InvalidArgument(
        "--heartbeat-timeout-seconds: must exceed --heartbeat-seconds (> 0)");
  }
  using NamedNumbers = std::map<std::string, double>;
  GAVEL_ASSIGN_OR_RETURN(
      NamedNumbers instance_costs,
      ParseNamedNumbers("--instance-costs", "TYPE=PRICE ($/GPU-hour)", " $/GPU-hour",
                        o.instance_costs, 0.0, bounds::kMaxPrice));
  GAVEL_ASSIGN_OR_RETURN(
      NamedNumbers entity_weights,
      ParseNamedNumbers("--entity-weights", "NAME=WEIGHT", "", o.entity_weights,
                        bounds::kMinWeight, bounds::kMaxWeight));
  const std::string table_path =
      o.throughputs_file.empty() ? DefaultThroughputsFile() : o.throughputs_file;
  GAVEL_ASSIGN_OR_RETURN(ThroughputTable table,
                         ThroughputTable::LoadFiles(table_path, o.throughputs_extra));

  // The token file's mode is checked where it is read (rpc::TokenRegistry::LoadFile, in the
  // daemon), which refuses one others may write and warns on stderr about one they may read.
  daemon::DaemonOptions options;
  options.listen = o.listen;
  options.state_dir = o.state_dir;
  options.token_file = o.token_file;
  options.log_events = !o.quiet;
  options.metrics_listen = o.metrics_listen;
  options.tls = rpc::ServerTlsFiles{o.tls_cert, o.tls_key};
  options.tls_ca = o.tls_ca;
  GAVEL_ASSIGN_OR_RETURN(options.core.policy, daemon::ChosenPolicy::Resolve(o.policy));
  options.core.throughputs = std::make_shared<const ThroughputTable>(std::move(table));
  options.core.round_length = Seconds(o.round_seconds);
  options.core.report_grace = Seconds(o.report_grace_seconds);
  options.core.rounds_on_time = o.rounds_on_time;
  // Jobs submitted together on an idle cluster start in one round (core_options.h); GetStatus
  // reports the pause, which `gavel replay --compare` simulates.
  options.core.max_arrival_settle = Seconds(1.0);
  options.core.heartbeat_interval = Seconds(o.heartbeat_seconds);
  options.core.heartbeat_timeout = Seconds(o.heartbeat_timeout_seconds);
  options.core.max_retries = o.max_retries;
  options.core.retry_backoff = Seconds(o.retry_backoff_seconds);
  // Sent to agents in every launch: a relative path would be resolved on each agent's host
  // against its own directory, so it is made absolute here (shared storage is mounted at the
  // same path everywhere).
  options.core.checkpoint_root =
      o.checkpoint_dir.empty() ? "" : std::filesystem::absolute(o.checkpoint_dir).string();
  options.core.instance_costs = std::move(instance_costs);
  options.core.entity_weights = std::move(entity_weights);
  options.core.seed = o.seed;
  // The policies that pick what runs themselves every round have no allocation to lag.
  options.core.lag_bound_restarts =
      o.lag_bound.value_or(options.core.policy.capabilities().reallocates_every_round
                               ? 0.0
                               : mechanism::kDefaultLagBoundRestarts);
  options.core.expected_gpus = o.expected_gpus;

  // The Slurm backend: the cluster Slurm grants, checkpoints where every node sees them.
  std::unique_ptr<SlurmBackend> slurm;
  if (o.backend != "slurm" && !o.slurm.partition.empty()) {
    return Status::InvalidArgument("--slurm-partition: only with --backend slurm");
  }
  if (o.backend != "slurm" && o.slurm.keep_pilots) {
    return Status::InvalidArgument("--slurm-keep-pilots: only with --backend slurm");
  }
  if (o.backend == "slurm") {
    // Each job lease is a Slurm job step holding one GPU of its own (gres), and Slurm 22.05
    // gives two steps the same GPU only with --overlap, which lets any step share any GPU:
    // the pairs a packing policy plans cannot be placed on one device through Slurm.
    if (options.core.policy.capabilities().packing) {
      return Status::InvalidArgument(
          "--policy " + o.policy +
          ": it places two jobs on one GPU, which --backend slurm cannot (each job runs as a "
          "Slurm job step holding its own GPU); use a policy without space sharing with Slurm, "
          "or our own agents (gavel worker) for packing");
    }
    GAVEL_ASSIGN_OR_RETURN(slurm, SlurmBackend::Discover(o.slurm, o.state_dir,
                                                         !o.token_file.empty(), std::cerr));
    if (options.core.expected_gpus == 0) options.core.expected_gpus = slurm->gpus();
    if (options.core.checkpoint_root.empty()) {
      options.core.checkpoint_root =
          (std::filesystem::absolute(o.state_dir) / "checkpoints").string();
    }
  }

  // Signals go to the waiting thread below, never to gRPC's or the daemon's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Idle connections must never exhaust descriptors (docs/runtime.md, "Connections").
  (void)rpc::RaiseDescriptorLimit();
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<daemon::Daemon> daemon,
                         daemon::Daemon::Start(std::move(options)));
  out << "listening on " << daemon->address() << std::endl;
  if (daemon->metrics_port() != 0) {
    out << "metrics on " << daemon->metrics_address() << std::endl;
  }
  if (slurm) {
    if (Status started = slurm->Start(daemon->address()); !started.ok()) {
      daemon->Shutdown();
      return started;
    }
  }
  if (o.token_file.empty()) {
    std::cerr << "gavel serve: no --token-file: every caller is an admin; keep the address on "
                 "loopback\n";
  }
  std::atomic<bool> daemon_failed{false};
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    std::cerr << "gavel serve: signal " << signal << ", shutting down\n";
    // An operator's stop ends the pilots while the daemon still takes their reports; a failed
    // daemon leaves them for its restart to adopt.
    if (slurm && !daemon_failed.load()) slurm->Stop();
    daemon->Shutdown();
  });
  const Status status = daemon->Wait();
  daemon->Shutdown();
  if (!status.ok()) {
    // The waiter still waits for a signal; send it one so it can be joined.
    daemon_failed.store(true);
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  return status;
}

int RunServeCommand(const ServeOptions& options) {
  const Status status = RunServe(options, std::cout);
  if (!status.ok()) {
    std::cerr << "gavel serve: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
