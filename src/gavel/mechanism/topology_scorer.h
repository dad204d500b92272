// TopologyScorer ("topology"): picks fresh GPUs so that the job's host CPU and memory fit
// (JobDescription demands, the layout's HostResources) and it spans as little as the cluster
// allows: one server (the fullest that fits), else one rack, else the roomiest servers
// (placement.h). It trades waiting for speed: a job that does not fit waits a round rather
// than run spread or starved of host resources. Chosen by
// SchedulerOptions::topology_aware_placement.
// Thread-safety: immutable.
#pragma once

#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

class TopologyScorer final : public Scorer {
 public:
  std::string_view name() const override { return "topology"; }
  bool picks() const override { return true; }
  // The members' host demands per GPU, summed (a pair shares its GPUs).
  WorkerDemand Demand(const ComboState& c, const ScoreContext& context) const override;
  std::optional<std::vector<WorkerId>> PickGpus(const ComboState& c, int type,
                                                const WorkerDemand& demand,
                                                ResourcePool& pool) const override;
};

}  // namespace gavel::mechanism
