#include "gavel/policy/min_total_duration.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/lp/ecos_lp.h"
#include "gavel/policy/common.h"
#include "gavel/policy/fast_path.h"
#include "gavel/policy/pair_pricing.h"

namespace gavel::policy {
namespace {

// Makespan (docs/policies.md). For every job k with R_k > 0 remaining steps that
// can run somewhere, thr_k(X) >= R_k / M must hold for makespan M.
//   default: one LP, maximise θ s.t. thr_k(X) >= R_k θ and the base constraints; M* = 1/θ*.
//   --compat gavel: the original's bisection on M (feasibility LPs, stop within 5%), each LP
//   solved as the original's ECOS solves it (lp/ecos_lp.h) when not packed.
// Scaling: θ = φ / L with L = max_k R_k / thr_max_k (a lower bound on M), and row k divided
// by thr_max_k, so every coefficient lies in [0, 1] and φ* = L / M* in (0, 1].

// The original's search bracket and stopping ratio (min_total_duration.py).
constexpr double kCompatMinMakespan = 100.0;
constexpr double kCompatMaxMakespan = 1e6;
constexpr double kCompatStopRatio = 1.05;
// The original widens its bracket tenfold until some makespan is feasible, forever; here a
// bracket beyond 10^(6+kCompatMaxWidenings) seconds is an error.
constexpr int kCompatMaxWidenings = 60;

// The original's search (min_total_duration.py): halve [min, max] until 1.05 min >= max,
// keeping the answer for the last feasible makespan; if none was feasible, retry on the next
// decade. `feasible_at(M)` is a Result<std::optional<Point>>: the point when M is feasible.
// Returns the last feasible point and its makespan.
template <class Point, class FeasibleAt>
Result<std::pair<Point, double>> SearchMakespanAsTheOriginal(const FeasibleAt& feasible_at) {
  double max_makespan = kCompatMaxMakespan;
  double min_makespan = kCompatMinMakespan;
  double last_max_makespan = max_makespan;
  std::optional<Point> last_feasible;
  double last_feasible_makespan = 0.0;
  for (int widening = 0; !last_feasible.has_value(); ++widening) {
    if (widening > kCompatMaxWidenings) {
      return Status::Internal("min_total_duration: no makespan below 1e66 s is feasible");
    }
    while (kCompatStopRatio * min_makespan < max_makespan) {
      const double makespan = (min_makespan + max_makespan) / 2.0;
      GAVEL_ASSIGN_OR_RETURN(std::optional<Point> point, feasible_at(makespan));
      if (point.has_value()) {
        last_feasible = std::move(point);
        last_feasible_makespan = makespan;
        max_makespan = makespan;
      } else {
        min_makespan = makespan;
      }
    }
    max_makespan = last_max_makespan * 10.0;
    min_makespan = last_max_makespan;
    last_max_makespan *= 10.0;
  }
  return std::make_pair(std::move(*last_feasible), last_feasible_makespan);
}

// A job that must finish: R_k > 0 and some positive throughput.
struct DemandRow {
  std::size_t job = 0;
  int row = -1;
  double remaining = 0.0;           // R_k
  double max_raw_throughput = 0.0;  // thr_max_k, the row's scale
};

class MinTotalDuration final : public Policy {
 public:
  MinTotalDuration(Variant variant, const PolicyOptions& options)
      : variant_(variant),
        options_(options),
        solvers_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const bool packed = variant_ == Variant::kPacked;
    const bool compat = options_.compat_gavel;
    GAVEL_ASSIGN_OR_RETURN(const Matrix throughput, PlanningThroughput(variant_, input, compat));

    FastPathAttempt fast =
        TryFastPath(variant_, options_, m, [&] { return SolveByDecomposition(input, throughput); });
    if (fast.output.has_value()) return std::move(*fast.output);

    if (compat && !packed && m > 0) {  // builds its own LP, in the original's form
      const std::vector<DemandRow> demands = DemandRowsWithoutPairs(input, throughput);
      if (demands.empty()) return NothingToFinish(input, packed);
      return BisectAsTheOriginal(input, throughput, demands);
    }

    std::string pricing_note;  // why pair pricing failed, when it did
    if (packed && UsesColumnGeneration(options_) && m > 0) {
      if (const std::optional<JobClasses> classes = FindPairClasses(input, throughput)) {
        Result<PolicyOutput> output = SolveByPairPricing(input, throughput, *classes);
        if (output.ok()) return output;
        pricing_note = FastPathFailureNote(output.status());
      }
    }

    GAVEL_ASSIGN_OR_RETURN(BaseProblem problem,
                           BuildBaseProblem(input, throughput, lp::Sense::kMaximize,
                                            BaseProblemOptionsFor(variant_, options_)));
    if (m == 0) return ExtractAllocation(input, problem, lp::Solution{});

    const std::vector<std::vector<ThroughputTerm>> terms =
        ThroughputTerms(input, problem, throughput, packed);
    std::vector<DemandRow> demands =
        DemandRowsOf(input, throughput,
                     packed ? std::span<const std::vector<int>>(problem.pairs_of_job)
                            : std::span<const std::vector<int>>(),
                     [&](std::size_t k) { return !terms[k].empty(); });
    if (demands.empty()) return NothingToFinish(input, packed);
    Result<PolicyOutput> output =
        compat ? BisectWithPairs(input, std::move(problem), terms, demands)
               : SolveExactly(input, std::move(problem), terms, demands);
    if (output.ok() && !fast.failure_note.empty()) output->note = fast.failure_note;
    if (output.ok() && !pricing_note.empty()) output->note = pricing_note;
    return output;
  }

 private:
  // The jobs that must finish, in job order: R_k > 0 and `runs_somewhere(k)` (a job that can
  // run nowhere can never finish; the original's search never ends on it). thr_max_k counts
  // job k's pairs in `pairs_of_job` (empty when not packed).
  template <class RunsSomewhere>
  static std::vector<DemandRow> DemandRowsOf(const PolicyInput& input, const Matrix& throughput,
                                             std::span<const std::vector<int>> pairs_of_job,
                                             const RunsSomewhere& runs_somewhere) {
    std::vector<DemandRow> demands;
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      if (input.jobs[k].steps_remaining <= 0.0 || !runs_somewhere(k)) continue;
      const std::span<const int> pairs =
          pairs_of_job.empty() ? std::span<const int>() : std::span<const int>(pairs_of_job[k]);
      demands.push_back({k, -1, input.jobs[k].steps_remaining,
                         MaxThroughputAlone(input, throughput, pairs, k)});
    }
    return demands;
  }

  // DemandRowsOf for the LP without pairs: a job runs somewhere when it has a positive
  // throughput.
  static std::vector<DemandRow> DemandRowsWithoutPairs(const PolicyInput& input,
                                                       const Matrix& throughput) {
    return DemandRowsOf(input, throughput, /*pairs_of_job=*/{},
                        [&](std::size_t k) { return throughput.RowSum(k) > 0.0; });
  }

  // L = max_k R_k / thr_max_k: the rows' φ coefficients R_k / (thr_max_k L) are then at most 1.
  static double MakespanScale(const std::vector<DemandRow>& demands) {
    double scale = 0.0;
    for (const DemandRow& d : demands) scale = std::max(scale, d.remaining / d.max_raw_throughput);
    return scale;
  }

  static PolicyOutput NothingToFinish(const PolicyInput& input, bool packed) {
    PolicyOutput output;
    output.allocation = Matrix(input.num_jobs(), input.num_types());
    output.pair_allocation = Matrix(packed ? input.pairs.size() : 0, input.num_types());
    output.objective = 0.0;
    output.note = "no job has steps left on a GPU type it can run on";
    return output;
  }

  // SolveExactly's LP (same scaling) by per-job decomposition: gains T / thr_max_k, rates
  // R_k / (thr_max_k L), maximise φ.
  Result<PolicyOutput> SolveByDecomposition(const PolicyInput& input,
                                            const Matrix& throughput) const {
    decomp::JobProblem problem = BaseJobProblem(input, throughput);
    PrepareDemandRows(problem);
    problem.t_weight = 1.0;
    const std::vector<DemandRow> demands = DemandRowsWithoutPairs(input, throughput);
    if (demands.empty()) return NothingToFinish(input, /*packed=*/false);
    const double scale = MakespanScale(demands);  // L
    for (const DemandRow& d : demands) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        problem.gain(d.job, j) = throughput(d.job, j) / d.max_raw_throughput;
      }
      problem.has_demand[d.job] = 1;
      problem.rate[d.job] = d.remaining / (d.max_raw_throughput * scale);
    }
    GAVEL_ASSIGN_OR_RETURN(const decomp::JobSolution solution,
                           decomp::SolveJobProblem(problem, *solvers_.master));
    if (solution.outcome != decomp::JobOutcome::kOptimal || !(solution.t > 0.0)) {
      return Status::Internal("min_total_duration: the decomposition found no optimum");
    }
    PolicyOutput output = AllocationOf(input, solution);
    output.objective = scale / solution.t;
    return output;
  }

  // Adds row k: Σ_terms (T / thr_max_k) X [- (R_k / (thr_max_k L)) φ] >= lower.
  static void AddDemandRows(BaseProblem& problem,
                            const std::vector<std::vector<ThroughputTerm>>& terms,
                            std::vector<DemandRow>& demands, int phi, double scale) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (DemandRow& d : demands) {
      cols.clear();
      coefs.clear();
      for (const ThroughputTerm& t : terms[d.job]) {
        cols.push_back(t.column);
        coefs.push_back(t.steps_per_second / d.max_raw_throughput);
      }
      if (phi >= 0) {
        cols.push_back(phi);
        coefs.push_back(-d.remaining / (d.max_raw_throughput * scale));
      }
      d.row = problem.model.AddRow(0.0, lp::kInfinity, cols, coefs);
    }
  }

  Result<PolicyOutput> SolveExactly(const PolicyInput& input, BaseProblem problem,
                                    const std::vector<std::vector<ThroughputTerm>>& terms,
                                    std::vector<DemandRow> demands) const {
    const double scale = MakespanScale(demands);  // L
    const int phi = problem.model.AddColumn(0.0, lp::kInfinity, 1.0);
    AddDemandRows(problem, terms, demands, phi, scale);
    GAVEL_ASSIGN_OR_RETURN(const lp::Solution solution, solvers_.lp->Solve(problem.model));
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("min_total_duration", solution.outcome);
    }
    const double phi_value = solution.values[static_cast<std::size_t>(phi)];
    if (!(phi_value > 0.0)) {
      return Status::Internal(
          "min_total_duration: the LP found no positive rate at which "
          "every job progresses, which its formulation cannot produce");
    }
    PolicyOutput output = ExtractAllocation(input, problem, solution);
    output.objective = scale / phi_value;
    return output;
  }

  // SolveExactly's LP with space sharing, its pairs priced per pair of job classes
  // (pair_pricing.h) instead of built: the jobs' columns and rows only, plus the pair columns
  // column generation finds.
  Result<PolicyOutput> SolveByPairPricing(const PolicyInput& input, const Matrix& throughput,
                                          const JobClasses& classes) const {
    GAVEL_ASSIGN_OR_RETURN(BaseProblem problem, BuildJobsOnlyProblem(input, throughput, options_));
    const std::vector<std::vector<ThroughputTerm>> terms =
        ThroughputTerms(input, problem, throughput, /*packed=*/false);
    const std::vector<double> most = MaxThroughputsAloneByClasses(input, throughput, classes);
    std::vector<DemandRow> demands;
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      if (input.jobs[k].steps_remaining <= 0.0 || !(most[k] > 0.0)) continue;
      demands.push_back({k, -1, input.jobs[k].steps_remaining, most[k]});
    }
    if (demands.empty()) return NothingToFinish(input, /*packed=*/true);
    const double scale = MakespanScale(demands);  // L
    const int phi = problem.model.AddColumn(0.0, lp::kInfinity, 1.0);
    AddDemandRows(problem, terms, demands, phi, scale);
    PairOracle oracle(input, classes, problem.capacity_rows, problem.time_rows,
                      lp::Sense::kMaximize);
    for (const DemandRow& d : demands) {
      oracle.SetThroughputRow(d.job, d.row, 1.0 / d.max_raw_throughput);
    }
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> session,
                           lp::LoadWithColumnOracle(*solvers_.master, problem.model, oracle));
    GAVEL_ASSIGN_OR_RETURN(const lp::Solution solution, session->Solve());
    if (solution.outcome != lp::Outcome::kOptimal) {
      return UnexpectedOutcome("min_total_duration", solution.outcome);
    }
    const double phi_value = solution.values[static_cast<std::size_t>(phi)];
    if (!(phi_value > 0.0)) {
      return Status::Internal("min_total_duration: pair pricing found no positive rate");
    }
    PolicyOutput output = ExtractAllocation(input, problem, solution);
    output.pair_allocation = oracle.PairAllocation(solution.values);
    output.objective = scale / phi_value;
    return output;
  }

  // The original's search with space sharing. Feasibility is decided by simplex; the
  // allocation returned is the central point
  // (Clp's barrier) of the last feasible makespan's feasible set, an approximation of the
  // point ECOS stops at (no reference run covers the packed LP).
  Result<PolicyOutput> BisectWithPairs(const PolicyInput& input, BaseProblem problem,
                              const std::vector<std::vector<ThroughputTerm>>& terms,
                              std::vector<DemandRow> demands) const {
    AddDemandRows(problem, terms, demands, /*phi=*/-1, /*scale=*/1.0);
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> session,
                           solvers_.simplex->Load(problem.model));
    auto feasible_at = [&](double makespan) -> Result<std::optional<lp::Solution>> {
      for (const DemandRow& d : demands) {
        session->SetRowBounds(d.row, d.remaining / (makespan * d.max_raw_throughput),
                              lp::kInfinity);
      }
      GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, session->Solve());
      if (solution.outcome != lp::Outcome::kOptimal) return std::optional<lp::Solution>();
      return std::optional<lp::Solution>(std::move(solution));
    };
    GAVEL_ASSIGN_OR_RETURN(auto found, SearchMakespanAsTheOriginal<lp::Solution>(feasible_at));
    auto& [last_feasible, last_feasible_makespan] = found;
    for (const DemandRow& d : demands) {
      problem.model.SetRowBounds(
          d.row, d.remaining / (last_feasible_makespan * d.max_raw_throughput), lp::kInfinity);
    }
    GAVEL_ASSIGN_OR_RETURN(lp::Solution central, solvers_.lp->Solve(problem.model));
    if (central.outcome == lp::Outcome::kOptimal &&
        problem.model.MaxViolation(central.values) <= kCentralPointTolerance) {
      last_feasible = std::move(central);
    }
    PolicyOutput output = ExtractAllocation(input, problem, last_feasible);
    output.objective = last_feasible_makespan;
    return output;
  }

  // The original's search for the jobs alone (min_total_duration.py), each feasibility LP
  // built as cvxpy 1.1 hands it to ECOS and solved by ECOS's iterations: "feasible" is
  // ECOS's "optimal" (an inaccurate or iteration-limited answer counts as infeasible, as it
  // did there), and the allocation is the point where ECOS stopped, clipped to [0, 1].
  // The feasible set at the bisected makespan is a polytope; which of its points the
  // original scheduled by is what decides its makespan (docs/differences.md, S1 and "Fidelity").
  // Rows in cvxpy's order (policy.py's base constraints, then the demand rows), over X
  // flattened column-major: −X <= 0; Σ_i s_i X[i][j] <= c_j per type; Σ_j X[i][j] <= 1 per
  // job; −Σ_j T[i][j] X[i][j] <= −R_i / M per job that must finish.
  Result<PolicyOutput> BisectAsTheOriginal(const PolicyInput& input, const Matrix& throughput,
                                           const std::vector<DemandRow>& demands) const {
    const int m = static_cast<int>(input.num_jobs());
    const int n = static_cast<int>(input.num_types());
    const auto var = [m](int i, int j) { return i + j * m; };
    lp::InequalityLp lp;
    lp.num_columns = m * n;
    lp.c.assign(static_cast<std::size_t>(m * n), 0.0);  // Maximize(1): no objective
    AppendOriginalBaseRows(input, /*first_x=*/0, lp);
    std::vector<int> columns;
    std::vector<double> coefficients;
    const int first_demand_row = lp.num_rows();
    for (const DemandRow& d : demands) {
      columns.clear();
      coefficients.clear();
      for (int j = 0; j < n; ++j) {
        columns.push_back(var(static_cast<int>(d.job), j));
        coefficients.push_back(-throughput(d.job, static_cast<std::size_t>(j)));
      }
      lp.AddRow(columns, coefficients, 0.0);
    }

    auto feasible_at = [&](double makespan) -> Result<std::optional<std::vector<double>>> {
      for (std::size_t k = 0; k < demands.size(); ++k) {
        lp.h[static_cast<std::size_t>(first_demand_row) + k] = -(demands[k].remaining / makespan);
      }
      lp::EcosResult solved = lp::SolveEcosLp(lp);
      if (solved.exit != lp::EcosExit::kOptimal) return std::optional<std::vector<double>>();
      return std::optional<std::vector<double>>(std::move(solved.x));
    };
    GAVEL_ASSIGN_OR_RETURN(auto found,
                           SearchMakespanAsTheOriginal<std::vector<double>>(feasible_at));
    const auto& [last_feasible, last_feasible_makespan] = found;
    PolicyOutput output;
    output.allocation = Matrix(input.num_jobs(), input.num_types());
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        output.allocation(static_cast<std::size_t>(i), static_cast<std::size_t>(j)) =
            std::clamp(last_feasible[static_cast<std::size_t>(var(i, j))], 0.0, 1.0);
      }
    }
    output.objective = last_feasible_makespan;
    return output;
  }

  Variant variant_;
  PolicyOptions options_;
  PolicySolvers solvers_;
};

}  // namespace

std::unique_ptr<Policy> MakeMinTotalDuration(Variant variant, const PolicyOptions& options) {
  return std::make_unique<MinTotalDuration>(variant, options);
}

}  // namespace gavel::policy
