// The explicit list of every policy, by the name users type (`max_min_fairness_perf`, ...),
// with its capabilities (policy.h) and factory. No static self-registration: adding a policy
// means adding a line to registry.cc. Immutable; thread-safe.
//
// Option syntax: `name:key=value,key=value` (e.g. `tiresias_2das:queues=3,thresholds=3600;36000`)
// (or `name:key=value:key=value`, the spelling for `gavel sweep -p`, whose list is comma-separated)
// gives options to a policy that declares keys (PolicyInfo::option_keys). The registry checks
// the syntax and the keys (errors name the key and the policy's known keys) and hands the
// pairs to the policy in PolicyOptions::params; the policy parses the values (errors name the
// key). `allox_alpha=<a>` is AlloX's older spelling and stays.
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
  // Policies with options: their keys, comma-separated (empty = no options), and a factory
  // that rejects bad values (used instead of `make` by MakePolicy when set; `make` then gives
  // the policy with its defaults).
  std::string_view option_keys = {};
  Result<std::unique_ptr<Policy>> (*make_with_params)(const PolicyOptions&) = nullptr;
  // Kept last: entries end with it (a designated initializer may leave out earlier members).
  std::unique_ptr<Policy> (*make)(const PolicyOptions&) = nullptr;
};

std::span<const PolicyInfo> AllPolicies();

// Whether `info` declares `key` among its option keys.
bool TakesOption(const PolicyInfo& info, std::string_view key);

// Finds a policy by name. `allox_alpha=<float>` names AlloX with that alpha; `name:options`
// names `name`, its options checked (syntax and keys, not values: MakePolicy checks those).
Result<const PolicyInfo*> FindPolicy(std::string_view name);

// Creates a policy by name; `allox_alpha=<float>` sets options.allox_alpha; `name:options`
// sets options.params.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, PolicyOptions options);

}  // namespace gavel::policy
