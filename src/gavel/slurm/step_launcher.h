// SlurmStepLauncher: a ProcessLauncher (agent/ports.h) that starts every job process of an
// agent running inside a Slurm allocation (a pilot, docs/slurm.md) as a job step of that
// allocation, so that Slurm launches, binds and accounts each job lease:
//
//   srun --jobid=JOB --job-name=gavel-job-J.round-R.worker-W --nodes=1 --ntasks=1
//        --cpus-per-task=1 --gres=gpu:TYPE:1 --export=ALL --quiet -- ARGV...
//
// srun runs in the place of the process (a child of the agent in its own process group, with
// the job's log files, environment and working directory); the step's task gets that
// environment (GAVEL_* as before) with CUDA_VISIBLE_DEVICES set by Slurm to the GPU its GRES
// bound. srun exits with the task, so PollExit is srun's.
//
// Signals: srun answers SIGTERM by killing its step with SIGKILL, which would cost the job
// its checkpoint. So SignalGroup sends every signal but SIGKILL to the step itself through
// slurmctld (slurm_signal_job_step: the iterator's SIGTERM contract is unchanged); the step
// is found by its name, which is unique per (job, round, GPU). SIGKILL goes to the step and
// to srun's group. When the step cannot be found (srun is still creating it, or it ended) or
// slurmctld cannot be reached, the signal goes to srun, which ends the step its own way.
//
// Thread-safety: Launch and the processes' methods may be called from any thread; the
// SlurmApi is used under one mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gavel/agent/ports.h"
#include "gavel/core/mutex.h"
#include "gavel/slurm/slurm_api.h"

namespace gavel::slurm {

struct StepLaunchOptions {
  std::string srun;           // absolute path of srun
  std::uint32_t job_id = 0;   // the allocation the steps belong to (SLURM_JOB_ID)
  std::string gpu_gres;       // per step, e.g. "gpu:k80:1" ("" = no GRES)
};

// The step's name for a launch: "gavel-job-J.round-R.worker-W" from the launch's GAVEL_JOB_ID,
// GAVEL_ROUND_ID and GAVEL_WORKER_ID ("gavel-step" parts left out when absent).
std::string StepName(const agent::LaunchSpec& spec);

// srun's argv that runs `spec.argv` as a step.
std::vector<std::string> StepArgv(const agent::LaunchSpec& spec, const StepLaunchOptions& options);

// The options for an agent inside a Slurm allocation: SLURM_JOB_ID from `job_id_text`, srun
// resolved on `path`, one GPU of `gpu_type` per step. Errors name what is missing.
Result<StepLaunchOptions> StepLaunchOptionsFor(const char* job_id_text, const std::string& path,
                                               const std::string& gpu_type);

class SlurmStepLauncher final : public agent::ProcessLauncher {
 public:
  SlurmStepLauncher(StepLaunchOptions options, std::unique_ptr<agent::ProcessLauncher> inner,
                    std::unique_ptr<SlurmApi> api);
  Result<std::unique_ptr<agent::Process>> Launch(const agent::LaunchSpec& spec) override;

  // The newest step of the allocation named `name`, if slurmctld lists one.
  std::optional<std::uint32_t> FindStep(const std::string& name);
  // Signals the step named `name`; false when it was not found or slurmctld refused.
  bool SignalStep(const std::string& name, int signal);

 private:
  const StepLaunchOptions options_;
  const std::unique_ptr<agent::ProcessLauncher> inner_;
  Mutex api_mutex_;
  const std::unique_ptr<SlurmApi> api_ GAVEL_PT_GUARDED_BY(api_mutex_);
};

}  // namespace gavel::slurm
