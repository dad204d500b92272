// Gandiva as the original simplifies it (docs/policies.md): equal time shares; when the
// cluster is oversubscribed, jobs are paired at random for space sharing and pairs that run
// slower than alone are undone.
// Stateful (its pairing and its random generator, seeded from PolicyOptions::seed).
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeGandiva(const PolicyOptions& options);

}  // namespace gavel::policy
