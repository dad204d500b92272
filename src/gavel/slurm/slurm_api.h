// SlurmApi: the few operations the Slurm backend needs from a running Slurm, as a port, so the
// backend's logic is tested on a fake and only one file (libslurm_api.cc) includes slurm.h.
//
// The real implementation talks to slurmctld through libslurm's C API (Debian's libslurm-dev,
// the library sinfo/squeue/sbatch/scancel are built on) rather than parsing command output or
// going through slurmrestd: no output format to track across Slurm versions, no extra daemon
// (slurmrestd needs its own JWT or socket authentication set up) and no HTTP client. The
// price is linking the exact libslurm ABI of the installed Slurm (libslurm38 = 22.05 on
// Debian 12), which is what the package manager guarantees. docs/slurm.md says more.
//
// libslurm reads SLURM_CONF (or /etc/slurm/slurm.conf) once, when the first LibSlurmApi is
// made. Thread-safety: an implementation may be called from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/slurm/gres.h"

namespace gavel::slurm {

struct SlurmNode {
  std::string name;
  std::string state;          // Slurm's word for it: IDLE, MIXED, ALLOCATED, DOWN, ...
  bool schedulable = false;   // up and neither drained, draining nor down
  std::string gres;           // as reported ("gpu:k80:2(S:0)")
  std::vector<std::string> partitions;
};

struct SlurmJob {
  std::uint32_t id = 0;
  std::string name;
  std::string state;   // PENDING, RUNNING, COMPLETED, ...
  bool active = false; // pending, running, suspended, configuring, requeued or completing
  std::string nodes;   // where it runs ("" while pending)
  std::uint32_t array_job_id = 0;  // the array this task belongs to (0 = not an array task)
};

// A job step (srun inside an allocation), as slurmctld lists it (squeue -s).
struct SlurmStep {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string name;
  std::string tres_per_node;  // "gres:gpu:k80:1"
  std::string nodes;
};

// A batch job to submit (what sbatch's options would set); it gets the submitter's whole
// environment, as sbatch's default --export=ALL.
struct BatchJob {
  std::string name;
  std::string script;         // "#!/bin/sh\n..."
  std::string partition;      // "" = the default partition
  std::string node;           // the one node it must run on ("" = any)
  std::string tres_per_node;  // "gres:gpu:k80:2"
  std::string work_dir;       // absolute
  std::string output;         // stdout and stderr file, absolute; %j = the job id
  bool requeue = true;        // requeued (not failed) when its node fails
  std::string array;          // "0-9": a job array of these task ids ("" = one job)
  int cpus_per_gpu = 0;       // --cpus-per-gpu (0 = Slurm's default)
};

class SlurmApi {
 public:
  virtual ~SlurmApi() = default;
  virtual Result<std::vector<SlurmNode>> Nodes() = 0;
  virtual Result<std::vector<SlurmJob>> Jobs() = 0;
  virtual Result<std::uint32_t> Submit(const BatchJob& job) = 0;
  // Sends `signal` to the job (SIGKILL ends it, as scancel does).
  virtual Status Signal(std::uint32_t job_id, int signal) = 0;
  // Sends `signal` to the job's batch script only (scancel --batch), not to its steps.
  virtual Status SignalBatch(std::uint32_t job_id, int signal) = 0;
  // The job's steps (slurm_get_job_steps), the batch step excluded; none once the job ended.
  virtual Result<std::vector<SlurmStep>> Steps(std::uint32_t job_id) = 0;
  // Sends `signal` to the tasks of one step (scancel --signal=SIG JOB.STEP).
  virtual Status SignalStep(std::uint32_t job_id, std::uint32_t step_id, int signal) = 0;
};

// The libslurm implementation; an error when no slurm.conf can be read.
Result<std::unique_ptr<SlurmApi>> MakeLibSlurmApi();

}  // namespace gavel::slurm
