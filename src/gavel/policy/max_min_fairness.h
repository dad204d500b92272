// Max-min fairness / least attained service (docs/policies.md).
//   agnostic: maximise min_i (s_i / w_i) Σ_j X[i][j]   (every throughput taken as 1; by default
//             cells where the job cannot run stay 0, see docs/differences.md)
//   perf:     maximise min_i Σ_j T[i][j] s_i / (w_i prop_i) X[i][j]
//   packed:   the same over singles and space-sharing pairs, per-job effective throughput.
// Stateless.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeMaxMinFairness(Variant variant, const PolicyOptions& options);

}  // namespace gavel::policy
