// Maximise total throughput, optionally per dollar and subject to SLOs (docs/policies.md):
//   maximise Σ_i Σ_j T[i][j] / cost_j · X[i][j]   s.t. base constraints and, with SLOs,
//   Σ_j T[i][j] X[i][j] >= remaining_i / slo_time_left_i. When the SLOs cannot all be met it
//   re-solves without them (status fallback). Stateless.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

struct MaxSumThroughputOptions {
  bool per_cost = false;  // divide throughput by the GPU type's price
  bool slos = false;      // jobs with an SLO must finish by their deadline
  bool packed = false;    // space sharing
};

std::unique_ptr<Policy> MakeMaxSumThroughput(const MaxSumThroughputOptions& variant,
                                             const PolicyOptions& options);

}  // namespace gavel::policy
