#include "gavel/policy/proportional.h"

#include <cstddef>

namespace gavel::policy {
namespace {

// X[i][j] = c_j / Σ_t c_t for every job, computed as the original does: every row is
// c_j / m, divided by the largest row sum Σ_t c_t / m. Scale factors play no part, and the
// columns sum to m·c_j / Σ_t c_t, which exceeds c_j when there are more jobs than GPUs: this
// is the share the max-min policies normalise by, not a schedulable plan; as a policy the
// round mechanism's priorities decide who actually runs.
class Proportional final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    if (m == 0) return output;
    double row_sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) row_sum += input.gpu_counts[j] / static_cast<double>(m);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        output.allocation(i, j) = input.gpu_counts[j] / static_cast<double>(m) / row_sum;
      }
    }
    return output;
  }
};

}  // namespace

std::unique_ptr<Policy> MakeProportional(const PolicyOptions& /*options*/) {
  return std::make_unique<Proportional>();
}

}  // namespace gavel::policy
