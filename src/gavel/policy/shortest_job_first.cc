// TEMPORARY: replaced by the real implementation before this lands.
#include "gavel/policy/shortest_job_first.h"

namespace gavel::policy {
namespace {
class NotYet final : public Policy {
 public:
  Result<PolicyOutput> Allocate(const PolicyInput&) override {
    return Status::Unimplemented("shortest_job_first is not implemented yet");
  }
};
}  // namespace

std::unique_ptr<Policy> MakeShortestJobFirst(Variant, const PolicyOptions&) { return std::make_unique<NotYet>(); }

}  // namespace gavel::policy
