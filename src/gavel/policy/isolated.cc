#include "gavel/policy/isolated.h"

#include "gavel/policy/common.h"

namespace gavel::policy {
namespace {

class Isolated final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    PolicyOutput output;
    output.allocation = IsolatedAllocation(input);
    output.pair_allocation = Matrix(0, input.num_types());
    output.status = AllocationStatus::kHeuristic;
    return output;
  }
};

}  // namespace

std::unique_ptr<Policy> MakeIsolated(const PolicyOptions& /*options*/) {
  return std::make_unique<Isolated>();
}

}  // namespace gavel::policy
