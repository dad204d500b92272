#include "gavel/policy/isolated.h"

#include "gavel/policy/common.h"

namespace gavel::policy {
namespace {

class Isolated final : public Policy {
 public:
  explicit Isolated(bool compat) : compat_(compat) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    PolicyOutput output;
    output.allocation = IsolatedAllocation(input);
    output.pair_allocation = Matrix(0, input.num_types());
    output.status = AllocationStatus::kHeuristic;
    // The original also shares out types where a job cannot run.
    if (!compat_) ZeroUnrunnableCells(input, output);
    return output;
  }

 private:
  bool compat_;
};

}  // namespace

std::unique_ptr<Policy> MakeIsolated(const PolicyOptions& options) {
  return std::make_unique<Isolated>(options.compat_gavel);
}

}  // namespace gavel::policy
