#include "gavel/policy/yarn_capacity.h"

#include <cstddef>
#include <vector>

#include "gavel/policy/queue_discipline.h"

namespace gavel::policy {
namespace {

class YarnCapacity final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::vector<std::size_t> order = ArrivalOrder(input);
    GpuPool pool(input);
    // Phase 1: running jobs keep their GPUs (a job that no longer fits, after the cluster
    // shrank, waits like a new one).
    std::vector<std::size_t> waiting;
    for (std::size_t job : order) {
      if (input.jobs[job].running_type < 0 || !pool.Take(job)) waiting.push_back(job);
    }
    // Phase 2: the queue in arrival order, stopping at the first job that fits nowhere.
    for (std::size_t job : waiting) {
      if (!pool.Take(job)) break;
    }
    return pool.Output();
  }
};

}  // namespace

std::unique_ptr<Policy> MakeYarnCapacity(const PolicyOptions& /*options*/) {
  return std::make_unique<YarnCapacity>();
}

}  // namespace gavel::policy
