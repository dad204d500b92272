// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/max_sum_throughput.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("max_sum_throughput is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeMaxSumThroughput(const MaxSumThroughputOptions&, const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
