#include "gavel/policy/proportional.h"

#include <algorithm>
#include <cstddef>

#include "gavel/policy/common.h"

namespace gavel::policy {
namespace {

// X[i][j] = c_j / C (C = Σ_t c_t): time on each type in proportion to its size. The original
// computes it as every row c_j / m divided by the largest row sum C / m, ignoring scale
// factors, so a column sums to m·c_j / C, more than c_j when the jobs need more GPUs than
// exist: the share the max-min policies normalise by, not a plan the cluster can run. By
// default the rows are scaled by min(1, C / Σ_k s_k) so that every type's capacity holds, and
// types where a job cannot run get nothing; --compat gavel keeps the original's numbers.
class Proportional final : public Policy {
 public:
  explicit Proportional(bool compat) : compat_(compat) {}

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
    if (compat_) return output;
    double gpus = 0.0;
    double demand = 0.0;
    for (const double count : input.gpu_counts) gpus += count;
    for (const PolicyJob& job : input.jobs) demand += job.scale_factor;
    const double fit = std::min(1.0, gpus / demand);
    for (double& x : output.allocation.data()) x *= fit;
    ZeroUnrunnableCells(input, output);
    return output;
  }

 private:
  bool compat_;
};

}  // namespace

std::unique_ptr<Policy> MakeProportional(const PolicyOptions& options) {
  return std::make_unique<Proportional>(options.compat_gavel);
}

}  // namespace gavel::policy
