#include "gavel/policy/drf.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace gavel::policy {
namespace {

// Relative slack under which a resource counts as saturated (floating-point filling).
constexpr double kSaturated = 1e-9;

class Drf final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    // Resources: the GPU types, then host CPU and memory where the cluster limits them.
    std::vector<double> capacity(input.gpu_counts.begin(), input.gpu_counts.end());
    const bool cpu = input.host_cpus > 0.0;
    const bool mem = input.host_mem_gb > 0.0;
    if (cpu) capacity.push_back(input.host_cpus);
    if (mem) capacity.push_back(input.host_mem_gb);

    std::vector<std::vector<double>> demands(m, std::vector<double>(capacity.size(), 0.0));
    std::vector<double> runnable_gpus(m, 0.0);  // Σ c_j over the types job i can run on
    std::vector<double> weights(m, 1.0);
    for (std::size_t i = 0; i < m; ++i) {
      const PolicyJob& job = input.jobs[i];
      for (std::size_t j = 0; j < n; ++j) {
        if (input.throughput(i, j) > 0.0) runnable_gpus[i] += input.gpu_counts[j];
      }
      if (runnable_gpus[i] <= 0.0) continue;  // runs nowhere: no demand, x = 0 below
      for (std::size_t j = 0; j < n; ++j) {
        if (input.throughput(i, j) <= 0.0) continue;
        demands[i][j] = job.scale_factor * input.gpu_counts[j] / runnable_gpus[i];
      }
      std::size_t r = n;
      if (cpu) demands[i][r++] = job.scale_factor * job.cpus_per_gpu;
      if (mem) demands[i][r++] = job.scale_factor * job.mem_gb_per_gpu;
      weights[i] = job.priority_weight > 0.0 ? job.priority_weight : 1.0;
    }
    std::vector<double> max_tasks(m, 1.0);  // a job runs at most all the time
    for (std::size_t i = 0; i < m; ++i) {
      if (runnable_gpus[i] <= 0.0) max_tasks[i] = 0.0;
    }
    const std::vector<double> x = ProgressiveFilling(demands, capacity, max_tasks, weights);

    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (input.throughput(i, j) <= 0.0) continue;
        output.allocation(i, j) = std::min(1.0, x[i] * input.gpu_counts[j] / runnable_gpus[i]);
      }
    }
    output.status = AllocationStatus::kHeuristic;
    return output;
  }
};

}  // namespace

std::vector<double> ProgressiveFilling(const std::vector<std::vector<double>>& demands,
                                       const std::vector<double>& capacity,
                                       const std::vector<double>& max_tasks,
                                       const std::vector<double>& weights) {
  const std::size_t users = demands.size();
  const std::size_t resources = capacity.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> tasks(users, 0.0);
  std::vector<double> used(resources, 0.0);
  // rate[u]: tasks per unit of the common level (dominant share / weight).
  std::vector<double> rate(users, 0.0);
  std::vector<bool> active(users, false);
  for (std::size_t u = 0; u < users; ++u) {
    double dominant = 0.0;
    for (std::size_t r = 0; r < resources; ++r) {
      if (capacity[r] > 0.0) dominant = std::max(dominant, demands[u][r] / capacity[r]);
    }
    if (dominant <= 0.0) {
      tasks[u] = std::isfinite(max_tasks[u]) ? max_tasks[u] : 0.0;
      continue;
    }
    rate[u] = weights[u] / dominant;
    active[u] = max_tasks[u] > 0.0;
  }
  // Each step raises the level to the next event: a resource saturates or a user reaches
  // its cap. At most users + resources steps.
  while (std::find(active.begin(), active.end(), true) != active.end()) {
    double step = inf;
    for (std::size_t r = 0; r < resources; ++r) {
      double growth = 0.0;
      for (std::size_t u = 0; u < users; ++u) {
        if (active[u]) growth += rate[u] * demands[u][r];
      }
      if (growth > 0.0) step = std::min(step, std::max(0.0, capacity[r] - used[r]) / growth);
    }
    for (std::size_t u = 0; u < users; ++u) {
      if (active[u]) step = std::min(step, (max_tasks[u] - tasks[u]) / rate[u]);
    }
    if (!std::isfinite(step)) break;  // nothing limits the active users (no finite cap)
    for (std::size_t u = 0; u < users; ++u) {
      if (!active[u]) continue;
      tasks[u] += step * rate[u];
      for (std::size_t r = 0; r < resources; ++r) used[r] += step * rate[u] * demands[u][r];
    }
    // Freeze: users at their cap, and users of a saturated resource.
    for (std::size_t u = 0; u < users; ++u) {
      if (!active[u]) continue;
      bool frozen = tasks[u] >= max_tasks[u] * (1.0 - kSaturated);
      for (std::size_t r = 0; r < resources && !frozen; ++r) {
        frozen = demands[u][r] > 0.0 && used[r] >= capacity[r] * (1.0 - kSaturated);
      }
      if (frozen) active[u] = false;
    }
  }
  return tasks;
}

std::unique_ptr<Policy> MakeDrf(const PolicyOptions& /*options*/) {
  return std::make_unique<Drf>();
}

}  // namespace gavel::policy
