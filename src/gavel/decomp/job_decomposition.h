// Per-job decomposition: the exact optimum of the allocation LPs whose only coupling between
// jobs is one capacity row per GPU type.
//
// The problem (n jobs i, k types j; x[i][j] = fraction of time job i spends on type j):
//
//   maximise   κ·t + Σ_ij g[i][j] x[i][j]
//   s.t.       Σ_i s_i x[i][j] <= c_j                          for every type j   (capacity)
//              Σ_j x[i][j] <= 1,  x >= 0                       for every job i    (time)
//              x[i][j] = 0 where the cell is not allowed
//              Σ_j a[i][j] x[i][j] >= l_i + r_i·t              for every job with a demand
//              0 <= t <= t_upper                               (t only when κ != 0 or a
//                                                               demand has r_i > 0)
//
// Max-min fairness (κ = 1, g = 0, l = 0, r = 1), water filling (levels l, rates r), makespan
// (a = T / R), maximum throughput (κ = 0, g = T) and its SLO form (demands with r = 0) are all
// of this form. Given prices p_j >= 0 for the capacity rows, the jobs separate: each job's
// best response is a mix of at most two of its pure choices (idle or all of its time on one
// type), read off the upper concave envelope of the points (a[i][j], g[i][j] − s_i p_j), and
// the best t follows from a one-dimensional concave maximisation over the jobs' breakpoints
// (a weighted selection, linear time). Dantzig–Wolfe column generation over these best
// responses finds the optimal prices: its master problem has only k + 1 rows (capacities and
// one convexity row), whatever n is. The loop stops when the Lagrangian bound proves the
// master's point optimal within `relative_gap`, so the answer is the formulation's optimum,
// not an approximation of it; the returned point is feasible by construction (a convex
// combination of best responses that the master keeps within capacity).
//
// Jobs with identical rows are priced once, as a class (real job mixes repeat a few dozen
// models); classes that differ only in their demand's level and rate share one envelope per
// pricing (a queue's jobs each have their own remaining work, but a few dozen shapes). Cost
// per iteration: O(shapes·k² + classes·k) plus a master re-solve with k + 1 rows; a few
// dozen iterations for 3–8 types. Memory: the columns' points, about 16 bytes per class and
// column. Types that tie exactly for a job share its time evenly (a central choice among
// equally good types, rather than the first one).
//
// Thread-compatible: a call uses only its arguments and the injected LP solver (which must be
// safe to use from the calling thread).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/core/status.h"
#include "gavel/lp/solver.h"

namespace gavel::decomp {

struct JobProblem {
  std::vector<double> capacity;  // c_j > 0, one per type
  std::vector<double> size;      // s_i > 0, one per job: capacity used per unit of its time
  // allowed[i * k + j] != 0 where x[i][j] may be positive.
  std::vector<std::uint8_t> allowed;
  Matrix gain;    // a[i][j] >= 0: the demand row's coefficients (n × k; may be 0 × 0 when no
                  // job has a demand)
  Matrix profit;  // g[i][j]: objective coefficients (n × k, or 0 × 0 for all zero)
  // Demand rows: has_demand[i] != 0 for the jobs that have one (empty = none).
  std::vector<std::uint8_t> has_demand;
  std::vector<double> level;  // l_i
  std::vector<double> rate;   // r_i >= 0
  double t_weight = 0.0;      // κ >= 0
  double t_upper = std::numeric_limits<double>::infinity();

  std::size_t num_jobs() const { return size.size(); }
  std::size_t num_types() const { return capacity.size(); }
};

struct JobSolveOptions {
  // Stop when (Lagrangian bound − master value) <= relative_gap · max(1, |master value|).
  double relative_gap = 1e-10;
  int max_iterations = 1000;
  // Points x (n × k, within capacity and the time rows) that start the master, e.g. the
  // previous solution of a similar problem; a point that does not meet the demands for any
  // t >= 0 is skipped. Without a usable one the all-idle point starts it when every demand
  // holds at t = 0 for x = 0, and a first phase finds a feasible point otherwise.
  std::vector<Matrix> start_points;
};

enum class JobOutcome { kOptimal, kInfeasible, kUnbounded };

struct JobSolution {
  JobOutcome outcome = JobOutcome::kOptimal;
  Matrix x;            // n × k
  double t = 0.0;
  double objective = 0.0;      // κ·t + Σ g x
  std::vector<double> prices;  // optimal capacity duals p_j >= 0
  // For each job with a demand: −(right derivative of its best-response value in its demand)
  // at the optimum, >= 0. Positive means the job cannot be given more of its demand row
  // without lowering the objective or another job's demand (a Lagrangian certificate).
  std::vector<double> marginal_cost;
  int iterations = 0;
};

// Solves the problem. Errors: malformed input (sizes, negative capacities or rates), a failed
// master solve, or no convergence within max_iterations (callers fall back to the general LP).
Result<JobSolution> SolveJobProblem(const JobProblem& problem, lp::Solver& master_solver,
                                    const JobSolveOptions& options = {});

}  // namespace gavel::decomp
