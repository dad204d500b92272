// Minimise the makespan (docs/policies.md): the smallest T such that every job can finish its
// remaining steps within T. Solved exactly as one LP (maximise 1/T); under --compat gavel the
// original's bisection that stops within 5%. Stateless.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeMinTotalDuration(Variant variant, const PolicyOptions& options);

}  // namespace gavel::policy
