// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/proportional.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("proportional is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeProportional(const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
