// ConsolidationScorer ("consolidation"): picks fresh GPUs by filling the type's servers in
// order from the first with free GPUs (the original's placement), host resources ignored. It
// trades balance for packing: later servers stay whole for the next large job, and a job
// spans servers only when the first free ones are too few.
// Thread-safety: immutable.
#pragma once

#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

class ConsolidationScorer final : public Scorer {
 public:
  std::string_view name() const override { return "consolidation"; }
  bool picks() const override { return true; }
  std::optional<std::vector<WorkerId>> PickGpus(const ComboState& c, int type,
                                                const WorkerDemand& demand,
                                                ResourcePool& pool) const override;
};

}  // namespace gavel::mechanism
