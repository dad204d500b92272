#include "gavel/policy/fast_path.h"

#include <algorithm>

namespace gavel::policy {

bool UseFastPath(Variant variant, const PolicyOptions& options) {
  return variant != Variant::kPacked && !options.compat_gavel &&
         options.solve_path == SolvePath::kFast;
}

decomp::JobProblem BaseJobProblem(const PolicyInput& input, const Matrix& throughput) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  decomp::JobProblem problem;
  problem.capacity = input.gpu_counts;
  problem.size.resize(m);
  problem.allowed.assign(m * n, 0);
  for (std::size_t i = 0; i < m; ++i) {
    problem.size[i] = input.jobs[i].scale_factor;
    for (std::size_t j = 0; j < n; ++j) problem.allowed[i * n + j] = throughput(i, j) > 0.0;
  }
  return problem;
}

void PrepareDemandRows(decomp::JobProblem& problem) {
  const std::size_t m = problem.num_jobs();
  problem.gain = Matrix(m, problem.num_types(), 0.0);
  problem.has_demand.assign(m, 0);
  problem.level.assign(m, 0.0);
  problem.rate.assign(m, 0.0);
}

PolicyOutput AllocationOf(const PolicyInput& input, const decomp::JobSolution& solution) {
  PolicyOutput output;
  output.allocation = Matrix(input.num_jobs(), input.num_types());
  output.pair_allocation = Matrix(0, input.num_types());
  for (std::size_t e = 0; e < output.allocation.data().size(); ++e) {
    output.allocation.data()[e] = std::clamp(solution.x.data()[e], 0.0, 1.0);
  }
  output.status = AllocationStatus::kOptimal;
  return output;
}

std::string FastPathFailureNote(const Status& failure) {
  return "fast path failed (" + failure.ToString() + "); general LP used";
}

}  // namespace gavel::policy
