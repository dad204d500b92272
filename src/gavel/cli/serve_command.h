// `gavel serve`: the scheduler daemon (src/gavel/daemon) in the foreground until SIGINT or
// SIGTERM (docs/runtime.md).
//
//   gavel serve --listen 127.0.0.1:PORT --state DIR --policy NAME --round-seconds S
//               [--token-file F] [--throughputs FILE] [--checkpoint-dir DIR] ...
//
// Prints one line `listening on HOST:PORT` on stdout once it serves (with --listen ...:0, the
// port it picked), with --metrics-listen a line `metrics on HOST:PORT`, then the event log on
// stderr.
// Thread-safety: RunServeCommand blocks SIGINT/SIGTERM in the calling thread (so in every
// thread it starts) and waits for them; call it from main.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gavel/cli/slurm_backend.h"
#include "gavel/core/status.h"

namespace gavel::cli {

struct ServeOptions {
  std::string listen = "127.0.0.1:50060";
  std::string state_dir;
  // The recommended policy (docs/policies.md, "las_perf"): on realistic clusters the lowest
  // average JCT of the field's schedulers at high load, within hundredths of an hour of
  // oasis at light load; whole GPUs, few restarts.
  std::string policy = "las_perf";
  double round_seconds = 360.0;
  std::string token_file;
  std::string throughputs_file;  // empty = the shipped simulation table
  std::vector<std::string> throughputs_extra;  // more GPU types (gavel profile's output)
  std::string checkpoint_dir;    // empty = the agents choose
  // $/GPU-hour per GPU type, "v100=2.48,k80=0.45" (the cost policies need every type's).
  std::vector<std::string> instance_costs;
  std::vector<std::string> entity_weights;  // NAME=WEIGHT
  double report_grace_seconds = 0.0;  // 0 = min(60, round/2)
  bool rounds_on_time = false;
  double heartbeat_seconds = 2.0;
  double heartbeat_timeout_seconds = 10.0;
  int max_retries = 3;
  double retry_backoff_seconds = 10.0;
  std::uint64_t seed = 0;
  // The bounded lag's K over each job's measured start-up (daemon::CoreOptions::
  // lag_bound_restarts); unset = the simulator's default for the policy.
  std::optional<double> lag_bound;
  int expected_gpus = 0;
  bool quiet = false;
  std::string metrics_listen;  // HOST:PORT of /metrics and the dashboard; empty = none
  std::string tls_cert;        // PEM files; TLS on the gRPC port when given (docs: "TLS")
  std::string tls_key;
  std::string tls_ca;          // CA of the agents' certificates (TLS to the agents)
  // "agents" (our own `gavel worker`s register) or "slurm" (the cluster from a running Slurm,
  // agents run as Slurm jobs: slurm_backend.h, docs/slurm.md).
  std::string backend = "agents";
  SlurmServeOptions slurm;
};

// Declares the subcommand and its options on `app`, bound to `options`.
CLI::App* AddServeCommand(CLI::App& app, ServeOptions* options);

// Runs the daemon until a signal. Bad options, an unreadable token file or throughput table,
// a state directory in use or a port that cannot be bound are reported before serving.
Status RunServe(const ServeOptions& options, std::ostream& out);

// main's glue: runs, prints an error to stderr, returns the exit code.
int RunServeCommand(const ServeOptions& options);

}  // namespace gavel::cli
