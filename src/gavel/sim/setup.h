// Internal to gavel_sim: what the round simulation and the fluid ("ideal") simulation share —
// validating options, building the cluster layout, prices and job stream, converting
// workload jobs into scheduler jobs, and finishing a result (window JCT statistics, SLOs).
// Not part of the library's interface.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/mechanism/round_scheduler.h"
#include "gavel/sim/simulator.h"
#include "gavel/workload/job_stream.h"

namespace gavel::sim::internal {

struct RunSetup {
  mechanism::ClusterLayout layout;
  std::vector<double> instance_costs;  // layout order; empty = none
  std::unique_ptr<workload::JobStream> stream;
  bool is_trace = false;
  std::size_t window_start = 0;
  std::size_t window_end = 0;
};

Result<RunSetup> PrepareRun(const SimulationOptions& options);

// The scheduler's view of a workload job admitted at `admitted_at`. The SLO deadline is
// multiplier × duration + arrival (compat: + admission time, as the original computes it).
mechanism::JobDescription ToDescription(const workload::TraceJob& job, Seconds admitted_at,
                                        const mechanism::Compat& compat);

// Pops from `stream`, in arrival order, every job that has arrived by `now`
// and hands it to `admit` with the scheduler's view of it admitted at `now` (ToDescription).
// Stops at admit's first error and returns it.
Status ForEachArrival(
    workload::JobStream& stream, Seconds now, const mechanism::Compat& compat,
    const std::function<Status(const workload::TraceJob&, const mechanism::JobDescription&)>&
        admit);

// Fills the per-job list and the window statistics from per-job records. `records[i]` is job
// i's; `gpu_seconds[i]` its GPU-seconds per type. `end` is the final simulated time.
void FinishResult(const SimulationOptions& options, const RunSetup& setup,
                  const ThroughputTable& table, const std::vector<mechanism::JobRecord>& records,
                  const std::vector<std::vector<double>>& gpu_seconds, Seconds end,
                  SimulationResult& result);

// The configuration echo, the window's bounds and the makespan (`end`).
void FillRunEcho(const SimulationOptions& options, const RunSetup& setup, Seconds end,
                 SimulationResult& result);
// Job i's result from its record (`gpu_seconds`: per layout type). The simulator fills in
// what the record does not know (failed, the queueing delays).
JobResult JobResultOf(const RunSetup& setup, const ThroughputTable& table,
                      const mechanism::JobRecord& record, std::size_t i,
                      std::vector<double> gpu_seconds);
// The window's queueing-delay statistics (from JobResult::queueing_delay and its split) and
// JCT statistics per job-size class, from result.jobs.
void FinishQueueingMetrics(SimulationResult& result);

}  // namespace gavel::sim::internal
