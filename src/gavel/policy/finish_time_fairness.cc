// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/finish_time_fairness.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("finish_time_fairness is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeFinishTimeFairness(Variant, const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
