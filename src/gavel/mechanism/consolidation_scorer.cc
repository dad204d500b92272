#include "gavel/mechanism/consolidation_scorer.h"

namespace gavel::mechanism {

std::optional<std::vector<WorkerId>> ConsolidationScorer::PickGpus(
    const ComboState& c, int type, const WorkerDemand& /*demand*/, ResourcePool& pool) const {
  return pool.TakeFirstFit(type, c.scale_factor);
}

}  // namespace gavel::mechanism
