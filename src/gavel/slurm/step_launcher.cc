#include "gavel/slurm/step_launcher.h"

#include <csignal>
#include <cstdlib>
#include <utility>

#include "gavel/agent/process.h"

namespace gavel::slurm {
namespace {

std::string EnvOf(const agent::LaunchSpec& spec, const std::string& key) {
  for (const auto& [k, v] : spec.env) {
    if (k == key) return v;
  }
  return "";
}

// srun in the place of the job process: signals other than SIGKILL go to the step.
class StepProcess final : public agent::Process {
 public:
  StepProcess(std::unique_ptr<agent::Process> srun, SlurmStepLauncher* launcher, std::string name)
      : srun_(std::move(srun)), launcher_(launcher), name_(std::move(name)) {}
  int pid() const override { return srun_->pid(); }
  void SignalGroup(int signal) override {
    if (srun_->PollExit()) return;  // the step ended with srun: nothing to signal
    const bool delivered = launcher_->SignalStep(name_, signal);
    // SIGKILL must end srun even when slurmctld took it; anything undelivered goes to srun.
    if (signal == SIGKILL || !delivered) srun_->SignalGroup(signal);
  }
  std::optional<agent::ExitStatus> PollExit() override { return srun_->PollExit(); }

 private:
  const std::unique_ptr<agent::Process> srun_;
  SlurmStepLauncher* const launcher_;
  const std::string name_;
};

}  // namespace

std::string StepName(const agent::LaunchSpec& spec) {
  std::string name = "gavel-job-" + EnvOf(spec, "GAVEL_JOB_ID");
  if (const std::string round = EnvOf(spec, "GAVEL_ROUND_ID"); !round.empty()) {
    name += ".round-" + round;
  }
  if (const std::string worker = EnvOf(spec, "GAVEL_WORKER_ID"); !worker.empty()) {
    name += ".worker-" + worker;
  }
  return name;
}

std::vector<std::string> StepArgv(const agent::LaunchSpec& spec,
                                  const StepLaunchOptions& options) {
  std::vector<std::string> argv = {options.srun,
                                   "--jobid=" + std::to_string(options.job_id),
                                   "--job-name=" + StepName(spec),
                                   "--nodes=1",
                                   "--ntasks=1",
                                   "--cpus-per-task=1"};
  if (!options.gpu_gres.empty()) argv.push_back("--gres=" + options.gpu_gres);
  // Explicit: a pilot submitted with --export=NONE would pass SLURM_EXPORT_ENV=NONE on to
  // srun, and the job would lose its GAVEL_* environment.
  argv.push_back("--export=ALL");
  argv.push_back("--quiet");
  argv.push_back("--");
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return argv;
}

Result<StepLaunchOptions> StepLaunchOptionsFor(const char* job_id_text, const std::string& path,
                                               const std::string& gpu_type) {
  StepLaunchOptions options;
  const std::string text = job_id_text == nullptr ? "" : job_id_text;
  char* end = nullptr;
  const unsigned long id = text.empty() ? 0 : std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0' || id == 0 || id > 0xffffffffUL) {
    return Status::FailedPrecondition(
        "--launch slurm-step: SLURM_JOB_ID is '" + text +
        "', want the id of the Slurm job this agent runs in (start it from a batch script)");
  }
  options.job_id = static_cast<std::uint32_t>(id);
  Result<std::string> srun = agent::ResolveProgram("srun", path);
  if (!srun.ok()) return srun.status().WithContext("--launch slurm-step");
  options.srun = *srun;
  if (!gpu_type.empty()) options.gpu_gres = "gpu:" + gpu_type + ":1";
  return options;
}

SlurmStepLauncher::SlurmStepLauncher(StepLaunchOptions options,
                                     std::unique_ptr<agent::ProcessLauncher> inner,
                                     std::unique_ptr<SlurmApi> api)
    : options_(std::move(options)), inner_(std::move(inner)), api_(std::move(api)) {}

Result<std::unique_ptr<agent::Process>> SlurmStepLauncher::Launch(const agent::LaunchSpec& spec) {
  agent::LaunchSpec step = spec;
  step.argv = StepArgv(spec, options_);
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<agent::Process> srun, inner_->Launch(step));
  return std::unique_ptr<agent::Process>(
      std::make_unique<StepProcess>(std::move(srun), this, StepName(spec)));
}

std::optional<std::uint32_t> SlurmStepLauncher::FindStep(const std::string& name) {
  MutexLock lock(api_mutex_);
  Result<std::vector<SlurmStep>> steps = api_->Steps(options_.job_id);
  if (!steps.ok()) return std::nullopt;
  std::optional<std::uint32_t> newest;
  for (const SlurmStep& step : *steps) {
    if (step.name == name && (!newest || step.step_id > *newest)) newest = step.step_id;
  }
  return newest;
}

bool SlurmStepLauncher::SignalStep(const std::string& name, int signal) {
  const std::optional<std::uint32_t> step = FindStep(name);
  if (!step) return false;
  MutexLock lock(api_mutex_);
  return api_->SignalStep(options_.job_id, *step, signal).ok();
}

}  // namespace gavel::slurm
