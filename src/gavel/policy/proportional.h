// Proportional (docs/policies.md): X[i][j] = c_j / Σ_t c_t, the equal-share allocation the
// max-min policies normalise by. Stateless.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeProportional(const PolicyOptions& options);

}  // namespace gavel::policy
