// The policy's one lookup and the checks on CoreOptions. Errors name the option at fault in
// the words of `gavel serve`'s flags.
#include "gavel/daemon/core_options.h"

#include <algorithm>
#include <cmath>

#include "gavel/core/check.h"
#include "gavel/daemon/error_text.h"

namespace gavel::daemon {

Result<ChosenPolicy> ChosenPolicy::Resolve(std::string name) {
  GAVEL_ASSIGN_OR_RETURN(const policy::PolicyInfo* info, policy::FindPolicy(name));
  return ChosenPolicy{std::move(name), info};
}

ChosenPolicy ChosenPolicy::Known(std::string name) {
  Result<ChosenPolicy> chosen = Resolve(std::move(name));
  GAVEL_CHECK_MSG(chosen.ok(), chosen.status().ToString().c_str());
  return *std::move(chosen);
}

Result<std::unique_ptr<policy::Policy>> ChosenPolicy::Make(std::uint64_t seed) const {
  policy::PolicyOptions options;
  options.seed = seed;
  return policy::MakePolicy(name, options);
}

Seconds CoreOptions::grace() const {
  return report_grace.value() > 0.0 ? report_grace
                                    : Seconds(std::min(60.0, round_length.value() / 2.0));
}

Seconds CoreOptions::boundary_wait() const {
  return Seconds(std::min(grace().value(), round_length.value() * 0.005));
}

Seconds CoreOptions::arrival_settle() const {
  return Seconds(std::min(max_arrival_settle.value(), round_length.value() * 0.05));
}

Status ValidateCoreOptions(const CoreOptions& options) {
  if (!options.throughputs) return Status::InvalidArgument("no throughput table");
  if (options.policy.info == nullptr) return Status::InvalidArgument("no policy");
  if (!(options.round_length.value() > 0.0) || !std::isfinite(options.round_length.value())) {
    return Status::InvalidArgument("round length: must be a positive number of seconds");
  }
  if (!(options.heartbeat_timeout > options.heartbeat_interval)) {
    return Status::InvalidArgument("heartbeat timeout: must exceed the heartbeat interval");
  }
  if (!(options.learning.ema_alpha > 0.0 && options.learning.ema_alpha <= 1.0)) {
    return Status::InvalidArgument("ema alpha: must be in (0, 1]");
  }
  for (const auto& [entity, weight] : options.entity_weights) {
    if (entity.empty() || !std::isfinite(weight) || !(weight > 0.0)) {
      return Status::InvalidArgument("entity weights: " + Quoted(entity) +
                                     " needs a non-empty name and a positive weight");
    }
  }
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
  if (options.policy.capabilities().needs_instance_costs && options.instance_costs.empty()) {
    return Status::InvalidArgument("policy " + options.policy.name +
                                   ": cost policies need the price of every GPU type "
                                   "(--instance-costs TYPE=DOLLARS_PER_GPU_HOUR,...)");
  }
  return Status::Ok();
}

}  // namespace gavel::daemon
