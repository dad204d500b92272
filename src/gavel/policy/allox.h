// AlloX (Le et al., EuroSys'20; docs/policies.md): single-GPU jobs only; waiting jobs are
// matched to GPUs by a min-cost assignment on estimated completion time; allocated jobs keep
// their GPU (non-preemptive).
// Stateful (the previous allocation). PolicyOptions::allox_alpha sets alpha.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeAllox(const PolicyOptions& options);

}  // namespace gavel::policy
