// `gavel worker`: runs a worker agent (src/gavel/agent) on this host until SIGINT or SIGTERM.
//
//   gavel worker --scheduler 127.0.0.1:PORT --type v100 --gpus N --work-dir DIR
//                [--token-file F] [--heartbeat-seconds S] [--listen HOST:PORT] ...
//
// The work directory holds the agent's stable id (`agent_id`, created on first start, so a
// restarted agent gets its worker ids back), the job logs (`logs/job-<id>.out|.err`), the job
// checkpoints unless --checkpoint-dir names shared storage (`checkpoints/job-<id>/`), and
// `agent.json` (agent id, WorkerAgent address, iterator URL, pid) for scripts and tests.
// Thread-safety: RunWorker blocks SIGINT/SIGTERM/SIGHUP in the calling thread (so in every
// thread it starts) and waits for them; call it from main.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gavel/core/status.h"

namespace gavel::cli {

struct WorkerOptions {
  std::string scheduler = "127.0.0.1:50060";
  std::string gpu_type;
  int gpus = 1;
  double host_cpus = 0.0;    // --cpus; 0 = not advertised
  double host_mem_gb = 0.0;  // --mem-gb; 0 = not advertised
  std::string work_dir;
  std::string token_file;
  std::string tls_ca;    // PEM CA of a TLS scheduler (--tls-ca); empty = plaintext
  std::string tls_cert;  // TLS on this agent's own service (--tls-cert/--tls-key)
  std::string tls_key;
  std::optional<double> heartbeat_seconds;
  std::string listen = "127.0.0.1:0";
  int iterator_port = 0;
  std::string checkpoint_dir;  // empty = <work-dir>/checkpoints
  std::string run_dir;         // empty = the current directory
  std::string agent_id;        // empty = <work-dir>/agent_id (created if missing)
  double kill_grace_seconds = 10.0;
  double lease_grace_seconds = 30.0;
  double startup_timeout_seconds = 600.0;
  double log_retention_hours = 168.0;  // 0 = keep job logs for ever
  std::optional<double> hold_seconds;
  std::vector<std::string> visible_devices;
  // "direct": each job a child process of the agent; "slurm-step": each job lease a job step
  // of the Slurm allocation the agent runs in (a pilot of `gavel serve --backend slurm`).
  std::string launch = "direct";
};

// Declares the subcommand and its options on `app`, bound to `options`.
CLI::App* AddWorkerCommand(CLI::App& app, WorkerOptions* options);

// Runs the agent until a signal; errors (bad options, unreadable token file, ports that cannot
// be bound) are returned before anything runs, naming the option.
Status RunWorker(const WorkerOptions& options, std::ostream& out);

// main's glue: runs, prints an error to stderr, returns the exit code.
int RunWorkerCommand(const WorkerOptions& options);

}  // namespace gavel::cli
