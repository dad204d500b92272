// OASiS (Bao et al., INFOCOM'18; docs/policies.md "oasis"): online admission control by a
// primal-dual method. Time is cut into slots (`slot` seconds, the round length by default).
// Every server has a price per resource (its GPUs; its CPU cores where the cluster limits
// them) and slot, rising with the amount already promised there:
//     p = L · (U / L)^(used / capacity)
// between the bounds L and U: a quarter of the least, and the most, utility density (utility
// per GPU-slot at its best schedule) of the jobs seen so far (the paper's U is per unit of
// resource alone; docs/policies.md says why we use the density). When a job arrives its best
// schedule is computed (BestSchedule: dynamic programming over its workload, cut into
// `units` pieces, across the slots of the horizon; in each slot the cheapest way to run k
// workers of one GPU type, with ceil(k · ps_ratio) parameter servers of ps_cpus cores, is
// found greedily by price). The job is admitted only if that schedule's payoff — its utility
// at the schedule's completion minus the schedule's price — is positive; its resources are
// then promised (prices rise) and it runs, round by round, with the worker count its schedule
// gives the current slot. Others are rejected (PolicyOutput::rejected). Jobs without a
// utility are admitted without a schedule. GPUs the schedules leave free in a round go to
// admitted jobs that are behind their plan or between planned slots, oldest first (the
// round mechanism cannot hold GPUs idle for a plan; this keeps them busy).
//
// A slot's promises are interned as a promise state (equal promises, one state) that keeps its
// greedy prices per (type, workers, cores per GPU) while the bounds stay; a promise or a release
// moves the slot to another state. Planning an arrival walks its horizon as pieces of equal
// states and mostly reads kept prices; plans, admissions and every price are bit-identical to
// pricing every slot afresh with the first greedy (OasisOptions::reference_pricing), and
// BestSchedule's to the programme as first written (docs/policies.md "oasis", "Pricing cost").
//
// Stateful (the promises, kept prices and bounds); single-threaded like every Policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

struct ScheduleProblem;
struct Schedule;

struct OasisOptions {
  double slot_seconds = 360.0;  // a time slot (the default round length)
  // How far ahead a schedule may reach, at most: each job plans until its utility is gone
  // (linear: zero_at; sigmoid: midpoint + 40 / steepness), capped here (20000 slots = 83 days).
  int horizon_slots = 20000;
  int units = 100;              // the workload's discretisation in the dynamic programme
  int steps = 250;              // the programme's time steps at most (each groups slots)
  double ps_ratio = 0.25;       // parameter servers per worker (rounded up; 0 = none)
  double ps_cpus = 2.0;         // CPU cores per parameter server
  // Bounded work per round (docs/policies.md "oasis", "Bursts"), as production schedulers
  // bound a scheduling cycle (Slurm's default_queue_depth): at most this many arrivals get
  // their admission decision (a planned best schedule) per round, oldest first; the others
  // wait, pending (neither admitted nor rejected; they may use GPUs no admitted job takes),
  // for the next rounds. 0 = every arrival in its first round.
  int decide_per_round = 12;
  // ... and at most this many departed jobs give their later promises back per round, in the
  // order they left (the rest keep their prices up until then). 0 = all of them at once.
  int release_per_round = 64;
  // Test-only switches for the kept prices (docs/policies.md "oasis", "Pricing cost"): price
  // every slot afresh with the first greedy, as before (the oracle they are tested against) ...
  bool reference_pricing = false;
  // ... or use them but also price every slot afresh and fail the round (kInternal) if a
  // kept price or a step's sum of them differs in any bit.
  bool check_pricing = false;
  // Test-only: promise states are collected from this many on (at 4 per live one); tests set
  // it low so that collection runs.
  std::size_t collect_states_at = std::size_t{1} << 14;
  // Test-only: called with every planned arrival's programme and best schedule, before its
  // admission is decided, so that tests can compare prices and plans across pricing modes.
  std::function<void(JobId, const ScheduleProblem&, const Schedule&)> on_schedule;
};

Result<OasisOptions> ParseOasisOptions(const PolicyOptions& options);

// ---- The best-schedule subroutine (exposed for tests) ----

// One way to use a slot: `units` of the workload done for `cost` (type and workers say how).
struct SlotChoice {
  int units = 0;
  double cost = 0.0;
  int type = -1;
  int workers = 0;
};

struct ScheduleProblem {
  int units = 0;  // workload to finish, E
  // choices[t]: the options of slot t (relative to now); idling is always allowed.
  std::vector<std::vector<SlotChoice>> choices;
  // Utility if the job completes at the end of slot t.
  std::function<double(int slot)> utility;
  // The absolute first slot of each step (Oasis's steps group slots). Filled only when
  // OasisOptions::on_schedule observes the programmes; BestSchedule does not read it.
  std::vector<std::int64_t> step_begin;
};

struct Schedule {
  bool feasible = false;  // the workload fits in the slots
  double payoff = 0.0;    // utility − cost of the best schedule
  double cost = 0.0;
  int finish_slot = -1;
  std::vector<SlotChoice> per_slot;  // one per slot up to finish_slot; units 0 = idle
};

// max over completion slots t of utility(t) − (least cost of finishing E units by slot t),
// by dynamic programming: cost[t][e] = min(cost[t−1][e], min_c cost[t−1][max(0, e − c.units)]
// + c.cost). O(slots · E · choices).
Schedule BestSchedule(const ScheduleProblem& problem);

std::unique_ptr<Policy> MakeOasis(const OasisOptions& options);
Result<std::unique_ptr<Policy>> MakeOasis(const PolicyOptions& options);
std::unique_ptr<Policy> MakeOasisWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
