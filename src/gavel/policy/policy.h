// Policy: computes an allocation X[job][GPU type] (fractions of wall-clock time) for one
// PolicyInput. Policies never read a clock, a global or an unseeded random generator:
// randomness comes from PolicyOptions::seed and solvers are injected.
//
// Most policies are pure functions of their input. A few carry state across calls, as the
// original does, and say so in their header: FIFO (sticky assignments in its heterogeneity-
// agnostic mode), Gandiva (its random pairing), AlloX (non-preemptive assignments) and
// finish-time fairness (each job's cumulative isolated time). A Policy object is therefore
// single-threaded; make one per scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/core/status.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy {

enum class AllocationStatus {
  kOptimal,    // the optimum of the policy's formulation
  kHeuristic,  // a greedy or rule-based policy (FIFO, Gandiva, isolated, ...): no optimum to reach
  kFallback,   // the formulation had no answer; a documented fallback was used (see note)
};
const char* AllocationStatusName(AllocationStatus status);

struct PolicyOutput {
  Matrix allocation;       // jobs × types, each entry in [0, 1]
  Matrix pair_allocation;  // pairs × types for packing policies; 0 rows otherwise
  AllocationStatus status = AllocationStatus::kOptimal;
  std::optional<double> objective;  // the formulation's optimal value, where it has one
  std::string note;                 // why a fallback was taken, etc.
  // Elastic resizing: the worker count each job (row) runs at from now on, within its
  // [min_workers, max_workers]. Empty = every job at its declared scale factor (the LP
  // policies). Only policies with the `resizes_elastic_jobs` capability fill it.
  std::vector<int> workers;
  // Admission control: rows the policy refuses (1 = rejected); the mechanism removes those
  // jobs for good (JobRecord::rejected). Empty = none.
  std::vector<char> rejected;
};

// Which way an LP policy solves its formulation. Both return an optimum of the same
// formulation (docs/policies.md, "Fast paths"); they may return different optimal points
// where the optimum is not unique.
enum class SolvePath {
  // Structure-exploiting methods where the policy has one (per-job decomposition priced by
  // the capacity duals, column generation for space-sharing pairs); the general path
  // elsewhere. Ignored under --compat gavel, which reproduces the original's solver choices.
  kFast,
  // The whole LP handed to the LP solver (`gavel allocate --solver clp`).
  kGeneral,
};

struct PolicyOptions {
  // Reproduce the original implementation's quirks (docs/differences.md) instead of the
  // corrected behaviour.
  bool compat_gavel = false;
  std::uint64_t seed = 0;    // for policies with internal randomness (fifo, gandiva)
  double allox_alpha = 1.0;  // AlloX's fraction of waiting jobs considered
  // Solvers; null means COIN-OR Clp for LPs and Cbc for MILPs.
  std::shared_ptr<lp::Solver> lp_solver;
  std::shared_ptr<lp::Solver> milp_solver;
  SolvePath solve_path = SolvePath::kFast;
  // The `name:key=value,...` options of the policy name, keys checked against the policy's
  // declared keys (registry.h); each policy parses its own values.
  std::vector<std::pair<std::string, std::string>> params;
};

// One numeric value of those options: a finite number in [lowest, highest] (above lowest,
// not equal to it, when lowest_allowed is false), or an error naming "key=text" and the range.
Result<double> NumberOption(const std::string& key, const std::string& text, double lowest,
                            double highest, bool lowest_allowed = true);

// What the code around a policy must know about it beyond its factory: the problem it needs
// (pairs, remaining steps, prices) and how the round mechanism treats its allocation. Declared
// once per policy, in the registry (registry.cc), by field name; the mechanism acts on it as
// is (mechanism::PolicyTraits).
struct PolicyCapabilities {
  bool packing = false;                  // allocates space-sharing pairs (the input lists them)
  bool shuffles_gpu_type_order = false;  // the original shuffles the type order each round for it
  bool skips_zero_priority = false;      // FIFO-like: never runs a job whose priority is 0
  bool needs_steps_remaining = false;    // every job must give its remaining steps
  bool needs_instance_costs = false;     // every GPU type must have a price
  // The allocation depends on time as well as on the job set (attained service, waiting
  // time): the mechanism recomputes it at every round, not only when something changed.
  bool reallocates_every_round = false;
  // Sets PolicyOutput::workers: elastic jobs run at the counts it chooses.
  bool resizes_elastic_jobs = false;
  // Refuses (Allocate fails on) jobs of more than one GPU (AlloX): `gavel serve` refuses
  // such jobs at submission rather than let one stall every round.
  bool single_gpu_jobs_only = false;
};

// The problem a policy with these capabilities needs built (BuildPolicyInput). Under
// --compat gavel every same-scale-factor pair is kept, usable or not, as the original hands
// them all to the policy.
InputRequirements RequirementsOf(const PolicyCapabilities& capabilities, bool compat_gavel);

class Policy {
 public:
  virtual ~Policy() = default;
  // Computes the allocation. Errors are call failures (a solver crash) or inputs the policy
  // cannot handle (e.g. AlloX with multi-GPU jobs); "no feasible answer" is reported through
  // PolicyOutput::status where the policy has a fallback.
  virtual Result<PolicyOutput> Allocate(const PolicyInput& input) = 0;
};

}  // namespace gavel::policy
