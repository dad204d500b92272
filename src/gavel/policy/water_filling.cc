// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/water_filling.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("water_filling is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeMaxMinFairnessWaterFilling(Variant, const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
