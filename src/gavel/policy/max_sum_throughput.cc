#include "gavel/policy/max_sum_throughput.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gavel/policy/common.h"
#include "gavel/policy/fast_path.h"

namespace gavel::policy {
namespace {

// Max sum throughput (spec §2.6, docs/policies.md):
//   maximise Σ_i Σ_j T[i][j] / cost_j · X[i][j] (+ Σ_p Σ_j (T_p,first + T_p,second) / cost_j
//   · X[p][j] when packed), cost_j = 1 unless per_cost,
//   s.t. the base constraints and, with SLOs, for every job i with a deadline still ahead
//   (slo_time_left_i > 0): thr_i(X) >= R_i / slo_time_left_i.
// If the SLO rows make it infeasible, it re-solves without them (status fallback).

// The largest row or bound violation accepted from a central point.
constexpr double kCentralPointTolerance = 1e-6;

class MaxSumThroughput final : public Policy {
 public:
  MaxSumThroughput(const MaxSumThroughputOptions& variant, const PolicyOptions& options)
      : variant_(variant),
        options_(options),
        solvers_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    GAVEL_ASSIGN_OR_RETURN(const std::vector<double> costs, CostsOf(input));
    const Variant variant = variant_.packed ? Variant::kPacked : Variant::kPerf;
    FastPathAttempt fast =
        TryFastPath(variant, options_, m, [&] { return SolveByDecomposition(input, costs); });
    if (fast.output.has_value()) return std::move(*fast.output);

    const BaseProblemOptions base_options = BaseProblemOptionsFor(variant, options_);
    GAVEL_ASSIGN_OR_RETURN(
        BaseProblem problem,
        BuildBaseProblem(input, input.throughput, lp::Sense::kMaximize, base_options));
    if (m == 0) return ExtractAllocation(input, problem, lp::Solution{});

    // The objective Σ_i thr_i(X) / cost: a column's steps/s (both members' for a pair) per
    // unit cost of its type.
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        problem.model.SetObjective(problem.job_columns[i * n + j],
                                   input.throughput(i, j) / costs[j]);
      }
    }
    const std::size_t num_pairs = variant_.packed ? input.pairs.size() : 0;
    for (std::size_t p = 0; p < num_pairs; ++p) {
      for (std::size_t j = 0; j < n; ++j) {
        problem.model.SetObjective(problem.pair_columns[p * n + j],
                                   input.pair_throughput_first(p, j) / costs[j] +
                                       input.pair_throughput_second(p, j) / costs[j]);
      }
    }
    const std::vector<std::vector<ThroughputTerm>> terms =
        ThroughputTerms(input, problem, input.throughput, variant_.packed);

    // SLO rows on a copy, each scaled by the job's largest throughput coefficient: dropping
    // them means going back to the model without them (an interior-point solve, used under
    // --compat gavel, must not see rows left free or empty).
    lp::Model with_slos = problem.model;
    bool any_slo = false;
    bool unmeetable = false;  // a job with a deadline ahead can run nowhere
    std::vector<int> cols;
    std::vector<double> coefs;
    if (variant_.slos) {
      for (std::size_t i = 0; i < m; ++i) {
        const PolicyJob& job = input.jobs[i];
        if (!job.slo_time_left.has_value()) continue;
        const double time_left = job.slo_time_left->value();
        // A deadline already passed can no longer be met; the original's constraint is
        // vacuous then too (a negative right-hand side).
        if (time_left <= 0.0 || job.steps_remaining <= 0.0) continue;
        double largest = 0.0;
        for (const ThroughputTerm& t : terms[i]) largest = std::max(largest, t.steps_per_second);
        if (largest <= 0.0) {
          unmeetable = true;
          break;
        }
        cols.clear();
        coefs.clear();
        for (const ThroughputTerm& t : terms[i]) {
          cols.push_back(t.column);
          coefs.push_back(t.steps_per_second / largest);
        }
        with_slos.AddRow(job.steps_remaining / time_left / largest, lp::kInfinity, cols, coefs);
        any_slo = true;
      }
    }

    // Whether the SLOs can be met is decided by simplex: an interior-point solve without
    // crossover (the solver under --compat gavel) does not reliably detect infeasibility.
    const lp::Model* model = any_slo && !unmeetable ? &with_slos : &problem.model;
    GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, solvers_.simplex->Solve(*model));
    std::string note;
    AllocationStatus status = AllocationStatus::kOptimal;
    if (unmeetable || (solution.outcome == lp::Outcome::kInfeasible && model == &with_slos)) {
      if (model != &problem.model) {
        model = &problem.model;
        GAVEL_ASSIGN_OR_RETURN(solution, solvers_.simplex->Solve(*model));
      }
      status = AllocationStatus::kFallback;
      note = "the SLOs cannot all be met; allocated without them";
    }
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("max_sum_throughput", solution.outcome);
    }
    if (options_.compat_gavel) {
      // The central point of the optimal face, as the original's interior-point solver gives,
      // when the interior-point solve settles on one.
      GAVEL_ASSIGN_OR_RETURN(lp::Solution central, solvers_.lp->Solve(*model));
      if (central.outcome == lp::Outcome::kOptimal &&
          model->MaxViolation(central.values) <= kCentralPointTolerance) {
        solution = std::move(central);
      }
    }
    PolicyOutput output = ExtractAllocation(input, problem, solution);
    output.status = status;
    output.note = std::move(note);
    if (!fast.failure_note.empty()) {
      output.note += (output.note.empty() ? "" : "; ") + fast.failure_note;
    }
    output.objective = solution.objective;
    return output;
  }

 private:
  // The same LP by per-job decomposition: profits T / cost, SLO rows as demands (scaled by
  // the job's largest throughput, as above); without them when they cannot all be met.
  Result<PolicyOutput> SolveByDecomposition(const PolicyInput& input,
                                            const std::vector<double>& costs) const {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    decomp::JobProblem problem = BaseJobProblem(input, input.throughput);
    problem.profit = Matrix(m, n);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) problem.profit(i, j) = input.throughput(i, j) / costs[j];
    }
    bool any_slo = false;
    bool unmeetable = false;
    if (variant_.slos) {
      PrepareDemandRows(problem);
      for (std::size_t i = 0; i < m && !unmeetable; ++i) {
        const PolicyJob& job = input.jobs[i];
        if (!job.slo_time_left.has_value()) continue;
        const double time_left = job.slo_time_left->value();
        if (time_left <= 0.0 || job.steps_remaining <= 0.0) continue;
        double largest = 0.0;
        for (std::size_t j = 0; j < n; ++j) largest = std::max(largest, input.throughput(i, j));
        if (largest <= 0.0) {
          unmeetable = true;
          break;
        }
        for (std::size_t j = 0; j < n; ++j) problem.gain(i, j) = input.throughput(i, j) / largest;
        problem.has_demand[i] = 1;
        problem.level[i] = job.steps_remaining / time_left / largest;
        any_slo = true;
      }
    }
    AllocationStatus status = AllocationStatus::kOptimal;
    std::string note;
    decomp::JobSolution solution;
    if (any_slo && !unmeetable) {
      GAVEL_ASSIGN_OR_RETURN(solution, decomp::SolveJobProblem(problem, *solvers_.master));
    } else {
      solution.outcome = decomp::JobOutcome::kInfeasible;
    }
    if (!any_slo || unmeetable || solution.outcome == decomp::JobOutcome::kInfeasible) {
      if (any_slo || unmeetable) {
        status = AllocationStatus::kFallback;
        note = "the SLOs cannot all be met; allocated without them";
      }
      problem.has_demand.clear();
      GAVEL_ASSIGN_OR_RETURN(solution, decomp::SolveJobProblem(problem, *solvers_.master));
    }
    if (solution.outcome != decomp::JobOutcome::kOptimal) {
      return Status::Internal("max_sum_throughput: the decomposition found no optimum");
    }
    PolicyOutput output = AllocationOf(input, solution);
    output.status = status;
    output.note = std::move(note);
    output.objective = solution.objective;
    return output;
  }

  Result<std::vector<double>> CostsOf(const PolicyInput& input) const {
    std::vector<double> costs(input.num_types(), 1.0);
    if (!variant_.per_cost) return costs;
    if (input.instance_costs.size() != input.num_types()) {
      return Status::InvalidArgument(
          "max_sum_throughput_normalized_by_cost: every GPU type needs a price");
    }
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const double cost = input.instance_costs[j];
      if (!std::isfinite(cost) || cost <= 0.0) {
        return Status::InvalidArgument("max_sum_throughput_normalized_by_cost: the price of " +
                                       input.gpu_types[j] + " must be positive");
      }
      costs[j] = cost;
    }
    return costs;
  }

  MaxSumThroughputOptions variant_;
  PolicyOptions options_;
  PolicySolvers solvers_;
};

}  // namespace

std::unique_ptr<Policy> MakeMaxSumThroughput(const MaxSumThroughputOptions& variant,
                                             const PolicyOptions& options) {
  return std::make_unique<MaxSumThroughput>(variant, options);
}

}  // namespace gavel::policy
