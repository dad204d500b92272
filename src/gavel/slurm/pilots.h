// Pilots: how `gavel serve --backend slurm` takes its cluster from a running Slurm and runs
// its rounds there (docs/slurm.md).
//
// For every schedulable node of the partition and every GPU type in the node's GRES, one
// "pilot" batch job asks Slurm for all of that node's GPUs of that type
// (--nodelist NODE --gres gpu:TYPE:N, requeueable) and runs `gavel worker` inside the
// allocation: the agent registers those GPUs (the devices Slurm handed it, by
// CUDA_VISIBLE_DEVICES) with the daemon, and from then on every round's plan is carried out by
// the daemon's unchanged AgentExecutor on that agent, inside Slurm's allocation. The daemon's
// cluster is thus exactly what Slurm grants: a node drained or down loses its pilot (Slurm
// ends or requeues it), its agent stops heart-beating and the daemon reschedules its jobs from
// their checkpoints, as for any lost agent; when the node returns, the keeper submits a new
// pilot.
//
// Pilots are named "<prefix>.<node>.<type>" where the prefix is derived from the daemon's
// state directory, so a restarted daemon (even after kill -9) finds its own pilots still
// running and adopts them instead of submitting twins, and two daemons on one Slurm never
// take each other's. Each pilot keeps its agent's work directory (and so its stable agent id
// and worker ids) at <work_root>/<node>.<type>.
//
// PlanPilots, PilotName, PilotJob and NamePrefixFor are pure. PilotKeeper is thread-safe;
// its SlurmApi is used by one thread at a time (the caller's before Start, the keeper's
// thread after).
#pragma once

#include <condition_variable>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/slurm/slurm_api.h"

namespace gavel::slurm {

struct Pilot {
  std::string node;
  std::string type;  // lower case GPU type
  int gpus = 0;
  std::string job_name;
  friend bool operator==(const Pilot&, const Pilot&) = default;
};

struct PilotOptions {
  std::string gavel_binary;       // absolute path of `gavel` as the nodes see it
  std::string scheduler_address;  // host:port the agents dial
  std::string work_root;          // absolute; one subdirectory per pilot
  std::string partition;          // "" = Slurm's default partition (and every node)
  std::string token_file;         // the agents' token file ("" = none)
  std::string name_prefix;        // NamePrefixFor(state directory)
  double kill_grace_seconds = 10.0;
};

// "gavel-" and 8 hex digits of a hash (FNV-1a, stable across builds) of `state_dir`.
std::string NamePrefixFor(const std::string& state_dir);

std::string PilotName(const std::string& prefix, const std::string& node,
                      const std::string& type);

// One pilot per (schedulable node in `partition`, GPU type), in node order. A node whose GRES
// cannot be read (an untyped GPU) gets no pilot and a line in `skipped` saying why.
std::vector<Pilot> PlanPilots(const std::vector<SlurmNode>& nodes, const std::string& partition,
                              const std::string& prefix, std::vector<std::string>* skipped);

// `word` single-quoted for /bin/sh (the batch scripts Gavel writes).
std::string ShellQuote(const std::string& word);

// The batch job of a pilot: the script exec's `gavel worker` with the GPUs Slurm handed it.
BatchJob PilotJob(const Pilot& pilot, const PilotOptions& options);

class PilotKeeper {
 public:
  using Log = std::function<void(const std::string&)>;
  PilotKeeper(SlurmApi* api, PilotOptions options, Log log);
  ~PilotKeeper();
  PilotKeeper(const PilotKeeper&) = delete;
  PilotKeeper& operator=(const PilotKeeper&) = delete;

  // One pass: reads nodes and jobs from Slurm and submits every planned pilot that has no
  // active Slurm job of its name. Returns how many it submitted, or the first refusal (after
  // trying every pilot: one refused pilot does not keep the others out).
  Result<int> ReconcileOnce();
  // Repeats ReconcileOnce every `interval` on a thread of its own until Stop (errors are
  // logged, never fatal: Slurm may be briefly unreachable).
  void Start(Seconds interval);
  void Stop();
  // An orderly end of the pilots (`gavel serve` stopped by a signal; call after Stop): every
  // active job named "<prefix>.*" that runs gets SIGTERM on its batch script only, so its
  // agent ends its jobs (which checkpoint on SIGTERM) and reports them while the daemon still
  // listens; a pending one is cancelled at once. Pilots still active after `grace` are
  // cancelled (SIGKILL, as scancel). Returns how many pilots it ended.
  Result<int> CancelPilots(Seconds grace);

 private:
  SlurmApi* api_;
  const PilotOptions options_;
  const Log log_;
  Mutex mutex_;
  std::condition_variable wake_;
  bool stop_ GAVEL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace gavel::slurm
