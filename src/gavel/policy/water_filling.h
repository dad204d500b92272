// Hierarchical max-min fairness by water filling (docs/policies.md): repeatedly maximise the
// minimum normalised throughput of the jobs not yet bottlenecked, then freeze the jobs that
// cannot rise any further (exactly, from the LP's multipliers and a sum test; under --compat
// gavel with the original's MILP on Cbc), until none is left. Entity weights split among an
// entity's unfrozen jobs ('fairness' reweighting). Stateless across calls.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeMaxMinFairnessWaterFilling(Variant variant, const PolicyOptions& options);

}  // namespace gavel::policy
