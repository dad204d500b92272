// Helpers the simulator's tests share (header only, tests only): trace jobs, the shipped V100
// throughput of a job type, the `--realistic` physics, and a simulation that must succeed.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/check.h"
#include "gavel/core/shipped_table.h"
#include "gavel/sim/physics.h"
#include "gavel/sim/simulator.h"
#include "gavel/workload/philly_workload.h"

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

// The `--realistic` physics: the shipped placement penalty and restart overhead, Philly failures.
inline PhysicsOptions RealisticPhysics() {
  PhysicsOptions physics;
  auto penalty = PlacementPenalty::LoadFile(ShippedPlacementPenaltyFile());
  auto restart = RestartOverhead::LoadFile(ShippedRestartOverheadFile());
  GAVEL_CHECK(penalty.ok() && restart.ok());
  physics.placement_penalty = std::move(*penalty);
  physics.restart_overhead = std::move(*restart);
  physics.failures = FailureModel::Philly();
  return physics;
}

inline SimulationResult MustSimulate(const SimulationOptions& options) {
  auto result = Simulate(options);
  GAVEL_CHECK_MSG(result.ok(), result.status().ToString().c_str());
  return *result;
}

// Generated jobs from `seed` on `cluster` with the shipped table: `max_jobs` arrivals at
// `jobs_per_hour`, measured over the window of the first 60.
inline SimulationOptions GeneratedRun(const std::string& policy, std::uint64_t seed,
                                      std::vector<GpuTypeSpec> cluster, double jobs_per_hour,
                                      int max_jobs) {
  SimulationOptions o;
  o.cluster = std::move(cluster);
  o.throughputs = ShippedThroughputTable();
  o.policy = policy;
  o.seed = seed;
  workload::GeneratorOptions g;
  g.seed = seed;
  g.mean_interarrival = Seconds(3600.0 / jobs_per_hour);
  g.max_jobs = max_jobs;
  o.generator = g;
  o.window_start = 0;
  o.window_end = 60;
  return o;
}

// Multi-GPU jobs (`-m`) on 8:8:8 in servers of 4 under the `--realistic` physics: 90 jobs
// at `jobs_per_hour`, arrivals going on past the window of the first 60, as a loaded
// cluster's do.
inline SimulationOptions RealisticMultiGpuRun(const std::string& policy, std::uint64_t seed,
                                              double jobs_per_hour) {
  SimulationOptions o = GeneratedRun(
      policy, seed, {{"v100", 8, 4}, {"p100", 8, 4}, {"k80", 8, 4}}, jobs_per_hour, 90);
  o.generator->generate_multi_gpu_jobs = true;
  o.saturation_limit = Seconds(4e6);  // the CLI's: twice the arrival span plus 30 days
  o.physics = RealisticPhysics();
  return o;
}

// The Philly-like workload (60 jobs at 1/hour: loaded, not saturated; then arrivals stop,
// since under fair sharing the heavy tail otherwise never drains) on 8:8:8 servers of 8.
inline SimulationOptions PhillyRun(const std::string& policy, std::uint64_t seed) {
  SimulationOptions o =
      GeneratedRun(policy, seed, {{"v100", 8, 8}, {"p100", 8, 8}, {"k80", 8, 8}}, 1.0, 60);
  auto table = workload::PhillyJobDistribution::LoadCsv(workload::DefaultPhillyDistributionFile());
  GAVEL_CHECK_MSG(table.ok(), table.status().ToString().c_str());
  auto philly = std::make_shared<workload::PhillyWorkloadOptions>();
  philly->distribution = std::make_shared<const workload::PhillyJobDistribution>(std::move(*table));
  o.generator->philly_workload = std::move(philly);
  o.saturation_limit = Seconds(1e8);  // a guard: every run here ends far sooner
  return o;
}

}  // namespace gavel::sim::simtest
