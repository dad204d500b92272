// Finish-time fairness (Themis-style; spec §2.4): minimise max_i rho_i, rho_i = finish time
// under X / finish time on an isolated 1/n share. Stateful: remembers each job's cumulative
// isolated time and last remaining steps between calls, as the original does.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeFinishTimeFairness(Variant variant, const PolicyOptions& options);

}  // namespace gavel::policy
