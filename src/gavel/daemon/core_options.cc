// The checks on CoreOptions, apart from the core's flow (scheduler_core.cc). Errors name the
// option at fault in the words of `gavel serve`'s flags.
#include <cmath>

#include "gavel/daemon/error_text.h"
#include "gavel/daemon/scheduler_core.h"
#include "gavel/policy/registry.h"

namespace gavel::daemon {

Status ValidateCoreOptions(const CoreOptions& options) {
  if (!options.throughputs) return Status::InvalidArgument("no throughput table");
  if (!(options.round_length.value() > 0.0) || !std::isfinite(options.round_length.value())) {
    return Status::InvalidArgument("round length: must be a positive number of seconds");
  }
  if (!(options.heartbeat_timeout > options.heartbeat_interval)) {
    return Status::InvalidArgument("heartbeat timeout: must exceed the heartbeat interval");
  }
  if (!(options.ema_alpha > 0.0 && options.ema_alpha <= 1.0)) {
    return Status::InvalidArgument("ema alpha: must be in (0, 1]");
  }
  for (const auto& [entity, weight] : options.entity_weights) {
    if (entity.empty() || !std::isfinite(weight) || !(weight > 0.0)) {
      return Status::InvalidArgument("entity weights: " + Quoted(entity) +
                                     " needs a non-empty name and a positive weight");
    }
  }
  GAVEL_ASSIGN_OR_RETURN(const policy::PolicyInfo* info, policy::FindPolicy(options.policy));
  for (const auto& [type, price] : options.instance_costs) {
    if (!options.throughputs->HasGpuType(type)) {
      return Status::InvalidArgument("instance costs: " + Quoted(type) +
                                     " is not a GPU type of the throughput table (" +
                                     JoinNames(options.throughputs->gpu_types()) + ")");
    }
    if (!std::isfinite(price) || price < 0.0) {
      return Status::InvalidArgument("instance costs: the price of " + type +
                                     " must be a non-negative number of $/GPU-hour");
    }
  }
  if (info->capabilities.needs_instance_costs && options.instance_costs.empty()) {
    return Status::InvalidArgument("policy " + options.policy +
                                   ": cost policies need the price of every GPU type "
                                   "(--instance-costs TYPE=DOLLARS_PER_GPU_HOUR,...)");
  }
  return Status::Ok();
}

}  // namespace gavel::daemon
