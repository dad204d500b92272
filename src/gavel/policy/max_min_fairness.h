// Max-min fairness / least attained service (docs/policies.md).
//   agnostic: maximise min_i (s_i / w_i) Σ_j X[i][j]   (every throughput taken as 1; by default
//             cells where the job cannot run stay 0, see docs/differences.md)
//   perf:     maximise min_i Σ_j T[i][j] s_i / (w_i prop_i) X[i][j]
//   packed:   the same over singles and space-sharing pairs, per-job effective throughput.
// Option `stay=ε` (0 ≤ ε < 1, default 0 = off; not with _packed): where the input carries
// the current allocation (PolicyJob::current_allocation), the allocation closest to it in L1
// distance among those within a factor (1 − ε) of the max-min optimum for every job, so that a
// re-solve does not move jobs for nothing (docs/policies.md, "Staying put").
// Option `efficient=1` (not with _packed): among the allocations within (1 − ε) of the optimum
// for every job, the most total normalised throughput first (then `stay`, if set, within
// (1 − ε) of that total).
// Option `share_floor=f` (0 ≤ f ≤ 1; not with _packed): every job is guaranteed f of its time
// spread over the types in proportion to their GPUs (its floor; gangs included) while the
// jobs' GPUs add up to at most the cluster's GPUs / f; past that (overload) the oldest jobs
// whose GPUs add up to at most `head=h` of the cluster's GPUs (0 ≤ h ≤ 1) are guaranteed their
// whole time, the next f each as long as the guarantees fit, and the younger wait with
// nothing allocated (docs/policies.md, "Sharing floor"). The factories here default both to
// 0 (off); the registry's names default to kDefaultShareFloor and kDefaultHead outside
// --compat gavel (MakeMaxMinFairnessByName).
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

// What the registry's max_min_fairness and max_min_fairness_perf run when the user sets no
// share_floor (head): kDefaultShareFloor (kDefaultHead), or 0 (the paper's policy) under
// --compat gavel.
inline constexpr double kDefaultShareFloor = 0.5;
inline constexpr double kDefaultHead = 0.5;
Result<std::unique_ptr<Policy>> MakeMaxMinFairnessByName(Variant variant,
                                                         const PolicyOptions& options);

}  // namespace gavel::policy
