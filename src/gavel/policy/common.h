// Building blocks shared by the LP policies: the base constraints every allocation obeys,
// the throughput normalisers of the original (proportional and isolated shares), and the
// conversion of an LP solution back into an allocation. Stateless; thread-compatible.
//
// Base constraints (docs/policies.md), over X[i][j] >= 0 for jobs and, when pairs are used,
// X[p][j] >= 0 for pairs:
//   capacity:  Σ_i s_i X[i][j] + Σ_p s_p X[p][j] <= c_j       for every type j
//   time:      Σ_j X[i][j] + Σ_{p ∋ i} Σ_j X[p][j] <= 1       for every job i
#pragma once

#include <span>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/lp/ecos_lp.h"
#include "gavel/lp/model.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

struct BaseProblemOptions {
  bool with_pairs = false;
  // Fix X[i][j] = 0 where the job cannot run (T[i][j] <= 0). The original leaves those free
  // (they consume capacity and yield nothing); off under --compat gavel.
  bool fix_unrunnable_to_zero = true;
  // Reproduce the original's per-job time constraint for packing (a reshape that groups the
  // wrong rows when jobs have different numbers of pairs). Errors where the original crashed.
  bool compat_packed_reshape = false;
  // Mark the pair columns lazy (lp::Column::lazy): with n jobs there are ~n²/2 pairs and only
  // a few of them are used at an optimum, so a column-generation solver (lp/column_generation.h)
  // can leave the rest out of the solve. Other solvers ignore the mark.
  bool lazy_pairs = false;
};

// Whether the LP policies solve with column generation over lazy pair columns (and, with
// space sharing, over classes of interchangeable jobs): the fast solve path's method
// (SolvePath::kFast); --compat gavel reproduces the original's whole-LP solves.
bool UsesColumnGeneration(const PolicyOptions& options);

// The options every LP policy builds with: pairs for the packed variant, lazy on the fast
// solve path (SolvePath::kFast, not under --compat gavel); under --compat gavel the original's
// free unrunnable cells and packed reshape.
BaseProblemOptions BaseProblemOptionsFor(Variant variant, const PolicyOptions& options);

struct BaseProblem {
  lp::Model model;
  std::vector<int> job_columns;    // job i, type j → column job_columns[i * n + j]
  std::vector<int> pair_columns;   // pair p, type j → column pair_columns[p * n + j]
  std::vector<int> capacity_rows;  // one per type
  std::vector<int> time_rows;      // one per job
  // For each job, the pairs it belongs to (indices into input.pairs), in pair order.
  std::vector<std::vector<int>> pairs_of_job;
};

// Builds the variables and base constraints with a zero objective in the given sense.
// `throughput` decides which cells are unrunnable (normally input.throughput).
Result<BaseProblem> BuildBaseProblem(const PolicyInput& input, const Matrix& throughput,
                                     lp::Sense sense, const BaseProblemOptions& options);

// Reads X out of a solution, clipped to [0, 1] as the original does.
PolicyOutput ExtractAllocation(const PolicyInput& input, const BaseProblem& problem,
                               const lp::Solution& solution);

// The original's proportional share: prop_i = Σ_j T[i][j] · c_j / Σ_t c_t (docs/policies.md).
std::vector<double> ProportionalThroughputs(const PolicyInput& input, const Matrix& throughput);

// The original's isolated allocation X_iso[i][j] = c_j / (m · s_i), each row divided by
// max(1, row sum) (docs/policies.md).
Matrix IsolatedAllocation(const PolicyInput& input);
// iso_i = Σ_j T[i][j] · X_iso[i][j].
std::vector<double> IsolatedThroughputs(const PolicyInput& input, const Matrix& throughput);

// One term of a job's effective throughput: steps/s gained per unit of time on a column.
struct ThroughputTerm {
  int column = 0;
  double steps_per_second = 0.0;
};

// Job k's throughput thr_k(X) = Σ_terms steps_per_second · X[column], for every job: its own
// columns and, when `packed`, its share of every space-sharing pair it belongs to. Terms with
// zero throughput are left out.
std::vector<std::vector<ThroughputTerm>> ThroughputTerms(const PolicyInput& input,
                                                         const BaseProblem& problem,
                                                         const Matrix& throughput, bool packed);

// The most throughput job k can get under the base constraints: alone in the cluster, on its
// fastest types first, at most c_j / s_k of type j and 1 in total; on each type its best share
// in one of `pairs` (indices into input.pairs: BaseProblem::pairs_of_job[k] for a packed
// variant, none otherwise) counts when it beats running alone. Used to scale a job's rows to
// O(1).
double MaxThroughputAlone(const PolicyInput& input, const Matrix& throughput,
                          std::span<const int> pairs, std::size_t job);
// The same bound from job k's best steps/s on each type (alone or in any of its pairs).
double MaxThroughputAtSpeeds(const PolicyInput& input, std::span<const double> best_per_type,
                             std::size_t job);

// Sets to 0 every cell where the job (or pair) cannot run: T[i][j] = 0 (both members' shared
// throughputs 0 for a pair). Rule-based policies that split time evenly use it by default, so
// no allocation promises time that could never be used; zeroing keeps every constraint.
void ZeroUnrunnableCells(const PolicyInput& input, PolicyOutput& output);

// Effective throughput of job i under an allocation (singles and its pairs).
double EffectiveThroughput(const PolicyInput& input, const PolicyOutput& output, std::size_t job);

// What a heterogeneity-agnostic policy believes about speed (docs/differences.md):
// UnitThroughput: every type equally fast, T ≡ 1 (max-min fairness, water filling).
// AverageThroughput: every type runs the job at one speed, its cluster-wide average
//   prop_i = Σ_j T[i][j] c_j / Σ_t c_t (finish-time fairness, makespan). Under --compat gavel
//   the original's hard-coded v100 column instead (an error when the cluster has no v100).
// By default both still know where a job cannot run at all (T[i][j] = 0 stays 0); under
// --compat gavel UnitThroughput is 1 everywhere, as in the original.
Matrix UnitThroughput(const PolicyInput& input, bool compat);
Result<Matrix> AverageThroughput(const PolicyInput& input, bool compat);
// What a finish-time policy (finish-time fairness, makespan) plans with: AverageThroughput
// for the heterogeneity-agnostic variant, the input's throughputs otherwise.
Result<Matrix> PlanningThroughput(Variant variant, const PolicyInput& input, bool compat);

// The solvers to use: the injected ones or the defaults (Clp, Cbc). Under --compat gavel the
// LP solver returns central optimal points (lp::Algorithm::kCentral), like the original's
// interior-point solver, instead of vertices. On the fast solve path (not under --compat
// gavel) both LP solvers are wrapped in column generation, which solves models with lazy
// columns (the packed policies' pairs) over a few columns at a time and hands every other
// model to the wrapped solver unchanged.
std::shared_ptr<lp::Solver> LpSolverOf(const PolicyOptions& options);
// The LP solver returning simplex vertices even under --compat gavel: for the decisions
// (feasible or not, the optimal value) that a central solve must not make on its own.
std::shared_ptr<lp::Solver> SimplexSolverOf(const PolicyOptions& options);
std::shared_ptr<lp::Solver> MilpSolverOf(const PolicyOptions& options);
// The fast path's master problem (decomp::SolveJobProblem): the injected LP solver or Clp.
std::shared_ptr<lp::Solver> MasterSolverOf(const PolicyOptions& options);

// The solvers an LP policy holds, each chosen once from its options by the function named.
struct PolicySolvers {
  explicit PolicySolvers(const PolicyOptions& options);
  std::shared_ptr<lp::Solver> lp;       // LpSolverOf: central optimal points under --compat gavel
  std::shared_ptr<lp::Solver> simplex;  // SimplexSolverOf: decides feasibility, optimal values
  std::shared_ptr<lp::Solver> milp;     // MilpSolverOf
  std::shared_ptr<lp::Solver> master;   // MasterSolverOf
};

// The largest row or bound violation (rows are scaled to O(1)) accepted from a central point
// (the lp solver's under --compat gavel) before a policy keeps it instead of the simplex vertex.
inline constexpr double kCentralPointTolerance = 1e-6;

// An error for a solve that worked but ended neither optimal nor in a case the policy handles.
Status UnexpectedOutcome(const char* policy, lp::Outcome outcome);

// The original's base constraints (policy.py's get_base_constraints) appended to `lp` in the
// order cvxpy 1.1 hands them to ECOS, over X flattened column-major from column `first_x`
// (X[i][j] is column first_x + i + j·m): −X <= 0; Σ_i s_i X[i][j] <= c_j per type;
// Σ_j X[i][j] <= 1 per job. For the policies that --compat gavel solves by ECOS's iterations.
void AppendOriginalBaseRows(const PolicyInput& input, int first_x, lp::InequalityLp& lp);

}  // namespace gavel::policy
