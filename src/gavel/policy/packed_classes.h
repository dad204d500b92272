// Interchangeable jobs for the space-sharing LPs. Jobs with the same scale factor, priority
// weight and single-job throughputs, whose co-located throughputs with every partner are the
// same too, can be swapped without changing a packed max-min LP; averaging an optimum over
// such swaps gives an optimum where they all get the same allocation, so the LP can be solved
// over classes of jobs and class pairs (docs/policies.md, "Interchangeable jobs") and spread
// back over the jobs and their pairs. With 2,048 jobs of 26 models that is 26 classes and
// 351 class pairs instead of 2,048 jobs and 2 million pairs.
//
// Stateless free functions; thread-compatible.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/common.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy {

struct JobClasses {
  std::vector<std::size_t> class_of_job;
  std::vector<std::vector<std::size_t>> members;  // per class, ascending job index
  // The pairs between members of classes a <= b, all alike: `first` is a's member's
  // steps/s while sharing (per type), `second` b's member's (equal when a == b).
  struct ClassPair {
    std::size_t a = 0;
    std::size_t b = 0;
    std::vector<double> first;
    std::vector<double> second;
  };
  std::vector<ClassPair> pairs;
  // A class pair q of class a, with a member's share of each unit of its time: 1/|a|, or
  // 2/|a| when q pairs a with itself.
  struct PairShare {
    std::size_t q = 0;
    double share = 0.0;
  };
  std::vector<std::vector<PairShare>> pairs_of_class;  // per class, ascending q

  std::size_t size() const { return members.size(); }
};

// The classes, or nullopt when they would not pay (more than half as many classes as jobs)
// or the pairs are not alike within them (a pair missing, different co-located throughputs,
// a pair within a class whose members get different throughputs). `by_entity`: members must
// also share their entity (water filling weighs jobs by entity). `by_weight`: members must
// share their priority weight; off, the classes only say that co-located throughputs depend
// on the classes alone (the pair pricing of policy/pair_pricing.h needs no more).
// `extra_key`, when given (jobs × any number of columns), is a row per job that members must
// share too: what else a policy's LP reads of a job (finish-time fairness: the two numbers
// its ratio depends on).
std::optional<JobClasses> FindInterchangeableJobs(const PolicyInput& input,
                                                  const Matrix& throughput,
                                                  bool by_entity = false, bool by_weight = true,
                                                  const Matrix* extra_key = nullptr);

// x rounded to 40 significant bits (relative 1e-12), for an `extra_key` column computed from
// a job's numbers: jobs whose value differs only in round-off (R / (R / iso) for jobs that
// just arrived) compare equal. Rounding can split a class (harmless: more classes), and
// merges only values within 1e-12 of each other, far inside the LPs' 1e-7 tolerance.
double RoundForClassKey(double x);

// The base constraints over classes: job_columns[a·n + j] is x[a][j], each member's time on
// type j alone (fixed at 0 where it cannot run), pair_columns[q·n + j] is y[q][j], the total
// time of class pair q's job pairs on j (fixed at 0 where neither member progresses):
//   capacity j:  Σ_a |a| s_a x[a][j] + Σ_q s_q y[q][j] <= c_j
//   time a:      Σ_j x[a][j] + Σ_{q ∋ a} share(a, q) Σ_j y[q][j] <= 1
// with share(a, q) = 1/|a|, or 2/|a| when q pairs a with itself (a member's part of y).
// pairs_of_job stays empty. A zero objective in the given sense. `lazy_pairs` marks the y
// columns lazy (BaseProblemOptions::lazy_pairs; pass UsesColumnGeneration(options)).
BaseProblem BuildClassBaseProblem(const PolicyInput& input, const JobClasses& classes,
                                  const Matrix& throughput, lp::Sense sense, bool lazy_pairs);

// A member of class a's steps/s per unit of the time of its class pair `pair` (an entry of
// classes.pairs_of_class[a]): its side's co-located throughput on `type` times its share.
double MemberPairThroughput(const JobClasses& classes, std::size_t a,
                            const JobClasses::PairShare& pair, std::size_t type);

// A member of each class's steps/s over BuildClassBaseProblem's columns (its throughput
// terms: T on x[a][j], MemberPairThroughput on y[q][j]; zero terms left out), per class.
std::vector<std::vector<ThroughputTerm>> ClassThroughputTerms(const PolicyInput& input,
                                                              const JobClasses& classes,
                                                              const BaseProblem& problem,
                                                              const Matrix& throughput);

// The allocation over the jobs of a solution over BuildClassBaseProblem's columns: each
// member gets x[a], and y is spread over job pairs (SpreadPairTime); clipped to [0, 1].
PolicyOutput SpreadClassAllocation(const PolicyInput& input, const JobClasses& classes,
                                   const BaseProblem& problem, const lp::Solution& solution);

// Spreads `total` units of time on type `type` of class pair `p` over its job pairs so that
// every member of class a gets total/|a| of it and every member of b total/|b| (2·total/|a|
// when a == b), writing into output.pair_allocation (pairs × types). Few pairs get time:
// a north-west-corner transport between the two classes; a ring within one class.
void SpreadPairTime(const PolicyInput& input, const JobClasses& classes, std::size_t p,
                    std::size_t type, double total, Matrix& pair_allocation);

}  // namespace gavel::policy
