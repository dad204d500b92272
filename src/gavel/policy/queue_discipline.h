// Shared by the queue-discipline policies (tiresias_2das, yarn_cs): whole GPUs of one type
// given to jobs one at a time, in the order the policy decides. Heterogeneity-agnostic, as the
// schedulers they stand for are: a job keeps the type it ran on last round when it still fits
// there, else takes the fitting type (enough free GPUs, throughput > 0) with the most free
// GPUs, ties to the first in sorted order. Plain data; single-threaded.
#pragma once

#include <cstddef>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

class GpuPool {
 public:
  explicit GpuPool(const PolicyInput& input);
  // Gives job `job` (an index into input.jobs) its GPUs; false when no type fits it.
  bool Take(std::size_t job);
  // The allocation so far (1 where a job took a type), as a heuristic PolicyOutput.
  PolicyOutput Output() const;

 private:
  const PolicyInput& input_;
  std::vector<int> free_;
  Matrix allocation_;
};

// Job indices sorted by arrival (earliest first: largest time_since_start), ties by id.
std::vector<std::size_t> ArrivalOrder(const PolicyInput& input);

}  // namespace gavel::policy
