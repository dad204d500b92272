#include "gavel/policy/queue_discipline.h"

#include <algorithm>

namespace gavel::policy {

int ChooseGpuType(int running_type, int need, const std::vector<int>& free,
                  const std::vector<int>& held, const std::function<bool(int)>& runs) {
  const auto fits = [&](int type) {
    return type >= 0 && static_cast<std::size_t>(type) < free.size() &&
           free[static_cast<std::size_t>(type)] >= need && runs(type);
  };
  if (fits(running_type)) return running_type;
  const auto room = [&](int type) {
    const auto t = static_cast<std::size_t>(type);
    return free[t] - (t < held.size() ? held[t] : 0);
  };
  int chosen = -1;
  // Strict > keeps the first of equals.
  for (int u = 0; u < static_cast<int>(free.size()); ++u) {
    if (fits(u) && (chosen < 0 || room(u) > room(chosen))) chosen = u;
  }
  return chosen;
}

GpuPool::GpuPool(const PolicyInput& input)
    : input_(input), allocation_(input.num_jobs(), input.num_types()) {
  for (double count : input.gpu_counts) free_.push_back(static_cast<int>(count));
  held_.assign(free_.size(), 0);
  offered_.assign(input.num_jobs(), 0);
  for (const PolicyJob& job : input.jobs) {
    if (job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < held_.size()) {
      held_[static_cast<std::size_t>(job.running_type)] += job.scale_factor;
    }
  }
}

bool GpuPool::Take(std::size_t job) {
  const PolicyJob& j = input_.jobs[job];
  const int need = j.scale_factor;
  if (offered_[job] == 0 && j.running_type >= 0 &&
      static_cast<std::size_t>(j.running_type) < held_.size()) {
    held_[static_cast<std::size_t>(j.running_type)] -= need;  // its turn: no longer held
  }
  offered_[job] = 1;
  const int chosen = ChooseGpuType(j.running_type, need, free_, held_, [&](int type) {
    return input_.throughput(job, static_cast<std::size_t>(type)) > 0.0;
  });
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
