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
#include <vector>

#include "gavel/core/matrix.h"
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

  std::size_t size() const { return members.size(); }
};

// The classes, or nullopt when they would not pay (more than half as many classes as jobs)
// or the pairs are not alike within them (a pair missing, different co-located throughputs,
// a pair within a class whose members get different throughputs).
std::optional<JobClasses> FindInterchangeableJobs(const PolicyInput& input,
                                                  const Matrix& throughput);

// Spreads `total` units of time on type `type` of class pair `p` over its job pairs so that
// every member of class a gets total/|a| of it and every member of b total/|b| (2·total/|a|
// when a == b), writing into output.pair_allocation (pairs × types). Few pairs get time:
// a north-west-corner transport between the two classes; a ring within one class.
void SpreadPairTime(const PolicyInput& input, const JobClasses& classes, std::size_t p,
                    std::size_t type, double total, Matrix& pair_allocation);

}  // namespace gavel::policy
