// Isolated (docs/policies.md): X[i][j] = c_j / (m s_i), each row scaled to sum at most 1.
// Stateless.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeIsolated(const PolicyOptions& options);

}  // namespace gavel::policy
