// An interior-point method for linear programs in inequality form that takes the same steps
// as ECOS 2.0 (Domahidi, Chu, Boyd: "ECOS: An SOCP solver for embedded systems", ECC 2013)
// restricted to the nonnegative orthant:
//
//     minimise c'x  subject to  G x + s = h,  s >= 0.
//
// Why it exists: the original Gavel solves its LPs with cvxpy + ECOS, and where an LP has
// many optimal points (the makespan policy's feasibility problems have a whole polytope of
// them) the allocation it used is the point where ECOS's iterations stopped: neither a vertex
// (simplex) nor the analytic centre (a barrier method run to the end). --compat gavel needs
// that point, so this solver repeats ECOS's algorithm step for step: Ruiz equilibration (3
// passes), the least-squares starting point shifted into the cone, the homogeneous
// self-dual embedding with Nesterov-Todd scaling, Mehrotra's predictor-corrector with
// σ = (1 − α_aff)³, the step back from the boundary (0.99), ECOS's stopping rules, its
// safeguards (best iterate, residual blow-up) and its exit codes. Its KKT systems are the
// same regularised ones (δ = 7e-8) refined by the same rule, solved through the normal
// equations (per group of coupled columns, plus a Woodbury term for the few dense rows)
// instead of ECOS's sparse LDL'. The rounding of that LDL' cannot be copied: final points
// agree with ECOS's to about 1e-4 relative and exit codes agree (ecos_lp_test, which loads
// ECOS itself where it is installed).
//
// Not a general-purpose LP solver: no equality rows, no second-order or exponential cones,
// and the tolerances are ECOS's absolute ones (1e-8), which suit data scaled to O(1).
// Use lp::Solver (Clp) for everything else.
#pragma once

#include <vector>

namespace gavel::lp {

// G in compressed sparse rows: row r holds entries [row_start[r], row_start[r+1]).
struct InequalityLp {
  int num_columns = 0;
  std::vector<int> row_start{0};
  std::vector<int> column;
  std::vector<double> value;
  std::vector<double> h;  // one per row
  std::vector<double> c;  // one per column

  int num_rows() const { return static_cast<int>(row_start.size()) - 1; }
  // Appends the row  Σ coefficients[i]·x[columns[i]] + s = rhs.
  void AddRow(const std::vector<int>& columns, const std::vector<double>& coefficients,
              double rhs);
};

// ECOS's exit codes, same numbers (cvxpy maps 0 to "optimal", 10 to "optimal_inaccurate").
enum class EcosExit {
  kOptimal = 0,
  kPrimalInfeasible = 1,
  kDualInfeasible = 2,
  kOptimalInaccurate = 10,
  kPrimalInfeasibleInaccurate = 11,
  kDualInfeasibleInaccurate = 12,
  kMaxIterations = -1,
  kNumerics = -2,
  kFatal = -7,
};
const char* EcosExitName(EcosExit exit);

struct EcosResult {
  EcosExit exit = EcosExit::kFatal;
  int iterations = 0;     // ECOS's info->iter at exit
  std::vector<double> x;  // unscaled and divided by τ (ECOS's backscale), as cvxpy reads it
};

// Solves `problem` (h sized to its rows, c to its columns) with ECOS's default settings, as
// cvxpy calls it. Always returns an exit code:
// pivots too small to factor are raised, as ECOS's dynamic regularisation does, so the
// kFatal that ECOS gives for a failed factorisation does not occur here.
EcosResult SolveEcosLp(const InequalityLp& problem);

}  // namespace gavel::lp
