// FakeSlurm: a SlurmApi over plain vectors for the Slurm backend's unit tests (pilots, step
// launcher). Jobs it accepts are active until signalled with SIGKILL, or with any signal that
// ends_on names; steps are whatever the test puts in `steps`, and every signal sent to a step
// is recorded. Thread-safety: none (the tests drive it from one thread).
#pragma once

#include <csignal>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gavel/slurm/slurm_api.h"

namespace gavel::slurm {

class FakeSlurm final : public SlurmApi {
 public:
  std::vector<SlurmNode> nodes;
  std::vector<SlurmJob> jobs;
  std::vector<SlurmStep> steps;
  std::vector<BatchJob> submitted;
  std::string refuse_node;  // submissions to this node are refused
  // Every SignalBatch and SignalStep: (job, step or -1 for the batch script, signal).
  std::vector<std::tuple<std::uint32_t, long, int>> signals;
  bool batch_ends_on_sigterm = true;  // a pilot's worker exits at SIGTERM
  bool unreachable = false;           // every call fails as with slurmctld down

  Result<std::vector<SlurmNode>> Nodes() override {
    if (unreachable) return Down();
    return nodes;
  }
  Result<std::vector<SlurmJob>> Jobs() override {
    if (unreachable) return Down();
    return jobs;
  }
  Result<std::uint32_t> Submit(const BatchJob& job) override {
    if (unreachable) return Down();
    if (job.node == refuse_node) return Status::IoError("refused: " + job.name);
    submitted.push_back(job);
    jobs.push_back({next_id_, job.name, "PENDING", true, ""});
    return next_id_++;
  }
  Status Signal(std::uint32_t id, int signal) override {
    if (unreachable) return Down();
    if (signal == SIGKILL) End(id);
    return Status::Ok();
  }
  Status SignalBatch(std::uint32_t id, int signal) override {
    if (unreachable) return Down();
    signals.emplace_back(id, -1, signal);
    if (signal == SIGKILL || (signal == SIGTERM && batch_ends_on_sigterm)) End(id);
    return Status::Ok();
  }
  Result<std::vector<SlurmStep>> Steps(std::uint32_t job_id) override {
    if (unreachable) return Down();
    std::vector<SlurmStep> out;
    for (const SlurmStep& step : steps) {
      if (step.job_id == job_id) out.push_back(step);
    }
    return out;
  }
  Status SignalStep(std::uint32_t job_id, std::uint32_t step_id, int signal) override {
    if (unreachable) return Down();
    signals.emplace_back(job_id, static_cast<long>(step_id), signal);
    return Status::Ok();
  }

 private:
  static Status Down() { return Status::IoError("slurmctld unreachable (fake)"); }
  void End(std::uint32_t id) {
    for (SlurmJob& job : jobs) {
      if (job.id == id) job.active = false;
    }
  }
  std::uint32_t next_id_ = 100;
};

}  // namespace gavel::slurm
