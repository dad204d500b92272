#include "gavel/policy/queue_discipline.h"

#include <algorithm>

namespace gavel::policy {

GpuPool::GpuPool(const PolicyInput& input)
    : input_(input), allocation_(input.num_jobs(), input.num_types()) {
  for (double count : input.gpu_counts) free_.push_back(static_cast<int>(count));
}

bool GpuPool::Take(std::size_t job) {
  const int need = input_.jobs[job].scale_factor;
  const auto fits = [&](int type) {
    return type >= 0 && static_cast<std::size_t>(type) < free_.size() &&
           free_[static_cast<std::size_t>(type)] >= need &&
           input_.throughput(job, static_cast<std::size_t>(type)) > 0.0;
  };
  const bool stays = fits(input_.jobs[job].running_type);
  int chosen = stays ? input_.jobs[job].running_type : -1;
  // Else the type with the most free GPUs; strict > keeps the first of equals.
  for (int u = 0; !stays && u < static_cast<int>(free_.size()); ++u) {
    if (fits(u) && (chosen < 0 || free_[static_cast<std::size_t>(u)] >
                                      free_[static_cast<std::size_t>(chosen)])) {
      chosen = u;
    }
  }
  if (chosen < 0) return false;
  free_[static_cast<std::size_t>(chosen)] -= need;
  allocation_(job, static_cast<std::size_t>(chosen)) = 1.0;
  return true;
}

PolicyOutput GpuPool::Output() const {
  PolicyOutput output;
  output.allocation = allocation_;
  output.pair_allocation = Matrix(0, input_.num_types());
  output.status = AllocationStatus::kHeuristic;
  return output;
}

std::vector<std::size_t> ArrivalOrder(const PolicyInput& input) {
  std::vector<std::size_t> order(input.num_jobs());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Rows are sorted by id, so a stable sort keeps ids in order among equal arrivals.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return input.jobs[a].time_since_start > input.jobs[b].time_since_start;
  });
  return order;
}

}  // namespace gavel::policy
