// Helpers the simulator's tests share (header only, tests only): trace jobs, the shipped V100
// throughput of a job type, and a simulation that must succeed.
#pragma once

#include <string>

#include "gavel/core/check.h"
#include "gavel/core/shipped_table.h"
#include "gavel/sim/simulator.h"

namespace gavel::sim::simtest {

inline double V100(const std::string& model, int sf) {
  return *ShippedThroughputTable()->Isolated("v100", JobTypeKey{model, sf});
}

inline workload::TraceJob Job(const std::string& model, int sf, double steps, double arrival) {
  workload::TraceJob job;
  job.job_type = model;
  job.scale_factor = sf;
  job.total_steps = steps;
  job.arrival_time = Seconds(arrival);
  return job;
}

inline SimulationResult MustSimulate(const SimulationOptions& options) {
  auto result = Simulate(options);
  GAVEL_CHECK_MSG(result.ok(), result.status().ToString().c_str());
  return *result;
}

}  // namespace gavel::sim::simtest
