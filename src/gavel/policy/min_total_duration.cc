// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/min_total_duration.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("min_total_duration is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeMinTotalDuration(Variant, const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
