#include "gavel/slurm/pilots.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>

namespace gavel::slurm {
std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string NamePrefixFor(const std::string& state_dir) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : state_dir) {
    hash ^= c;
    hash *= 16777619u;
  }
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", hash);
  return std::string("gavel-") + hex;
}

std::string PilotName(const std::string& prefix, const std::string& node,
                      const std::string& type) {
  return prefix + "." + node + "." + type;
}

std::vector<Pilot> PlanPilots(const std::vector<SlurmNode>& nodes, const std::string& partition,
                              const std::string& prefix, std::vector<std::string>* skipped) {
  std::vector<Pilot> pilots;
  for (const SlurmNode& node : nodes) {
    if (!node.schedulable) continue;
    if (!partition.empty() &&
        std::find(node.partitions.begin(), node.partitions.end(), partition) ==
            node.partitions.end()) {
      continue;
    }
    Result<std::vector<GpuGres>> gpus = ParseGpuGres(node.gres);
    if (!gpus.ok()) {
      if (skipped != nullptr) skipped->push_back("node " + node.name + ": " + gpus.status().message());
      continue;
    }
    for (const GpuGres& gpu : *gpus) {
      pilots.push_back({node.name, gpu.type, gpu.count, PilotName(prefix, node.name, gpu.type)});
    }
  }
  return pilots;
}

BatchJob PilotJob(const Pilot& pilot, const PilotOptions& options) {
  const std::string dir = options.work_root + "/" + pilot.node + "." + pilot.type;
  std::string script =
      "#!/bin/sh\n"
      "# A gavel pilot (docs/slurm.md): the agent for this allocation's GPUs.\n"
      "set -- " +
      ShellQuote(options.gavel_binary) + " worker --scheduler " + ShellQuote(options.scheduler_address) +
      " --type " + ShellQuote(pilot.type) + " --gpus " + std::to_string(pilot.gpus) +
      " --work-dir " + ShellQuote(dir) + " --kill-grace-seconds " +
      std::to_string(options.kill_grace_seconds) + " --launch slurm-step\n";
  if (!options.token_file.empty()) script += "set -- \"$@\" --token-file " + ShellQuote(options.token_file) + "\n";
  // The devices Slurm bound to this job (absent where GRES carry no device files).
  script +=
      "if [ -n \"${CUDA_VISIBLE_DEVICES:-}\" ]; then\n"
      "  set -- \"$@\" --visible-devices \"$CUDA_VISIBLE_DEVICES\"\n"
      "fi\n"
      "exec \"$@\"\n";
  BatchJob job;
  job.name = pilot.job_name;
  job.script = std::move(script);
  job.partition = options.partition;
  job.node = pilot.node;
  job.tres_per_node = "gres:gpu:" + pilot.type + ":" + std::to_string(pilot.gpus);
  job.work_dir = dir;
  job.output = dir + "/pilot-%j.out";
  job.requeue = true;
  // Each job lease is a step with one GPU and one CPU: a CPU per GPU lets every GPU's step run
  // at once (steps do not share CPUs, and --overlap would share the GPUs too).
  job.cpus_per_gpu = 1;
  return job;
}

PilotKeeper::PilotKeeper(SlurmApi* api, PilotOptions options, Log log)
    : api_(api), options_(std::move(options)), log_(std::move(log)) {}

PilotKeeper::~PilotKeeper() { Stop(); }

Result<int> PilotKeeper::ReconcileOnce() {
  GAVEL_ASSIGN_OR_RETURN(std::vector<SlurmNode> nodes, api_->Nodes());
  GAVEL_ASSIGN_OR_RETURN(std::vector<SlurmJob> jobs, api_->Jobs());
  std::set<std::string> active;
  for (const SlurmJob& job : jobs) {
    if (job.active) active.insert(job.name);
  }
  std::vector<std::string> skipped;
  int submitted = 0;
  // One pilot refused (a partition limit, a node Slurm will not take) must not keep the
  // others out: the first error is returned after every pilot was tried.
  Status first_error = Status::Ok();
  for (const Pilot& pilot : PlanPilots(nodes, options_.partition, options_.name_prefix, &skipped)) {
    if (active.count(pilot.job_name) != 0) continue;
    std::error_code ec;
    const BatchJob job = PilotJob(pilot, options_);
    std::filesystem::create_directories(job.work_dir, ec);
    if (ec) {
      if (first_error.ok()) {
        first_error = Status::IoError("pilot directory '" + job.work_dir + "': " + ec.message());
      }
      continue;
    }
    Result<std::uint32_t> id = api_->Submit(job);
    if (!id.ok()) {
      if (first_error.ok()) first_error = id.status();
      continue;
    }
    if (log_) {
      log_("slurm: submitted pilot " + pilot.job_name + " (job " + std::to_string(*id) + ", " +
           std::to_string(pilot.gpus) + " x " + pilot.type + " on " + pilot.node + ")");
    }
    ++submitted;
  }
  if (log_) {
    for (const std::string& line : skipped) log_("slurm: no pilot for " + line);
  }
  if (!first_error.ok()) return first_error;
  return submitted;
}

void PilotKeeper::Start(Seconds interval) {
  thread_ = std::thread([this, interval] {
    UniqueLock lock(mutex_);
    while (!stop_) {
      lock.Unlock();
      Result<int> pass = ReconcileOnce();
      if (!pass.ok() && log_) log_("slurm: " + pass.status().message());
      lock.Lock();
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::duration<double>(interval.value());
      while (!stop_ && wake_.wait_until(lock.native(), until) != std::cv_status::timeout) {
      }
    }
  });
}

Result<int> PilotKeeper::CancelPilots(Seconds grace) {
  const std::string own = options_.name_prefix + ".";
  auto active_pilots = [&]() -> Result<std::vector<SlurmJob>> {
    GAVEL_ASSIGN_OR_RETURN(std::vector<SlurmJob> jobs, api_->Jobs());
    std::vector<SlurmJob> out;
    for (SlurmJob& job : jobs) {
      if (job.active && job.name.rfind(own, 0) == 0) out.push_back(std::move(job));
    }
    return out;
  };
  GAVEL_ASSIGN_OR_RETURN(const std::vector<SlurmJob> pilots, active_pilots());
  Status first_error = Status::Ok();
  auto keep_first = [&first_error](Status status) {
    if (first_error.ok() && !status.ok()) first_error = std::move(status);
  };
  for (const SlurmJob& pilot : pilots) {
    // A pilot that does not run has no agent to stop: cancel it.
    const bool running = pilot.state.rfind("RUNNING", 0) == 0;
    keep_first(running ? api_->SignalBatch(pilot.id, SIGTERM) : api_->Signal(pilot.id, SIGKILL));
    if (log_) {
      log_("slurm: " + std::string(running ? "stopping" : "cancelling") + " pilot " +
           pilot.name + " (job " + std::to_string(pilot.id) + ")");
    }
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(grace.value());
  std::vector<SlurmJob> left = pilots;
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    GAVEL_ASSIGN_OR_RETURN(left, active_pilots());
  }
  for (const SlurmJob& pilot : left) {
    if (log_) log_("slurm: pilot " + pilot.name + " still active: cancelling it");
    keep_first(api_->Signal(pilot.id, SIGKILL));
  }
  if (!first_error.ok()) return first_error;
  return static_cast<int>(pilots.size());
}

void PilotKeeper::Stop() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gavel::slurm
