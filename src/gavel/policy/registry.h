// The explicit list of every policy, by the name users type (`max_min_fairness_perf`, ...),
// with its capabilities (policy.h) and factory. No static self-registration: adding a policy
// means adding a line to registry.cc. Immutable; thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

struct PolicyInfo {
  std::string_view name;
  std::string_view description;  // one line, for `gavel policies`
  PolicyCapabilities capabilities = {};
  std::unique_ptr<Policy> (*make)(const PolicyOptions&) = nullptr;
};

std::span<const PolicyInfo> AllPolicies();

// Finds a policy by name. `allox_alpha=<float>` names AlloX with that alpha.
Result<const PolicyInfo*> FindPolicy(std::string_view name);

// Creates a policy by name; `allox_alpha=<float>` sets options.allox_alpha.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, PolicyOptions options);

}  // namespace gavel::policy
