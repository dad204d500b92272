// `gavel serve --backend slurm` (docs/slurm.md): the daemon's cluster taken from a running
// Slurm. Before the daemon starts, Discover reads the nodes and their GPU GRES through libslurm
// (the daemon then waits for those GPUs, as --expected-gpus); once it serves, Start submits
// one pilot job per (node, GPU type) that runs `gavel worker` inside its Slurm allocation,
// and keeps them (slurm::PilotKeeper): pilots of a restarted daemon are adopted, pilots Slurm
// ended are replaced; Stop ends them when the daemon is stopped in order. The daemon itself is unchanged: rounds, leases, checkpoints and job
// state go through its agents exactly as on the `agents` backend.
// Thread-safety: one thread drives a SlurmBackend; its keeper runs a thread of its own.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "gavel/core/status.h"
#include "gavel/slurm/pilots.h"
#include "gavel/slurm/slurm_api.h"

namespace gavel::cli {

struct SlurmServeOptions {
  std::string partition;          // "" = every node (pilots go to Slurm's default partition)
  std::string scheduler_address;  // what pilots dial; "" = the daemon's --listen address
  std::string agent_token_file;   // the pilots' token file (needed with --token-file)
  std::string gavel_binary;       // "" = this executable
  double reconcile_seconds = 5.0;
  bool keep_pilots = false;       // an orderly stop leaves the pilots running
};

// Declares --slurm-* on `serve`.
void AddSlurmServeOptions(CLI::App* serve, SlurmServeOptions* options);

class SlurmBackend {
 public:
  // Reads Slurm's nodes; an error when Slurm cannot be reached or no schedulable node of the
  // partition has typed GPU GRES. `gpus` is the number of GPUs the pilots will bring.
  static Result<std::unique_ptr<SlurmBackend>> Discover(const SlurmServeOptions& options,
                                                        const std::string& state_dir,
                                                        bool daemon_has_tokens, std::ostream& log);
  int gpus() const { return gpus_; }
  // Submits the missing pilots (an error here, e.g. a refused submission, is returned) and
  // keeps them from then on. `daemon_address` is the daemon's bound address.
  Status Start(const std::string& daemon_address);
  // An orderly stop (`gavel serve` got SIGINT/SIGTERM), while the daemon still serves: stops
  // replacing pilots and, unless --slurm-keep-pilots, ends them (their agents end their jobs,
  // which checkpoint and are reported) within the agents' kill grace plus a margin. A daemon
  // killed with -9 never gets here: its pilots run on and its restart adopts them.
  void Stop();
  ~SlurmBackend();

 private:
  SlurmBackend() = default;
  std::unique_ptr<slurm::SlurmApi> api_;
  slurm::PilotOptions pilot_options_;
  SlurmServeOptions options_;
  std::ostream* log_ = nullptr;
  int gpus_ = 0;
  std::unique_ptr<slurm::PilotKeeper> keeper_;
};

}  // namespace gavel::cli
