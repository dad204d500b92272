// Finish-time fairness (Themis-style; docs/policies.md): minimise max_i rho_i, rho_i = finish time
// under X / finish time on an isolated 1/n share. Stateful: remembers each job's cumulative
// isolated time and last remaining steps between calls, as the original does.
#pragma once

#include <memory>
#include <span>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeFinishTimeFairness(Variant variant, const PolicyOptions& options);

// A job in the max of finish-time fairness without space sharing, in the form
// ρ_k = b_k + e_k / thr_k(X), thr_k = Σ_j T_kj x_kj: ρ_k <= r needs thr_k >= e_k / (r − b_k)
// (and r > b_k).
struct FinishTimeJob {
  double base = 0.0;                   // b_k = a_k / t_iso_k
  double excess = 0.0;                 // e_k = R_k w_k / t_iso_k > 0
  double scale_factor = 1.0;           // s_k: capacity used per unit of its time
  std::span<const double> throughput;  // T_kj >= 0 per type (0 where it cannot run)
};

// A lower bound on the smallest max_k ρ_k over the allocations x >= 0 with Σ_j x_kj <= 1 per
// job and Σ_k s_k x_kj <= capacity_j per type, from capacity prices p_j >= 0 (weak duality):
// r is infeasible when Σ_k c_k(r) > Σ_j p_j capacity_j, c_k(r) the cheapest Σ_j p_j s_k x_kj
// that gives job k thr_k >= e_k / (r − b_k) within its own constraints (exact: the lower convex
// envelope of idle and its types, +∞ when no mix reaches it). Valid for any such prices; the
// capacity duals of a max-min solve at a ratio below the optimum make it exceed that ratio.
// Returns the largest such infeasible r in [lo, hi] (found by bisection, within about 1e-12
// relative, erring low; the sum must exceed the budget by a 1e-10 relative margin), or `lo`
// when `lo` itself is not shown infeasible. `hi` should be a ratio some allocation reaches.
double PricedRatioLowerBound(std::span<const FinishTimeJob> jobs,
                             std::span<const double> capacity, std::span<const double> prices,
                             double lo, double hi);

}  // namespace gavel::policy
