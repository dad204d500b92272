// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/gandiva.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("gandiva is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeGandiva(const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
