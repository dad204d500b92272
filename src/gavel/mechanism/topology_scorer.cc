#include "gavel/mechanism/topology_scorer.h"

namespace gavel::mechanism {

WorkerDemand TopologyScorer::Demand(const ComboState& c, const ScoreContext& context) const {
  WorkerDemand d;
  for (int i = 0; i < c.id.size(); ++i) {
    const JobRecord& r = context.table.records()[c.member_index[static_cast<std::size_t>(i)]];
    d.cpus += r.cpus_per_gpu;
    d.mem_gb += r.mem_gb_per_gpu;
  }
  return d;
}

std::optional<std::vector<WorkerId>> TopologyScorer::PickGpus(const ComboState& c, int type,
                                                              const WorkerDemand& demand,
                                                              ResourcePool& pool) const {
  return pool.Take(type, c.scale_factor, demand);
}

}  // namespace gavel::mechanism
