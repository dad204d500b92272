#include "gavel/policy/finish_time_fairness.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/policy/common.h"
#include "gavel/policy/fast_path.h"
#include "gavel/policy/packed_classes.h"
#include "gavel/policy/pair_pricing.h"

namespace gavel::policy {
namespace {

// Finish-time fairness (docs/policies.md). For job k with remaining steps R_k,
// time since arrival a_k, weight w_k (see below), cumulative isolated time C_k and isolated
// throughput iso_k:
//   t_iso_k  = C_k + R_k / iso_k
//   rho_k(X) = (a_k + R_k w_k / thr_k(X)) / t_iso_k
//   minimise max_k rho_k(X)  s.t. the base constraints.
// For a fixed r, rho_k <= r is linear: thr_k(X) >= R_k w_k / (r t_iso_k - a_k) (impossible
// when r t_iso_k <= a_k). So r* is found by bisection over feasibility LPs that differ only
// in row bounds, re-solved warm in one session (simplex); with space sharing on the
// column-generation path, by a ratio search over always-feasible LPs (SolveByRatioSearch). Among the allocations meeting the
// final r, the default prefers the one with the largest Σ_k thr_k / thr_max_k (spare capacity
// goes to the jobs that are not the bottleneck), which does not change r*; --compat gavel
// returns the central point of that set instead, as the original's interior-point solver.
// The answer is exact up to the LP feasibility tolerance (about 1e-7 relative).

// Relative width of the final bracket on r*.
constexpr double kRelativeGap = 1e-9;
// Doublings of the upper end of the bracket tried when the isolated allocation's rho is not
// feasible (only under --compat gavel's packed reshape, or numerically).
constexpr int kMaxBracketDoublings = 60;

// The quantities rho_k depends on, for a job in the max.
struct FairnessRow {
  std::size_t job = 0;
  int row = -1;
  double remaining = 0.0;            // R_k
  double time_since_start = 0.0;     // a_k
  double weight = 1.0;               // w_k
  double isolated_time = 0.0;        // t_iso_k
  double isolated_throughput = 0.0;  // iso_k (unweighted)
  double max_raw_throughput = 0.0;   // thr_max_k (unweighted), the row's scale
  // Jobs the row stands for (a class of alike jobs, SolveOverClasses): its weight in the
  // secondary objective Σ_k thr_k / thr_max_k.
  double multiplicity = 1.0;
};

double Rho(const FairnessRow& f, double raw_throughput) {
  return (f.time_since_start + f.remaining * f.weight / raw_throughput) / f.isolated_time;
}

// The lower bound of row k for rho_k <= r; nullopt when no throughput is enough.
std::optional<double> RowLowerBound(const FairnessRow& f, double r) {
  const double slack = r * f.isolated_time - f.time_since_start;
  if (slack <= 0.0) return std::nullopt;
  return f.remaining * f.weight / (slack * f.max_raw_throughput);
}

// The ratio search's first r: max_k ρ_k(thr_max_k), a lower bound on r* (no allocation
// gives a job more than its largest throughput alone).
double FirstRatio(const std::vector<FairnessRow>& rows) {
  double r = 0.0;
  for (const FairnessRow& f : rows) r = std::max(r, Rho(f, f.max_raw_throughput));
  return r;
}

// max_k ρ_k of an LP solution (values clipped to [0, 1] as the allocation will be, or to
// [0, ∞) when `clip_to_one` is false: a class LP's pair columns are totals over many pairs);
// `pair_throughput`, when given, adds each job's steps/s from pair columns not in `terms`.
double MaxRho(const std::vector<FairnessRow>& rows,
              const std::vector<std::vector<ThroughputTerm>>& terms,
              const std::vector<double>& values, std::span<const double> pair_throughput = {},
              bool clip_to_one = true) {
  const double most = clip_to_one ? 1.0 : lp::kInfinity;
  double worst = 0.0;
  for (const FairnessRow& f : rows) {
    double raw = pair_throughput.empty() ? 0.0 : pair_throughput[f.job];
    for (const ThroughputTerm& t : terms[f.job]) {
      raw += t.steps_per_second * std::clamp(values[static_cast<std::size_t>(t.column)], 0.0, most);
    }
    worst = std::max(worst, raw > 0.0 ? Rho(f, raw) : lp::kInfinity);
  }
  return worst;
}

// Classes of jobs alike in everything the packed LP reads of them (packed_classes.h:
// single-job and co-located throughputs, scale factor, weight) and in their finish-time
// ratio: ρ_k = b_k + e_k / thr_k with b_k = a_k / t_iso_k and e_k = R_k w_k / t_iso_k (or
// left out of the max), or nullopt when there are no such classes worth solving over.
std::optional<JobClasses> FindAlikeJobs(const PolicyInput& input, const Matrix& throughput,
                                        const std::vector<FairnessRow>& rows) {
  Matrix key(input.num_jobs(), 3);  // (in the max, b_k, e_k); (0, 0, 0) when not
  for (const FairnessRow& f : rows) {
    key(f.job, 0) = 1.0;
    key(f.job, 1) = RoundForClassKey(f.time_since_start / f.isolated_time);
    key(f.job, 2) = RoundForClassKey(f.remaining * f.weight / f.isolated_time);
  }
  return FindInterchangeableJobs(input, throughput, /*by_entity=*/false, /*by_weight=*/true, &key);
}

// When the largest τ with thr_k >= τ · D_k(r) for every job is τ < 1, no ratio below this
// is feasible: ρ_k <= r/τ + b_k (1 − 1/τ), b_k = a_k / t_iso_k (docs/policies.md).
double RatioLowerBound(const std::vector<FairnessRow>& rows, double r, double tau) {
  double bound = lp::kInfinity;
  for (const FairnessRow& f : rows) {
    const double b = f.time_since_start / f.isolated_time;
    bound = std::min(bound, r / tau + b * (1.0 - 1.0 / tau));
  }
  return bound;
}

// Adds row k for every job in the max, Σ_terms (T / thr_max_k) X (+ tau_coefficients[k] · τ
// when `tau` names a column) >= 0, its lower bound set later, and records it in f.row.
// Returns the secondary objective Σ_k thr_k / thr_max_k per column (a pair column serves
// two jobs).
std::map<int, double> AddFairnessRows(lp::Model& model,
                                      const std::vector<std::vector<ThroughputTerm>>& terms,
                                      std::vector<FairnessRow>& rows, int tau = -1,
                                      std::span<const double> tau_coefficients = {}) {
  std::map<int, double> secondary;
  std::vector<int> cols;
  std::vector<double> coefs;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    FairnessRow& f = rows[k];
    cols.clear();
    coefs.clear();
    for (const ThroughputTerm& t : terms[f.job]) {
      cols.push_back(t.column);
      coefs.push_back(t.steps_per_second / f.max_raw_throughput);
      secondary[t.column] += f.multiplicity * t.steps_per_second / f.max_raw_throughput;
    }
    if (tau >= 0) {
      cols.push_back(tau);
      coefs.push_back(tau_coefficients[k]);
    }
    f.row = model.AddRow(0.0, lp::kInfinity, cols, coefs);
  }
  return secondary;
}

// One solve of the ratio search at r: τ, the largest fraction of every job's demand at r met
// at once; the max_k ρ_k its allocation reaches; and that allocation.
template <class Point>
struct RatioStep {
  double tau = 0.0;
  double reached = 0.0;
  Point point;
  // A lower bound on r* the solve proves by other means (PricedRatioLowerBound from its
  // capacity prices), 0 when none.
  double priced_bound = 0.0;
};

// The smallest max_k ρ_k, within kRelativeGap, and an allocation reaching it, by the ratio
// search (docs/policies.md): from r = FirstRatio(rows), each `solve_at(r)` (a
// Result<RatioStep<Point>>) gives an allocation reaching some ρ (an upper bound on r*) and
// τ; τ >= 1 means r is feasible (so optimal), τ < 1 that no ratio below RatioLowerBound(r, τ)
// is, nor below the step's priced bound; the next solve goes to the larger. The τ bound
// converges like Newton's method when the b_k are alike; with many different b_k (a saturated
// cluster) it creeps, and the priced bound is what closes the gap in a few solves.
template <class Point, class SolveAt>
Result<std::pair<double, Point>> SearchRatio(const std::vector<FairnessRow>& rows,
                                             const SolveAt& solve_at) {
  double lo = FirstRatio(rows);
  double hi = lp::kInfinity;
  std::optional<Point> best;
  constexpr int kMaxSolves = 100;
  const auto converged = [&] { return best.has_value() && hi - lo <= kRelativeGap * hi; };
  for (int solve = 0; solve < kMaxSolves && !converged(); ++solve) {
    const double r = lo;
    GAVEL_ASSIGN_OR_RETURN(RatioStep<Point> step, solve_at(r));
    if (step.tau >= 1.0 - kRelativeGap) {
      // r is a lower bound and the LP meets every row at r (to within kRelativeGap of its
      // demand): r is optimal, and this step's allocation is an optimum. The max ρ computed
      // from it may exceed r by what the LP's feasibility tolerance lets a row fall short
      // (about 1e-7 on rows scaled to O(1)), so r, not that value, is the ratio (as the
      // bisection reports the r it proved feasible), and the search has converged.
      // (Requiring the two to agree within kRelativeGap failed the search on the benchmark's
      // 2,048 varied jobs, and the bisection over every pair answered, minutes later.)
      return std::pair<double, Point>(std::min(r, step.reached), std::move(step.point));
    }
    if (step.reached < hi) {
      hi = step.reached;
      best = std::move(step.point);
    }
    if (step.tau <= 0.0) return Status::Internal("finish_time_fairness: no throughput for some job");
    // Round-off must not push the bound past what an allocation reaches.
    lo = std::min(std::max({lo, RatioLowerBound(rows, r, step.tau), step.priced_bound}), hi);
  }
  if (!converged()) {
    return Status::Internal("finish_time_fairness: the ratio search did not converge");
  }
  return std::pair<double, Point>(hi, std::move(*best));
}

// A point of the packed LP with pairs (ClassStart): each job's time alone per type (jobs ×
// types) and the pairs with time.
struct PackedStart {
  Matrix allocation;
  std::vector<PairOracle::StartPair> pairs;
};

class FinishTimeFairness final : public Policy {
 public:
  FinishTimeFairness(Variant variant, const PolicyOptions& options)
      : variant_(variant),
        options_(options),
        solvers_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const bool packed = variant_ == Variant::kPacked;
    const bool compat = options_.compat_gavel;
    GAVEL_ASSIGN_OR_RETURN(const Matrix throughput, PlanningThroughput(variant_, input, compat));

    // The fast path (per-job decomposition) needs no whole-LP model: it is built (with the
    // jobs' throughput terms) for the general path, or when the fast path fails.
    const bool fast = m > 0 && UseFastPath(variant_, options_);
    std::optional<BaseProblem> problem;
    std::vector<std::vector<ThroughputTerm>> terms;
    // Pairs are lazy on the column-generation path, where SolveByRatioSearch solves only
    // feasible LPs; the bisection's infeasible LPs would each need a phase one over them (3.5
    // times slower at 128 jobs), so a rebuild for the bisection leaves them out of lazy.
    const auto build_general = [&](bool lazy_pairs) -> Status {
      BaseProblemOptions base = BaseProblemOptionsFor(variant_, options_);
      base.lazy_pairs = base.lazy_pairs && lazy_pairs;
      GAVEL_ASSIGN_OR_RETURN(problem,
                             BuildBaseProblem(input, throughput, lp::Sense::kMaximize, base));
      terms = ThroughputTerms(input, *problem, throughput, packed);
      return Status::Ok();
    };
    // Space sharing on the column-generation path, when the co-located throughputs depend
    // only on classes of jobs: the pairs are priced, never built (pair_pricing.h).
    const std::optional<JobClasses> classes =
        packed && m > 0 && UsesColumnGeneration(options_) ? FindPairClasses(input, throughput)
                                                         : std::nullopt;
    const std::vector<double> most_by_classes =
        classes.has_value() ? MaxThroughputsAloneByClasses(input, throughput, *classes)
                            : std::vector<double>();
    if (!fast && !classes.has_value()) GAVEL_RETURN_IF_ERROR(build_general(/*lazy_pairs=*/true));
    if (m == 0) {
      previous_remaining_.clear();
      previous_isolated_throughput_.clear();
      return ExtractAllocation(input, *problem, lp::Solution{});
    }

    // Isolated throughputs come from the unweighted single-job throughputs in every variant.
    const std::vector<double> isolated = IsolatedThroughputs(input, throughput);
    const std::vector<double> cumulative = AdvanceIsolatedTime(input, isolated);

    // The original divides throughputs by the priority weight only in the packed variant;
    // by default every variant does (docs/differences.md).
    const bool use_weights = packed || !compat;
    std::vector<FairnessRow> rows;
    for (std::size_t k = 0; k < m; ++k) {
      const PolicyJob& job = input.jobs[k];
      // A job with nothing left, or that can run nowhere (no isolated share, so no finish
      // time to be fair about), is left out of the max.
      const bool runs_somewhere = fast                  ? throughput.RowSum(k) > 0.0
                                  : classes.has_value() ? most_by_classes[k] > 0.0
                                                        : !terms[k].empty();
      if (job.steps_remaining <= 0.0 || isolated[k] <= 0.0 || !runs_somewhere) continue;
      FairnessRow f;
      f.job = k;
      f.remaining = job.steps_remaining;
      f.time_since_start = job.time_since_start.value();
      f.weight = use_weights ? job.priority_weight : 1.0;
      f.isolated_time = cumulative[k] + job.steps_remaining / isolated[k];
      f.isolated_throughput = isolated[k];
      // (A packed variant never takes the fast path, so its problem is built, or it has
      // classes.)
      f.max_raw_throughput =
          classes.has_value()
              ? most_by_classes[k]
              : MaxThroughputAlone(input, throughput,
                                   packed ? problem->pairs_of_job[k] : std::span<const int>(), k);
      rows.push_back(f);
    }
    if (rows.empty()) {
      PolicyOutput output;
      output.allocation = Matrix(m, input.num_types());
      output.pair_allocation = Matrix(packed ? input.pairs.size() : 0, input.num_types());
      output.note = "no job has steps left on a GPU type it can run on";
      return output;
    }
    std::string fast_path_note;
    if (classes.has_value()) {
      // Jobs alike in all the LP reads of them (many copies of a few jobs, e.g. every job
      // just arrived): over their classes, exact by symmetry.
      if (const std::optional<JobClasses> alike = FindAlikeJobs(input, throughput, rows)) {
        Result<PolicyOutput> output = SolveOverClasses(input, throughput, *alike, rows);
        if (output.ok()) return output;
      }
      // The jobs' columns and rows only; the oracle prices the pairs.
      GAVEL_ASSIGN_OR_RETURN(BaseProblem jobs_only,
                             BuildJobsOnlyProblem(input, throughput, options_));
      std::vector<FairnessRow> priced_rows = rows;
      const std::optional<PackedStart> class_start =
          ClassStart(input, throughput, *classes, rows);
      Result<PolicyOutput> output = SolveByRatioSearch(
          input, &throughput, jobs_only,
          ThroughputTerms(input, jobs_only, throughput, /*packed=*/false), priced_rows, &*classes,
          /*alike=*/nullptr, class_start.has_value() ? &*class_start : nullptr);
      if (output.ok()) return output;
      fast_path_note = FastPathFailureNote(output.status());
      GAVEL_RETURN_IF_ERROR(build_general(/*lazy_pairs=*/false));
    } else if (fast) {
      Result<PolicyOutput> output = SolveByDecomposition(input, throughput, rows);
      if (output.ok()) return output;
      fast_path_note = FastPathFailureNote(output.status());
      GAVEL_RETURN_IF_ERROR(build_general(/*lazy_pairs=*/false));
    } else if (packed && UsesColumnGeneration(options_) && !input.pairs.empty()) {
      // Space sharing on the column-generation path (pairs lazy).
      Result<PolicyOutput> output = SolveByRatioSearch(input, &throughput, *problem, terms, rows);
      if (output.ok()) return output;
      fast_path_note = FastPathFailureNote(output.status());
      // The search added rows and columns; the bisection gets the pairs in full.
      GAVEL_RETURN_IF_ERROR(build_general(/*lazy_pairs=*/false));
    }
    return SolveByBisection(input, throughput, *problem, terms, std::move(rows), fast_path_note);
  }

 private:
  Result<PolicyOutput> SolveByBisection(const PolicyInput& input, const Matrix& throughput,
                                        BaseProblem& problem,
                                        const std::vector<std::vector<ThroughputTerm>>& terms,
                                        std::vector<FairnessRow> rows,
                                        const std::string& fast_path_note) {
    const bool packed = variant_ == Variant::kPacked;
    const bool compat = options_.compat_gavel;
    // Row k: Σ_terms (T / thr_max_k) X >= R_k w_k / ((r t_iso_k - a_k) thr_max_k), its lower
    // bound set per r. By default the secondary objective is Σ_k thr_k / thr_max_k; under
    // --compat gavel there is none and the centre of the optimal face is returned instead,
    // as the original's interior-point solver does.
    const std::map<int, double> secondary = AddFairnessRows(problem.model, terms, rows);
    if (!compat) {
      for (const auto& [column, coefficient] : secondary) {
        const double objective = problem.model.columns()[static_cast<std::size_t>(column)].objective;
        problem.model.SetObjective(column, objective + coefficient);
      }
    }
    // Feasibility is decided by simplex: an interior-point solve without crossover does not
    // reliably tell an infeasible LP from a feasible one.
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> session,
                           solvers_.simplex->Load(problem.model));

    Bisection bisection{rows, terms, *session};
    GAVEL_ASSIGN_OR_RETURN(
        std::optional<Bisection::Point> best,
        bisection.Solve(/*throughput_bound_is_exact=*/!(compat && packed && !input.pairs.empty())));
    if (!best.has_value()) return Fallback(input, throughput, packed);
    if (compat) GAVEL_RETURN_IF_ERROR(MoveToCentre(rows, problem.model, *best));
    PolicyOutput output = ExtractAllocation(input, problem, best->solution);
    output.objective = best->rho;
    output.note = fast_path_note;
    return output;
  }

  // The per-job decomposition's max-min LP for the ratio search (SolveByDecomposition,
  // JobsOnlyStart): maximise τ subject to each job in the max reaching τ times its demand, its
  // throughput scaled by thr_max_k as in the whole LP's rows. The demands (rate) are the
  // caller's, per r; they start at 0.
  static decomp::JobProblem RatioJobProblem(const PolicyInput& input, const Matrix& throughput,
                                            const std::vector<FairnessRow>& rows) {
    decomp::JobProblem problem = BaseJobProblem(input, throughput);
    PrepareDemandRows(problem);
    problem.t_weight = 1.0;
    for (const FairnessRow& f : rows) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        problem.gain(f.job, j) = throughput(f.job, j) / f.max_raw_throughput;
      }
      problem.has_demand[f.job] = 1;
    }
    return problem;
  }

  // The same problem by per-job decomposition (docs/policies.md). For a ratio r, the largest
  // τ with thr_k(X) >= τ · D_k(r) for every job in the max (D_k(r) the throughput ρ_k <= r
  // needs) is a max-min LP; r is feasible iff τ >= 1. From a solve at r with value τ and
  // allocation X: X itself reaches max_k ρ_k(X) (an upper bound on r*), and since
  // ρ_k <= r/τ + b_k (1 − 1/τ) for b_k = a_k / t_iso_k, no r below min_k of that can be
  // feasible when τ < 1 (a lower bound). Solving again at the lower bound converges like
  // Newton's method (in one solve when every b_k is equal, e.g. all jobs just arrived). When
  // the b_k differ widely (hundreds of jobs at saturation) that bound creeps up, and the
  // solve's capacity prices give a tighter one by weak duality (PricedRatioLowerBound): the
  // next solve goes to the larger of the two. The final LP maximises Σ_k thr_k / thr_max_k
  // among the allocations meeting the ratio found.
  Result<PolicyOutput> SolveByDecomposition(const PolicyInput& input, const Matrix& throughput,
                                            const std::vector<FairnessRow>& rows) const {
    decomp::JobProblem problem = RatioJobProblem(input, throughput, rows);
    auto max_rho = [&](const Matrix& x) {
      double worst = 0.0;
      for (const FairnessRow& f : rows) {
        double raw = 0.0;
        for (std::size_t j = 0; j < input.num_types(); ++j) raw += throughput(f.job, j) * x(f.job, j);
        worst = std::max(worst, raw > 0.0 ? Rho(f, raw) : lp::kInfinity);
      }
      return worst;
    };
    // The jobs in the max as PricedRatioLowerBound reads them (the decomposition's
    // constraints: capacity, each job's time <= 1).
    std::vector<FinishTimeJob> priced_jobs;
    for (const FairnessRow& f : rows) {
      priced_jobs.push_back(FinishTimeJob{
          f.time_since_start / f.isolated_time, f.remaining * f.weight / f.isolated_time,
          problem.size[f.job],
          std::span<const double>(throughput.data()).subspan(f.job * input.num_types(),
                                                             input.num_types())});
    }
    decomp::JobSolveOptions options;
    auto solve_at = [&](double r) -> Result<RatioStep<Matrix>> {
      for (const FairnessRow& f : rows) problem.rate[f.job] = *RowLowerBound(f, r);
      GAVEL_ASSIGN_OR_RETURN(decomp::JobSolution solution,
                             decomp::SolveJobProblem(problem, *solvers_.master, options));
      if (solution.outcome != decomp::JobOutcome::kOptimal) {
        return Status::Internal("finish_time_fairness: the decomposition found no optimum");
      }
      options.start_points.assign(1, solution.x);  // the next solve starts from this one
      const double reached = max_rho(solution.x);
      // Only an infeasible r needs a lower bound; the prices then make it exceed r.
      const double priced = solution.t < 1.0 ? PricedRatioLowerBound(priced_jobs, problem.capacity,
                                                                     solution.prices, r, reached)
                                             : 0.0;
      return RatioStep<Matrix>{solution.t, reached, std::move(solution.x), priced};
    };
    GAVEL_ASSIGN_OR_RETURN(auto found, SearchRatio<Matrix>(rows, solve_at));
    const double hi = found.first;
    const Matrix& best = found.second;

    // Secondary objective among the allocations with max_k ρ_k <= hi.
    problem.t_weight = 0.0;
    problem.profit = Matrix(input.num_jobs(), input.num_types());
    for (const FairnessRow& f : rows) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        problem.profit(f.job, j) = problem.gain(f.job, j);
      }
      problem.level[f.job] = *RowLowerBound(f, hi);
      problem.rate[f.job] = 0.0;
    }
    options.start_points.assign(1, best);
    Result<decomp::JobSolution> spread = decomp::SolveJobProblem(problem, *solvers_.master, options);
    if (!spread.ok()) {
      // The search accepts r when τ is within kRelativeGap of 1, so `best` may fall short of
      // these demands by about that much; the solve then cannot start from it, and its first
      // phase can end with a master that Clp finds infeasible by a hair, an error (4 of 8,485
      // calls at 6 jobs/h on 36:36:36, seed 0, which then fell back to the whole LP). The
      // demands at the ratio `best` reaches (above hi by about as much) are met by it: solve
      // under those instead. (When the first phase instead reports the demands infeasible,
      // `best` is kept below, as before.)
      const double reached = max_rho(best);
      for (const FairnessRow& f : rows) problem.level[f.job] = *RowLowerBound(f, std::max(hi, reached));
      spread = decomp::SolveJobProblem(problem, *solvers_.master, options);
    }
    // (When the solve does not end optimal, the allocation that reached the ratio is kept.)
    decomp::JobSolution chosen;
    if (spread.ok() && spread->outcome == decomp::JobOutcome::kOptimal) {
      chosen = std::move(*spread);
    } else {
      chosen.x = best;
    }
    PolicyOutput output = AllocationOf(input, chosen);
    output.objective = hi;
    return output;
  }

  // The packed LP over classes of alike jobs (FindAlikeJobs; packed_classes.h): x[a][j] each
  // member's time on type j alone, y[q][j] the total time of class pair q's job pairs on j,
  // one fairness row per class in the max, solved by SolveByRatioSearch and spread back over
  // the jobs. Exact by symmetry (docs/policies.md, "Fast paths"): the ratio LP and the
  // secondary LP are the same under swaps of alike jobs, so averaging an optimum over the
  // swaps gives an optimum in which alike jobs get the same, which the class LP represents;
  // the secondary objective weighs each class row by its number of members.
  Result<PolicyOutput> SolveOverClasses(const PolicyInput& input, const Matrix& throughput,
                                        const JobClasses& alike,
                                        const std::vector<FairnessRow>& job_rows) const {
    BaseProblem problem = BuildClassBaseProblem(input, alike, throughput, lp::Sense::kMaximize,
                                                /*lazy_pairs=*/true);
    std::vector<std::optional<FairnessRow>> row_of_job(input.num_jobs());
    for (const FairnessRow& f : job_rows) row_of_job[f.job] = f;
    const std::vector<std::vector<ThroughputTerm>> terms =
        ClassThroughputTerms(input, alike, problem, throughput);
    std::vector<FairnessRow> rows;
    for (std::size_t a = 0; a < alike.size(); ++a) {
      const std::size_t i = alike.members[a].front();
      if (!row_of_job[i].has_value()) continue;  // (its members are all out of the max)
      FairnessRow f = *row_of_job[i];
      f.job = a;
      f.multiplicity = static_cast<double>(alike.members[a].size());
      rows.push_back(f);
    }
    return SolveByRatioSearch(input, /*throughput=*/nullptr, problem, terms, rows,
                              /*classes=*/nullptr, &alike);
  }

  // The ratio search of SolveByDecomposition on the whole LP with lazy pairs (column
  // generation prices them). Every LP it solves is feasible (X = 0, τ = 0), so column
  // generation never needs the phase one that makes the bisection's infeasible LPs slow:
  //   maximise τ  s.t.  Σ_terms (T / thr_max_k) X − τ · L_k(r) >= 0 for every job in the max,
  // the base constraints, L_k(r) the row lower bound of ρ_k <= r. τ >= 1 iff r is feasible;
  // a new τ column carries the coefficients of each new r (the old one is fixed at 0). Then
  // the secondary objective among the allocations with max_k ρ_k <= the ratio found.
  // With `classes` (pair_pricing.h), `problem` has no pair columns: the pairs are priced per
  // pair of job classes instead of built, and the secondary objective gives a pair column
  // each member's T / thr_max. With `alike`, `problem` is SolveOverClasses's LP over classes
  // of alike jobs (a row and `terms` entry per class), and its optimum is spread back.
  // `throughput` (the jobs' single-job steps/s; null with `alike`) gives the first ratio LP
  // its start point (JobsOnlyStart); with `classes`, `class_start` (ClassStart), when given,
  // gives a better one, pairs included, and seeds its pairs.
  Result<PolicyOutput> SolveByRatioSearch(const PolicyInput& input, const Matrix* throughput,
                                          BaseProblem& problem,
                                          const std::vector<std::vector<ThroughputTerm>>& terms,
                                          std::vector<FairnessRow>& rows,
                                          const JobClasses* classes = nullptr,
                                          const JobClasses* alike = nullptr,
                                          const PackedStart* class_start = nullptr) const {
    const auto demands = [&](double r) {
      std::vector<double> minus_demand;
      for (const FairnessRow& f : rows) minus_demand.push_back(-*RowLowerBound(f, r));
      return minus_demand;
    };
    const double start = FirstRatio(rows);  // SearchRatio's first r
    int tau = problem.model.AddColumn(0.0, lp::kInfinity, 1.0);
    const std::map<int, double> secondary =
        AddFairnessRows(problem.model, terms, rows, tau, demands(start));
    std::vector<int> row_index;
    for (const FairnessRow& f : rows) row_index.push_back(f.row);
    std::optional<PairOracle> oracle;
    std::unique_ptr<lp::Session> session;
    if (classes != nullptr) {
      oracle.emplace(input, *classes, problem.capacity_rows, problem.time_rows,
                     lp::Sense::kMaximize);
      for (const FairnessRow& f : rows) {
        oracle->SetThroughputRow(f.job, f.row, 1.0 / f.max_raw_throughput);
      }
      oracle->EnableSeed();
      if (class_start != nullptr) oracle->SetStartPairs(class_start->pairs);
      GAVEL_ASSIGN_OR_RETURN(session,
                             lp::LoadWithColumnOracle(*solvers_.master, problem.model, *oracle));
    } else {
      GAVEL_ASSIGN_OR_RETURN(session, solvers_.lp->Load(problem.model));
    }
    if (class_start != nullptr && oracle.has_value()) {
      session->SetStartPoint(
          ClassStartPoint(input, problem, terms, rows, start, tau, *class_start, *oracle));
    } else if (throughput != nullptr) {
      if (std::optional<std::vector<double>> point =
              JobsOnlyStart(input, *throughput, problem, rows, start, tau)) {
        session->SetStartPoint(*point);
      }
    }

    bool first_solve = true;
    double last_r = start;        // the last solve's r
    double last_tau_value = 0.0;  // and its τ
    auto solve_at = [&](double r) -> Result<RatioStep<lp::Solution>> {
      if (!first_solve) {
        session->SetColumnBounds(tau, 0.0, 0.0);
        session->SetObjective(tau, 0.0);
        tau = session->AddColumn(0.0, lp::kInfinity, 1.0, row_index, demands(r));
      }
      first_solve = false;
      GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, session->Solve());
      if (solution.outcome != lp::Outcome::kOptimal) {
        return Status::Internal("finish_time_fairness: a ratio LP ended " +
                                std::string(lp::OutcomeName(solution.outcome)));
      }
      const double t = solution.values[static_cast<std::size_t>(tau)];
      last_r = r;
      last_tau_value = t;
      const double reached =
          MaxRho(rows, terms, solution.values,
                 oracle.has_value() ? oracle->PairThroughputs(solution.values)
                                    : std::vector<double>(),
                 /*clip_to_one=*/alike == nullptr);
      return RatioStep<lp::Solution>{t, reached, std::move(solution)};
    };
    GAVEL_ASSIGN_OR_RETURN(auto found, SearchRatio<lp::Solution>(rows, solve_at));
    const double hi = found.first;
    const lp::Solution& best = found.second;

    // Secondary objective among the allocations with max_k ρ_k <= hi (best meets it). The
    // last τ stays, fixed at its value, and each row's bound moves by its τ term instead
    // (the same LP: thr_k / thr_max_k >= L_k(hi)): the last solve's basis then stays
    // primal feasible when that solve reached hi, and the primal simplex starts from it
    // rather than from an infeasible point (half the iterations at 2,048 jobs).
    session->SetColumnBounds(tau, last_tau_value, last_tau_value);
    session->SetObjective(tau, 0.0);
    for (const auto& [column, coefficient] : secondary) session->SetObjective(column, coefficient);
    if (oracle.has_value()) {
      for (const FairnessRow& f : rows) oracle->SetJobObjective(f.job, 1.0 / f.max_raw_throughput);
      oracle->UpdateObjectives(*session);
    }
    for (const FairnessRow& f : rows) {
      session->SetRowBounds(f.row, *RowLowerBound(f, hi) - last_tau_value * *RowLowerBound(f, last_r),
                            lp::kInfinity);
    }
    GAVEL_ASSIGN_OR_RETURN(lp::Solution spread, session->Solve());
    const lp::Solution& chosen = spread.outcome == lp::Outcome::kOptimal ? spread : best;
    PolicyOutput output = alike != nullptr ? SpreadClassAllocation(input, *alike, problem, chosen)
                                           : ExtractAllocation(input, problem, chosen);
    if (oracle.has_value()) output.pair_allocation = oracle->PairAllocation(chosen.values);
    output.objective = hi;
    return output;
  }

  // A start for the first ratio LP of SolveByRatioSearch (at ratio r, τ column `tau`): the
  // optimum of that LP over the jobs' own columns, which the per-job decomposition finds in
  // milliseconds (SolveByDecomposition's LP at r: the same rows and bounds without pairs),
  // with every pair column at 0 and τ its optimal value: a feasible point of the packed LP,
  // and usually near its optimum, as packing only adds to it. Without it the simplex starts
  // from the slack basis, X = 0, and most of the search's iterations went into that first
  // LP (bench/README.md). nullopt when the decomposition does not end optimal (the solve
  // then starts from scratch, as before).
  std::optional<std::vector<double>> JobsOnlyStart(const PolicyInput& input,
                                                   const Matrix& throughput,
                                                   const BaseProblem& problem,
                                                   const std::vector<FairnessRow>& rows, double r,
                                                   int tau) const {
    const std::size_t n = input.num_types();
    decomp::JobProblem jobs = RatioJobProblem(input, throughput, rows);
    for (const FairnessRow& f : rows) jobs.rate[f.job] = *RowLowerBound(f, r);
    Result<decomp::JobSolution> solution = decomp::SolveJobProblem(jobs, *solvers_.master);
    if (!solution.ok() || solution->outcome != decomp::JobOutcome::kOptimal) return std::nullopt;
    std::vector<double> point(static_cast<std::size_t>(problem.model.num_columns()), 0.0);
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      for (std::size_t j = 0; j < n; ++j) {
        point[static_cast<std::size_t>(problem.job_columns[k * n + j])] = solution->x(k, j);
      }
    }
    point[static_cast<std::size_t>(tau)] = solution->t;
    return point;
  }

  // A start with pairs for the first ratio LP on the priced path: the packed LP over the pair
  // classes (`classes`: jobs alike in their throughputs, alone and co-located) as if their
  // members were alike in their ratios too, each class standing in for the member with the
  // largest demand at the search's first r (whatever the class LP gives the class then
  // meets every member's row at least as well). Solved by SolveOverClasses (a few dozen
  // classes: milliseconds) and spread over the jobs and their pairs. When the members differ
  // little (ages near 0: the hard case of bench/README.md) it is near the optimum, pairs
  // included, which the jobs-only start (JobsOnlyStart) lacks. nullopt when it fails.
  std::optional<PackedStart> ClassStart(const PolicyInput& input, const Matrix& throughput,
                                         const JobClasses& classes,
                                         const std::vector<FairnessRow>& rows) const {
    const double start = FirstRatio(rows);
    std::vector<std::optional<FairnessRow>> representative(classes.size());
    for (const FairnessRow& f : rows) {
      std::optional<FairnessRow>& chosen = representative[classes.class_of_job[f.job]];
      if (!chosen.has_value() || *RowLowerBound(f, start) > *RowLowerBound(*chosen, start)) {
        chosen = f;
      }
    }
    std::vector<FairnessRow> class_rows;
    for (std::size_t c = 0; c < classes.size(); ++c) {
      if (!representative[c].has_value()) continue;
      FairnessRow f = *representative[c];
      f.job = classes.members[c].front();  // the member SolveOverClasses reads
      class_rows.push_back(f);
    }
    Result<PolicyOutput> output = SolveOverClasses(input, throughput, classes, class_rows);
    if (!output.ok()) return std::nullopt;
    // Only the pairs with time are kept: the pairs × types matrix is as large as the output's
    // and goes before that one is made.
    PackedStart packed{std::move(output->allocation), {}};
    const Matrix& time = output->pair_allocation;
    for (std::size_t p = 0; p < time.rows(); ++p) {
      for (std::size_t j = 0; j < time.cols(); ++j) {
        if (time(p, j) <= 0.0) continue;
        packed.pairs.push_back(
            PairOracle::StartPair{static_cast<std::size_t>(input.pairs[p].first),
                                  static_cast<std::size_t>(input.pairs[p].second), j, time(p, j)});
      }
    }
    return packed;
  }

  // ClassStart's allocation as a point of the first ratio LP (at ratio r, τ column `tau`):
  // the jobs' columns, the seeded pair columns (`oracle`'s SeedTimes), and τ the largest
  // fraction of every demand at r the allocation meets.
  static std::vector<double> ClassStartPoint(const PolicyInput& input, const BaseProblem& problem,
                                             const std::vector<std::vector<ThroughputTerm>>& terms,
                                             const std::vector<FairnessRow>& rows, double r,
                                             int tau, const PackedStart& start,
                                             const PairOracle& oracle) {
    const std::size_t n = input.num_types();
    std::vector<double> point(static_cast<std::size_t>(problem.model.num_columns()) +
                                  oracle.num_added(),
                              0.0);
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      for (std::size_t j = 0; j < n; ++j) {
        const int column = problem.job_columns[k * n + j];
        if (column >= 0) point[static_cast<std::size_t>(column)] = start.allocation(k, j);
      }
    }
    for (const auto& [column, time] : oracle.SeedTimes()) {
      point[static_cast<std::size_t>(column)] = time;
    }
    const std::vector<double> paired = oracle.PairThroughputs(point);
    double met = lp::kInfinity;
    for (const FairnessRow& f : rows) {
      double raw = paired[f.job];
      for (const ThroughputTerm& t : terms[f.job]) {
        raw += t.steps_per_second * point[static_cast<std::size_t>(t.column)];
      }
      met = std::min(met, raw / f.max_raw_throughput / *RowLowerBound(f, r));
    }
    point[static_cast<std::size_t>(tau)] = std::max(0.0, met);
    return point;
  }

  // Bisection on r over feasibility LPs that share one warm session.
  class Bisection {
   public:
    struct Point {
      double rho = 0.0;
      lp::Solution solution;
    };

    Bisection(const std::vector<FairnessRow>& rows,
              const std::vector<std::vector<ThroughputTerm>>& terms, lp::Session& session)
        : rows_(rows), terms_(terms), session_(session) {}

    // The smallest feasible r (within kRelativeGap) and its allocation; nullopt when no r
    // could be shown feasible. `throughput_bound_is_exact`: thr_max_k bounds thr_k from above
    // (false when --compat gavel's packed reshape builds other time constraints).
    Result<std::optional<Point>> Solve(bool throughput_bound_is_exact) {
      // Below max_k a_k / t_iso_k no r is feasible; below max_k rho_k(thr_max_k) neither.
      double lo = 0.0;
      for (const FairnessRow& f : rows_) {
        lo = std::max(lo, throughput_bound_is_exact ? Rho(f, f.max_raw_throughput)
                                                    : f.time_since_start / f.isolated_time);
      }
      // The isolated allocation gives thr_k = iso_k to every job at once: its max rho is
      // feasible.
      double hi = 0.0;
      for (const FairnessRow& f : rows_) hi = std::max(hi, Rho(f, f.isolated_throughput));
      hi = std::max(hi, lo);
      std::optional<Point> best;
      for (int attempt = 0; attempt <= kMaxBracketDoublings; ++attempt) {
        GAVEL_ASSIGN_OR_RETURN(best, TryRho(hi));
        if (best.has_value()) break;
        lo = hi;
        hi = 2.0 * hi + 1.0;
      }
      if (!best.has_value()) return best;
      hi = best->rho;
      if (throughput_bound_is_exact && lo < hi) {
        // Often the bound is met: every job gets its fastest GPUs at once.
        GAVEL_ASSIGN_OR_RETURN(std::optional<Point> at_lo, TryRho(lo));
        if (at_lo.has_value()) return at_lo;
      }
      while (hi - lo > kRelativeGap * hi) {
        const double mid = 0.5 * (lo + hi);
        GAVEL_ASSIGN_OR_RETURN(std::optional<Point> point, TryRho(mid));
        if (point.has_value()) {
          best = std::move(point);
          hi = best->rho;
        } else {
          lo = mid;
        }
      }
      return best;
    }

   private:
    // Feasibility of max_k rho_k <= r. The returned point's rho is the smaller of r and the
    // largest rho its allocation actually reaches.
    Result<std::optional<Point>> TryRho(double r) {
      for (const FairnessRow& f : rows_) {
        const std::optional<double> lower = RowLowerBound(f, r);
        if (!lower.has_value()) return std::optional<Point>();
        session_.SetRowBounds(f.row, *lower, lp::kInfinity);
      }
      GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, session_.Solve());
      if (solution.outcome != lp::Outcome::kOptimal) return std::optional<Point>();
      const double reached = MaxRho(rows_, terms_, solution.values);
      return std::optional<Point>(Point{std::min(r, reached), std::move(solution)});
    }

    const std::vector<FairnessRow>& rows_;
    const std::vector<std::vector<ThroughputTerm>>& terms_;
    lp::Session& session_;
  };

  // Replaces the point's vertex by the central point of {X : max_k rho_k(X) <= point.rho},
  // when the interior-point solve settles on one; otherwise keeps the vertex.
  Status MoveToCentre(const std::vector<FairnessRow>& rows, lp::Model& model,
                      Bisection::Point& point) const {
    for (const FairnessRow& f : rows) {
      const std::optional<double> lower = RowLowerBound(f, point.rho);
      if (!lower.has_value()) return Status::Ok();
      model.SetRowBounds(f.row, *lower, lp::kInfinity);
    }
    GAVEL_ASSIGN_OR_RETURN(lp::Solution central, solvers_.lp->Solve(model));
    if (central.outcome == lp::Outcome::kOptimal &&
        model.MaxViolation(central.values) <= kCentralPointTolerance) {
      point.solution = std::move(central);
    }
    return Status::Ok();
  }

  // Credits each job seen in the previous call with the isolated time its progress since
  // then is worth, forgets the previous call, and remembers this one (as the original).
  // Returns C_k per job.
  std::vector<double> AdvanceIsolatedTime(const PolicyInput& input,
                                          const std::vector<double>& isolated) {
    std::vector<double> cumulative(input.num_jobs(), 0.0);
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      const JobId id = input.jobs[k].id;
      double& total = cumulative_isolated_time_[id];
      const auto previous = previous_remaining_.find(id);
      const auto previous_isolated = previous_isolated_throughput_.find(id);
      // The original divides by a zero isolated throughput here (a job that could run
      // nowhere); such progress is impossible, so nothing is credited.
      if (previous != previous_remaining_.end() &&
          previous_isolated != previous_isolated_throughput_.end() &&
          previous_isolated->second > 0.0) {
        total += (previous->second - input.jobs[k].steps_remaining) / previous_isolated->second;
      }
      cumulative[k] = total;
    }
    previous_remaining_.clear();
    previous_isolated_throughput_.clear();
    for (std::size_t k = 0; k < input.num_jobs(); ++k) {
      previous_remaining_[input.jobs[k].id] = input.jobs[k].steps_remaining;
      previous_isolated_throughput_[input.jobs[k].id] = isolated[k];
    }
    return cumulative;
  }

  // The isolated allocation (the original's fallback when its solver gives no answer).
  PolicyOutput Fallback(const PolicyInput& input, const Matrix& throughput, bool packed) const {
    PolicyOutput output;
    output.allocation = IsolatedAllocation(input);
    if (!options_.compat_gavel) {
      for (std::size_t i = 0; i < input.num_jobs(); ++i) {
        for (std::size_t j = 0; j < input.num_types(); ++j) {
          if (throughput(i, j) <= 0.0) output.allocation(i, j) = 0.0;
        }
      }
    }
    output.pair_allocation = Matrix(packed ? input.pairs.size() : 0, input.num_types());
    output.status = AllocationStatus::kFallback;
    output.note =
        "finish_time_fairness: no finish-time ratio could be shown feasible; using "
        "the isolated allocation";
    return output;
  }

  Variant variant_;
  PolicyOptions options_;
  PolicySolvers solvers_;
  // Keyed by job id and never pruned, as in the original: a job that leaves for a call and
  // comes back keeps its credit (one double per job ever seen).
  std::map<JobId, double> cumulative_isolated_time_;
  std::map<JobId, double> previous_remaining_;
  std::map<JobId, double> previous_isolated_throughput_;
};

}  // namespace

std::unique_ptr<Policy> MakeFinishTimeFairness(Variant variant, const PolicyOptions& options) {
  return std::make_unique<FinishTimeFairness>(variant, options);
}

namespace {

// The cheapest Σ_j p_j s x_j that gives `job` thr >= demand > 0 with Σ_j x_j <= 1, x >= 0:
// the lower convex envelope of (0, 0) (idle) and (T_j, p_j s) at `demand`. The envelope is
// nondecreasing (it starts at idle's 0 and costs are >= 0), so meeting the demand exactly is
// cheapest, on a segment between a point below the demand (idle or a type) and one at or
// above it. +∞ when no type reaches the demand.
double CheapestCost(const FinishTimeJob& job, std::span<const double> prices, double demand) {
  double cheapest = lp::kInfinity;
  const std::size_t n = job.throughput.size();
  for (std::size_t above = 0; above < n; ++above) {
    const double t_above = job.throughput[above];
    if (t_above < demand) continue;
    const double cost_above = std::max(prices[above], 0.0) * job.scale_factor;
    cheapest = std::min(cheapest, cost_above * demand / t_above);  // mixed with idle
    for (std::size_t below = 0; below < n; ++below) {
      const double t_below = job.throughput[below];
      if (t_below <= 0.0 || t_below >= demand) continue;
      const double cost_below = std::max(prices[below], 0.0) * job.scale_factor;
      const double share_above = (demand - t_below) / (t_above - t_below);
      cheapest = std::min(cheapest, cost_below + share_above * (cost_above - cost_below));
    }
  }
  return cheapest;
}

}  // namespace

double PricedRatioLowerBound(std::span<const FinishTimeJob> jobs,
                             std::span<const double> capacity, std::span<const double> prices,
                             double lo, double hi) {
  double budget = 0.0;
  for (std::size_t j = 0; j < capacity.size(); ++j) budget += std::max(prices[j], 0.0) * capacity[j];
  // Margin for the round-off of the sums: a bound a hair above the optimum would make the
  // search's next solve look feasible by less than its tolerance.
  const double most = budget * (1.0 + 1e-10);
  // Whether the prices prove no allocation reaches ρ_k <= r for every job. Costs are >= 0, so
  // the sum can stop once it is over the budget.
  const auto shown_infeasible = [&](double r) {
    double total = 0.0;
    for (const FinishTimeJob& job : jobs) {
      if (r <= job.base) return true;
      total += CheapestCost(job, prices, job.excess / (r - job.base));
      if (total > most) return true;
    }
    return false;
  };
  if (!shown_infeasible(lo)) return lo;
  // (Should `hi` not be finite, e.g. an allocation leaving a job without throughput, double
  // from lo until a ratio is not shown infeasible.)
  double top = hi;
  if (!std::isfinite(top)) {
    top = std::max(2.0 * lo, lo + 1.0);
    for (int doubling = 0; doubling < kMaxBracketDoublings && shown_infeasible(top); ++doubling) {
      top = 2.0 * top + 1.0;
    }
  }
  if (shown_infeasible(top)) return top;
  double bottom = lo;
  while (top - bottom > 1e-12 * top) {
    const double mid = 0.5 * (bottom + top);
    (shown_infeasible(mid) ? bottom : top) = mid;
  }
  return bottom;
}

}  // namespace gavel::policy
