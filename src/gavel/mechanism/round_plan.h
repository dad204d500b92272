// What flows between the round scheduler and whoever runs the jobs (design.md, "one
// scheduler core, two worlds"):
//   * RoundPlan: the scheduler's decision for one round — which combination runs on which
//     GPUs (worker ids) of which type, and the lease each member gets (a step budget and a
//     duration). The simulator's executor turns it into completion events; the cluster
//     daemon's executor sends it to worker agents.
//   * WorkerReport: one GPU's account of a finished micro-task (steps done per member and
//     elapsed time). A multi-GPU micro-task is complete once every one of its GPUs reported.
// Plain data; thread-compatible.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/combination.h"

namespace gavel::mechanism {

struct Assignment {
  Combination combination;
  int gpu_type = 0;               // index into ClusterLayout::type_names() (sorted by name)
  std::vector<WorkerId> workers;  // as many as the combination's scale factor
  // Per member, in Combination order: the lease's step budget for this round (the whole job,
  // summed over its GPUs) and the steps/s the scheduler expects on this GPU type.
  std::vector<double> max_steps;
  std::vector<double> expected_throughput;
  // Per member, the steps its whole job has left (max_steps is at most this): what a lease
  // that runs past its step budget (sim::PhysicsOptions::whole_steps) can still train.
  std::vector<double> remaining_steps;
  Seconds lease_duration{0.0};
  // The combination keeps exactly last round's GPUs (the lease is extended, no restart).
  bool lease_extended = false;
};

// How long a single-GPU time lease runs when its report must be in by the round's end (the
// daemon's on-time rounds, its start-up inside the lease): the iterator ends a time lease at
// the first step boundary after its time, so the lease is one step (at `steps_per_second`)
// shorter than the round; a step longer than the round keeps the whole round. The daemon's
// AgentExecutor sets its leases by it, and the simulator's whole-step model
// (sim::PhysicsOptions::step_early_leases) runs them by it.
inline Seconds StepShortLease(Seconds round, double steps_per_second) {
  return steps_per_second * round.value() > 1.0 ? Seconds(round.value() - 1.0 / steps_per_second)
                                                : round;
}

// The same rule for a multi-GPU job's step bound, when `steps` steps' worth of time is left
// in the round (after its start-up): the whole steps that end inside it, a step short of
// ceil(steps); as many as fit when one step or less does (the caller keeps at least one).
// `tolerance` (in steps) absorbs products that are whole up to rounding.
inline double StepShortBound(double steps, double tolerance = 0.0) {
  return steps > 1.0 ? std::ceil(steps - tolerance) - 1.0 : std::floor(steps + tolerance);
}

struct RoundPlan {
  Seconds start{0.0};
  std::vector<Assignment> assignments;
  // The allocation was recomputed by the policy before this round was planned.
  bool allocation_recomputed = false;
  // Jobs the policy's admission control rejected while planning this round: they left for
  // good (JobRecord::rejected) and are in no assignment.
  std::vector<JobId> rejected;
};

struct WorkerReport {
  Combination combination;
  WorkerId worker;
  std::vector<double> steps;     // per member: steps this GPU completed
  std::vector<Seconds> elapsed;  // per member: time the micro-task took on this GPU
  // When the micro-task ended; a job that finishes its last step here completes at this time.
  Seconds finished_at{0.0};
};

}  // namespace gavel::mechanism
