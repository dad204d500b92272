// OASiS's best-schedule subroutine: given one job's workload, cut into units, and for every
// step of its horizon the ways it may use that step (units done, price paid), the schedule
// that maximises utility at completion minus the price paid. A pure function of its problem:
// it knows nothing of servers or promises (oasis_promises.h prices the steps; oasis.h decides
// admission from the payoff).
//
// Thread-safe: BestSchedule keeps its working buffers thread_local.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace gavel::policy {

// One way to use a step: `units` of the workload done for `cost` (type and workers say how).
struct SlotChoice {
  int units = 0;
  double cost = 0.0;
  int type = -1;
  int workers = 0;
};

struct ScheduleProblem {
  int units = 0;  // workload to finish, E
  // choices[t]: the options of step t (relative to now); idling is always allowed.
  std::vector<std::vector<SlotChoice>> choices;
  // Utility if the job completes at the end of step t.
  std::function<double(int slot)> utility;
  // The absolute first slot of each step (Oasis's steps group slots). Filled only when a test
  // hook observes the programmes (oasis_testing.h); BestSchedule does not read it.
  std::vector<std::int64_t> step_begin;
};

struct Schedule {
  bool feasible = false;  // the workload fits in the steps
  double payoff = 0.0;    // utility − cost of the best schedule
  double cost = 0.0;
  int finish_slot = -1;
  std::vector<SlotChoice> per_slot;  // one per step up to finish_slot; units 0 = idle
};

// max over completion steps t of utility(t) − (least cost of finishing E units by step t),
// by dynamic programming: cost[t][e] = min(cost[t−1][e], min_c cost[t−1][max(0, e − c.units)]
// + c.cost). O(steps · E · choices). Ties go to the earliest completion and, per step, to the
// first choice listed.
Schedule BestSchedule(const ScheduleProblem& problem);

}  // namespace gavel::policy
