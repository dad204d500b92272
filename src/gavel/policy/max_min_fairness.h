// Max-min fairness / least attained service (docs/policies.md).
//   agnostic: maximise min_i (s_i / w_i) Σ_j X[i][j]   (every throughput taken as 1; by default
//             cells where the job cannot run stay 0, see docs/differences.md)
//   perf:     maximise min_i Σ_j T[i][j] s_i / (w_i prop_i) X[i][j]
//   packed:   the same over singles and space-sharing pairs, per-job effective throughput.
// Option `stay=ε` (0 ≤ ε < 1, default 0 = off; not with _packed): where the input carries
// the current allocation (PolicyJob::current_allocation), the allocation closest to it in L1
// distance among those within a factor (1 − ε) of the max-min optimum for every job, so that a
// re-solve does not move jobs for nothing (docs/policies.md, "Staying put").
// Stateless.
#pragma once

#include <memory>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeMaxMinFairness(Variant variant, const PolicyOptions& options);
// The same with options.params parsed (`stay`); errors name the key.
Result<std::unique_ptr<Policy>> MakeMaxMinFairnessWithParams(Variant variant,
                                                             const PolicyOptions& options);

}  // namespace gavel::policy
