#include "gavel/policy/queue_discipline.h"

#include <algorithm>
#include <tuple>

#include "gavel/policy/common.h"

namespace gavel::policy {

int ChooseGpuTypeByPreference(int running_type, int need, const std::vector<int>& free,
                              const std::vector<int>& held, const std::function<bool(int)>& runs,
                              const std::function<double(int)>& preference) {
  const auto fits = [&](int type) {
    return type >= 0 && static_cast<std::size_t>(type) < free.size() &&
           free[static_cast<std::size_t>(type)] >= need && runs(type);
  };
  // A running job stays where it fits: a move costs a restart.
  if (fits(running_type)) return running_type;
  const auto room = [&](int type) {
    const auto t = static_cast<std::size_t>(type);
    return free[t] - (t < held.size() ? held[t] : 0);
  };
  const auto key = [&](int type) {
    return std::tuple(room(type) >= need, preference(type), room(type));
  };
  int chosen = -1;
  // Strict > keeps the first of equals.
  for (int u = 0; u < static_cast<int>(free.size()); ++u) {
    if (fits(u) && (chosen < 0 || key(u) > key(chosen))) chosen = u;
  }
  return chosen;
}

// The most room first, as by the preference rule with no preference: the type with the most
// room has room for the job whenever any type has.
int ChooseGpuType(int running_type, int need, const std::vector<int>& free,
                  const std::vector<int>& held, const std::function<bool(int)>& runs) {
  return ChooseGpuTypeByPreference(running_type, need, free, held, runs,
                                   [](int) { return 0.0; });
}

Matrix ComparativeAdvantage(const PolicyInput& input) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  const std::vector<double> prop = ProportionalThroughputs(input, input.throughput);
  Matrix normalised(m, n);
  std::vector<double> sum(n, 0.0);
  std::vector<int> count(n, 0);
  for (std::size_t i = 0; i < m; ++i) {
    if (prop[i] <= 0.0) continue;
    for (std::size_t t = 0; t < n; ++t) {
      if (input.throughput(i, t) <= 0.0) continue;
      normalised(i, t) = input.throughput(i, t) / prop[i];
      sum[t] += normalised(i, t);
      ++count[t];
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t t = 0; t < n; ++t) {
      if (count[t] > 0) normalised(i, t) /= sum[t] / count[t];
    }
  }
  return normalised;
}

GpuPool::GpuPool(const PolicyInput& input, const Matrix* preference)
    : input_(input), preference_(preference), allocation_(input.num_jobs(), input.num_types()) {
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
  const auto runs = [&](int type) {
    return input_.throughput(job, static_cast<std::size_t>(type)) > 0.0;
  };
  const int chosen =
      preference_ == nullptr
          ? ChooseGpuType(j.running_type, need, free_, held_, runs)
          : ChooseGpuTypeByPreference(j.running_type, need, free_, held_, runs, [&](int type) {
              return (*preference_)(job, static_cast<std::size_t>(type));
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
