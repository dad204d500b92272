// Switches and observers of the oasis policy for tests and benchmarks only, kept out of
// OasisOptions (what a user sets): the oracle pricing the kept prices are tested against, a
// bit-for-bit check of them, early collection of promise states, and an observer of every
// planned arrival's programme.
//
// Single-threaded, like the policy: on_schedule runs inside Allocate.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "gavel/core/ids.h"
#include "gavel/policy/oasis.h"
#include "gavel/policy/oasis_promises.h"
#include "gavel/policy/oasis_schedule.h"

namespace gavel::policy {

struct OasisTestHooks {
  // kReference: price every slot afresh with ReferenceGreedy (oasis_reference_pricing.h);
  // kChecked: use the kept prices but also price every slot afresh, and fail the round
  // (kInternal) if a kept price or a step's sum of them differs in any bit.
  oasis::PricingMode pricing = oasis::PricingMode::kKept;
  // Promise states are collected from this many on (at 4 per live one); tests set it low so
  // that collection runs.
  std::size_t collect_states_at = std::size_t{1} << 14;
  // Called with every planned arrival's programme (ScheduleProblem::step_begin filled) and best
  // schedule, before its admission is decided.
  std::function<void(JobId, const ScheduleProblem&, const Schedule&)> on_schedule;
};

std::unique_ptr<Policy> MakeOasisForTesting(const OasisOptions& options, OasisTestHooks hooks);

}  // namespace gavel::policy
