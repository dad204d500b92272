// OASiS (Bao et al., INFOCOM'18; docs/policies.md "oasis"): online admission control by a
// primal-dual method. Time is cut into slots (`slot` seconds, the round length by default).
// Every server has a price per resource and slot, rising with the amount already promised
// there (oasis_promises.h keeps the promises and their prices). When a job arrives its best
// schedule is computed (BestSchedule, oasis_schedule.h: dynamic programming over its
// workload, cut into `units` pieces, across the slots of the horizon, each slot's choices
// priced by the ledger). The job is admitted only if that schedule's payoff — its utility at
// the schedule's completion minus the schedule's price — is positive; its resources are then
// promised (prices rise) and it runs, round by round, with the worker count its schedule
// gives the current slot. Others wait, deferred, and are planned again when promises are
// given back, until they can no longer finish in time and are rejected
// (PolicyOutput::rejected; `defer`). An admitted job whose execution falls behind its plan is
// planned again from what it has left, at the speed it has really run (`replan`). Jobs without a utility are admitted without
// a schedule.
// GPUs the schedules leave free in a round go to admitted jobs that are behind their plan or
// between planned slots, oldest first, then to waiting jobs (the round mechanism cannot hold
// GPUs idle for a plan; this keeps them busy). While every job fits in the cluster, the round
// serves the most urgent first instead, plans yielding to them (`urgency`).
//
// The parts: oasis_plan.h (the values they share), oasis_schedule.h (the programme),
// oasis_promises.h (promise states and kept prices), oasis_reference_pricing.h (the oracle the
// kept prices are checked against), this file (admission and the round's allocation), and
// oasis_testing.h (switches and observers for tests and benchmarks only).
//
// Stateful (the admitted jobs' plans and the ledger); single-threaded like every Policy.
#pragma once

#include <memory>

#include "gavel/core/status.h"
#include "gavel/policy/oasis_schedule.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

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
  // A job whose best schedule does not pay at arrival waits, pending (it may use GPUs no
  // admitted job takes), and is planned again whenever promises have been given back since its
  // last try; it is rejected only once it can no longer finish before its utility is (all but)
  // gone (docs/policies.md "oasis", "Deferral and urgency"). false: rejected at once, as in
  // the paper.
  bool defer = true;
  // While the jobs that stay need no more GPUs than the cluster has, the round serves them most
  // urgent first (utility lost per GPU-slot of delay at their best speed), each on its planned
  // GPUs if they are still free, else on the fastest free ones: plans then yield to a job that
  // loses more by waiting (docs/policies.md "oasis", "Deferral and urgency"). false: plans
  // first, always.
  bool urgency = true;
  // When an admitted job whose execution fell behind its plan (restarts, placement slow-down,
  // failures) is planned again: its later promises given back, its remaining work planned at
  // the current prices and its realised speed (steps done over the table's, over the rounds it
  // ran) and promised whatever its payoff, as it stays admitted (docs/policies.md
  // "oasis", "Replanning"): once its plan has ended, or (default) as soon as the rest of its
  // plan would no longer finish it. kNever: it runs on GPUs no plan takes once its plan ended.
  enum class Replan { kNever = 0, kWhenEnded = 1, kWhenBehind = 2 };
  Replan replan = Replan::kWhenBehind;
};

Result<OasisOptions> ParseOasisOptions(const PolicyOptions& options);

std::unique_ptr<Policy> MakeOasis(const OasisOptions& options);
Result<std::unique_ptr<Policy>> MakeOasis(const PolicyOptions& options);
std::unique_ptr<Policy> MakeOasisWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
