// The fast path of the LP policies without space sharing: their formulations as
// decomp::JobProblem (one capacity row per type couples otherwise independent jobs), solved
// by per-job decomposition (decomp/job_decomposition.h) instead of handing the whole LP to
// Clp. Same formulation, same optimum (checked against the general path in the tests); where
// the optimum is not unique the two may return different optimal points.
//
// Taken when UseFastPath says so: not for packed variants (pairs couple two jobs; they use
// column generation over pairs instead), not under --compat gavel (which reproduces the
// original's interior-point choices), and not when PolicyOptions::solve_path is kGeneral.
// If the decomposition reports an error (no convergence), policies fall back to the general
// path. Stateless; thread-compatible.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "gavel/core/matrix.h"
#include "gavel/core/status.h"
#include "gavel/decomp/job_decomposition.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

bool UseFastPath(Variant variant, const PolicyOptions& options);

// The base constraints as a JobProblem: capacities c_j, sizes s_i, allowed cells where
// `throughput` > 0 (the default's fixed-zero unrunnable cells). No demands, no objective.
decomp::JobProblem BaseJobProblem(const PolicyInput& input, const Matrix& throughput);

// Makes room for demand rows (gain n × k, all jobs without a demand).
void PrepareDemandRows(decomp::JobProblem& problem);

// The allocation of a solution, clipped to [0, 1] like the general path's.
PolicyOutput AllocationOf(const PolicyInput& input, const decomp::JobSolution& solution);

// The note an allocation carries when the fast path failed and the general path answered.
std::string FastPathFailureNote(const Status& failure);

// One try of a policy's fast path: its answer, or (when it failed) the note the general
// path's answer must carry. Neither when the fast path does not apply.
struct FastPathAttempt {
  std::optional<PolicyOutput> output;
  std::string failure_note;
};

// Calls `solve()` (a Result<PolicyOutput>) when UseFastPath(variant, options) and there are
// jobs; an error from it becomes FastPathFailureNote's note.
template <class Solve>
FastPathAttempt TryFastPath(Variant variant, const PolicyOptions& options, std::size_t num_jobs,
                            const Solve& solve) {
  FastPathAttempt attempt;
  if (num_jobs == 0 || !UseFastPath(variant, options)) return attempt;
  Result<PolicyOutput> fast = solve();
  if (fast.ok()) {
    attempt.output = std::move(fast).value();
  } else {
    attempt.failure_note = FastPathFailureNote(fast.status());
  }
  return attempt;
}

}  // namespace gavel::policy
