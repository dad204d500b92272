// SimEstimation: the throughput estimator in the simulator (docs/estimator.md). With a
// packing policy and a profiling percentage below 1 or fewer reference models than the 26
// job types (the original's rule), the scheduler reads pairs' co-located throughputs from
// here — estimates until the pair has run on a GPU type, the table's values after — while the
// simulated world keeps running pairs at the table's (true) throughputs:
//   OnArrival    profiles and matches each job, in arrival order, before the scheduler adds it;
//   ApplyTruth   rewrites a plan's pair leases to the steps the true throughputs give (a pair
//                that cannot share a GPU, true throughput 0, does no step and fails);
//   OnPairRan    after a pair's micro-task, its true co-located throughputs on that type are
//                "measured" and the scheduler re-reads them.
// Summary() reports the estimation error. Owned by one simulation run; not synchronised.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/estimator/throughput_estimator.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/mechanism/ports.h"
#include "gavel/mechanism/round_plan.h"
#include "gavel/mechanism/round_scheduler.h"
#include "gavel/sim/simulator.h"

namespace gavel::sim {

class SimEstimation final : public mechanism::ColocatedThroughputSource {
 public:
  // Null when estimation is off for these options. Errors: bad P or K, or --ideal.
  static Result<std::shared_ptr<SimEstimation>> Create(const SimulationOptions& options,
                                                       const mechanism::ClusterLayout& layout);

  std::array<double, 2> Colocated(JobId a, JobId b, int table_gpu_type) override;
  // Call with the id the scheduler will give the job (its number of jobs so far).
  Status OnArrival(JobId id, const JobTypeKey& type);
  void ApplyTruth(mechanism::RoundPlan& plan, const mechanism::RoundScheduler& scheduler) const;
  void OnPairRan(const mechanism::Combination& pair, int layout_type,
                 mechanism::RoundScheduler& scheduler);
  ThroughputEstimationSummary Summary() const;

 private:
  SimEstimation(std::shared_ptr<const ThroughputTable> table,
                std::unique_ptr<estimator::ThroughputEstimator> estimator,
                std::vector<int> table_types, Seconds round_length);
  std::array<double, 2> TrueColocated(const mechanism::RoundScheduler& scheduler, JobId a,
                                      JobId b, int table_gpu_type) const;

  std::shared_ptr<const ThroughputTable> table_;
  std::unique_ptr<estimator::ThroughputEstimator> estimator_;
  std::vector<int> table_types_;  // table GPU type index per layout type
  Seconds round_length_;
  ThroughputEstimationSummary summary_;
  double error_sum_ = 0.0;
};

}  // namespace gavel::sim
