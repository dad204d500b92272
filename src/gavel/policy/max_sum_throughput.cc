#include "gavel/policy/max_sum_throughput.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/policy/common.h"
#include "gavel/policy/fast_path.h"
#include "gavel/policy/packed_classes.h"
#include "gavel/policy/pair_pricing.h"

namespace gavel::policy {
namespace {

// Max sum throughput (docs/policies.md):
//   maximise Σ_i Σ_j T[i][j] / cost_j · X[i][j] (+ Σ_p Σ_j (T_p,first + T_p,second) / cost_j
//   · X[p][j] when packed), cost_j = 1 unless per_cost,
//   s.t. the base constraints and, with SLOs, for every job i with a deadline still ahead
//   (slo_time_left_i > 0): thr_i(X) >= R_i / slo_time_left_i.
// If the SLO rows make it infeasible, it re-solves without them (status fallback).

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

    std::string pricing_note;  // why pair pricing failed, when it did
    if (variant_.packed && UsesColumnGeneration(options_) && m > 0) {
      if (const std::optional<JobClasses> classes = FindPairClasses(input, input.throughput)) {
        // Jobs alike in all the LP reads of them (e.g. SLOs proportional to the jobs'
        // durations): over their classes, exact by symmetry.
        if (const std::optional<JobClasses> alike = FindAlikeJobs(input)) {
          Result<PolicyOutput> output = SolveOverClasses(input, costs, *alike);
          if (output.ok()) return output;
        }
        Result<PolicyOutput> output = SolveByPairPricing(input, costs, *classes);
        if (output.ok()) return output;
        pricing_note = FastPathFailureNote(output.status());
      }
    }

    const BaseProblemOptions base_options = BaseProblemOptionsFor(variant, options_);
    GAVEL_ASSIGN_OR_RETURN(
        BaseProblem problem,
        BuildBaseProblem(input, input.throughput, lp::Sense::kMaximize, base_options));
    if (m == 0) return ExtractAllocation(input, problem, lp::Solution{});

    // The objective Σ_i thr_i(X) / cost: a column's steps/s (both members' for a pair) per
    // unit cost of its type.
    SetJobObjectives(input, costs, problem);
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
    if (variant_.slos) {
      for (std::size_t i = 0; i < m; ++i) {
        const std::optional<double> required = RequiredThroughput(input.jobs[i]);
        if (!required.has_value()) continue;
        double largest = 0.0;
        for (const ThroughputTerm& t : terms[i]) largest = std::max(largest, t.steps_per_second);
        if (largest <= 0.0) {
          unmeetable = true;
          break;
        }
        AddSloRow(with_slos, terms[i], *required, largest);
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
    for (const std::string* failure : {&fast.failure_note, &pricing_note}) {
      if (!failure->empty()) output.note += (output.note.empty() ? "" : "; ") + *failure;
    }
    output.objective = solution.objective;
    return output;
  }

 private:
  // The steps/s job needs to meet its SLO, R / slo_time_left; nullopt when it has none, or
  // none still ahead (a deadline already passed can no longer be met; the original's
  // constraint is vacuous then too, a negative right-hand side).
  static std::optional<double> RequiredThroughput(const PolicyJob& job) {
    if (!job.slo_time_left.has_value()) return std::nullopt;
    const double time_left = job.slo_time_left->value();
    if (time_left <= 0.0 || job.steps_remaining <= 0.0) return std::nullopt;
    return job.steps_remaining / time_left;
  }

  // Adds the SLO row thr(X) >= required over the job's `terms`, scaled by `largest` (its
  // largest coefficient, pairs included); returns the row.
  static int AddSloRow(lp::Model& model, const std::vector<ThroughputTerm>& terms,
                       double required, double largest) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (const ThroughputTerm& t : terms) {
      cols.push_back(t.column);
      coefs.push_back(t.steps_per_second / largest);
    }
    return model.AddRow(required / largest, lp::kInfinity, cols, coefs);
  }

  // The objective's job columns: steps/s per unit cost of the type.
  static void SetJobObjectives(const PolicyInput& input, const std::vector<double>& costs,
                               BaseProblem& problem) {
    const std::size_t n = input.num_types();
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        problem.model.SetObjective(problem.job_columns[i * n + j],
                                   input.throughput(i, j) / costs[j]);
      }
    }
  }

  // Classes of jobs alike in everything the packed LP reads of them (packed_classes.h) and in
  // the steps/s their SLO needs (or both without one), or nullopt when not worth it.
  std::optional<JobClasses> FindAlikeJobs(const PolicyInput& input) const {
    Matrix key(input.num_jobs(), 2);  // (has an SLO row, its steps/s)
    for (std::size_t i = 0; i < input.num_jobs() && variant_.slos; ++i) {
      if (const std::optional<double> required = RequiredThroughput(input.jobs[i])) {
        key(i, 0) = 1.0;
        key(i, 1) = RoundForClassKey(*required);
      }
    }
    return FindInterchangeableJobs(input, input.throughput, /*by_entity=*/false,
                                   /*by_weight=*/false, &key);
  }

  // The packed LP over classes of alike jobs (BuildClassBaseProblem: x[a][j] each member's
  // time on type j alone, y[q][j] the total time of class pair q's job pairs on j): objective
  // |a| T[a][j] / cost_j per x[a][j] and (T_first + T_second) / cost_j per y[q][j], one SLO
  // row per class with one, scaled as SolveByPairPricing's; the LP without them when they
  // cannot all be met. Spread back over the jobs (SpreadClassAllocation). Exact by symmetry
  // (docs/policies.md, "Fast paths"): the LP, its objective and its feasibility are the same
  // under swaps of alike jobs, so averaging an optimum (or a feasible point) over the swaps
  // gives one in which alike jobs get the same, which the class LP represents.
  Result<PolicyOutput> SolveOverClasses(const PolicyInput& input, const std::vector<double>& costs,
                                        const JobClasses& alike) const {
    const std::size_t n = input.num_types();
    BaseProblem problem = BuildClassBaseProblem(input, alike, input.throughput,
                                                lp::Sense::kMaximize, /*lazy_pairs=*/true);
    const std::vector<std::vector<ThroughputTerm>> terms =
        ClassThroughputTerms(input, alike, problem, input.throughput);
    for (std::size_t a = 0; a < alike.size(); ++a) {
      const std::size_t i = alike.members[a].front();
      const auto size = static_cast<double>(alike.members[a].size());
      for (std::size_t j = 0; j < n; ++j) {
        problem.model.SetObjective(problem.job_columns[a * n + j],
                                   size * input.throughput(i, j) / costs[j]);
      }
    }
    for (std::size_t q = 0; q < alike.pairs.size(); ++q) {
      for (std::size_t j = 0; j < n; ++j) {
        problem.model.SetObjective(problem.pair_columns[q * n + j],
                                   (alike.pairs[q].first[j] + alike.pairs[q].second[j]) / costs[j]);
      }
    }
    const Matrix best = BestSpeedsByClasses(input, input.throughput, alike);
    lp::Model with_slos = problem.model;
    bool any_slo = false;
    for (std::size_t a = 0; a < alike.size() && variant_.slos; ++a) {
      const std::size_t i = alike.members[a].front();
      const std::optional<double> required = RequiredThroughput(input.jobs[i]);
      if (!required.has_value()) continue;
      double largest = 0.0;
      for (std::size_t j = 0; j < n; ++j) largest = std::max(largest, best(i, j));
      // (A job that can run nowhere: the whole LP's answer, unmet SLOs, comes from the paths
      // over the jobs.)
      if (largest <= 0.0) return Status::Internal("max_sum_throughput: an SLO that cannot be met");
      AddSloRow(with_slos, terms[a], *required, largest);
      any_slo = true;
    }
    GAVEL_ASSIGN_OR_RETURN(lp::Solution solution,
                           solvers_.lp->Solve(any_slo ? with_slos : problem.model));
    AllocationStatus status = AllocationStatus::kOptimal;
    std::string note;
    if (any_slo && solution.outcome == lp::Outcome::kInfeasible) {
      GAVEL_ASSIGN_OR_RETURN(solution, solvers_.lp->Solve(problem.model));
      status = AllocationStatus::kFallback;
      note = "the SLOs cannot all be met; allocated without them";
    }
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("max_sum_throughput", solution.outcome);
    }
    PolicyOutput output = SpreadClassAllocation(input, alike, problem, solution);
    output.status = status;
    output.note = std::move(note);
    output.objective = solution.objective;
    return output;
  }

  // The packed LP with its pairs priced per pair of job classes (pair_pricing.h) instead of
  // built: the jobs' columns and rows, plus the pair columns column generation finds. The SLO
  // rows are scaled as above (a job's largest coefficient, its pairs included); when they
  // cannot all be met (column generation's phase one proves it over every pair), the LP
  // without them.
  Result<PolicyOutput> SolveByPairPricing(const PolicyInput& input, const std::vector<double>& costs,
                                          const JobClasses& classes) const {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    GAVEL_ASSIGN_OR_RETURN(BaseProblem problem,
                           BuildJobsOnlyProblem(input, input.throughput, options_));
    SetJobObjectives(input, costs, problem);
    const std::vector<std::vector<ThroughputTerm>> terms =
        ThroughputTerms(input, problem, input.throughput, /*packed=*/false);
    const Matrix best = BestSpeedsByClasses(input, input.throughput, classes);
    // (job, row, scale) of each SLO row.
    struct SloRow {
      std::size_t job;
      int row;
      double scale;
    };
    std::vector<SloRow> slo_rows;
    lp::Model with_slos = problem.model;
    bool unmeetable = false;
    for (std::size_t i = 0; i < m && variant_.slos; ++i) {
      const std::optional<double> required = RequiredThroughput(input.jobs[i]);
      if (!required.has_value()) continue;
      double largest = 0.0;
      for (std::size_t j = 0; j < n; ++j) largest = std::max(largest, best(i, j));
      if (largest <= 0.0) {
        unmeetable = true;
        break;
      }
      slo_rows.push_back({i, AddSloRow(with_slos, terms[i], *required, largest), 1.0 / largest});
    }
    // One solve over `model`, the SLO rows' pair entries given when `slos`.
    const auto solve = [&](const lp::Model& model, bool slos) -> Result<PolicyOutput> {
      PairOracle oracle(input, classes, problem.capacity_rows, problem.time_rows,
                        lp::Sense::kMaximize);
      for (std::size_t j = 0; j < n; ++j) oracle.SetTypeObjective(j, 1.0 / costs[j]);
      if (slos) {
        for (const SloRow& r : slo_rows) oracle.SetThroughputRow(r.job, r.row, r.scale);
      }
      GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> session,
                             lp::LoadWithColumnOracle(*solvers_.master, model, oracle));
      GAVEL_ASSIGN_OR_RETURN(const lp::Solution solution, session->Solve());
      PolicyOutput output;
      if (solution.outcome == lp::Outcome::kInfeasible && slos) {
        output.status = AllocationStatus::kFallback;  // tells the caller: infeasible
        return output;
      }
      if (solution.outcome != lp::Outcome::kOptimal) {
        return UnexpectedOutcome("max_sum_throughput", solution.outcome);
      }
      output = ExtractAllocation(input, problem, solution);
      output.pair_allocation = oracle.PairAllocation(solution.values);
      output.objective = solution.objective;
      return output;
    };
    const bool any_slo = !slo_rows.empty();
    if (any_slo && !unmeetable) {
      GAVEL_ASSIGN_OR_RETURN(PolicyOutput output, solve(with_slos, /*slos=*/true));
      if (output.status == AllocationStatus::kOptimal) return output;
    }
    GAVEL_ASSIGN_OR_RETURN(PolicyOutput output, solve(problem.model, /*slos=*/false));
    if (any_slo || unmeetable) {
      output.status = AllocationStatus::kFallback;
      output.note = "the SLOs cannot all be met; allocated without them";
    }
    return output;
  }

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
        const std::optional<double> required = RequiredThroughput(input.jobs[i]);
        if (!required.has_value()) continue;
        double largest = 0.0;
        for (std::size_t j = 0; j < n; ++j) largest = std::max(largest, input.throughput(i, j));
        if (largest <= 0.0) {
          unmeetable = true;
          break;
        }
        for (std::size_t j = 0; j < n; ++j) problem.gain(i, j) = input.throughput(i, j) / largest;
        problem.has_demand[i] = 1;
        problem.level[i] = *required / largest;
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
