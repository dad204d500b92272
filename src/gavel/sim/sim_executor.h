// SimExecutor: the simulator's Executor. It "runs" a round plan by computing when each
// micro-task ends — every member runs its lease's steps at the throughput the plan expects
// (the simulator's throughputs are the truth), the micro-task ends when its slowest member
// does — and schedules a MicroTaskEnd event at that time. SplitIntoReports then turns an
// ended micro-task into the per-GPU reports a real cluster would send.
// Without physics no preemption or checkpoint overheads are modelled, as in the original; with a
// PhysicsModel (physics.h) it decides each micro-task's steps, end and failure instead.
// The executor does not own the queue; not synchronised.
#pragma once

#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/combination.h"
#include "gavel/mechanism/ports.h"
#include "gavel/mechanism/round_plan.h"
#include "gavel/sim/event_queue.h"
#include "gavel/sim/physics.h"

namespace gavel::sim {

struct MicroTaskEnd {
  mechanism::Combination combination;
  int gpu_type = 0;
  std::vector<WorkerId> workers;  // in the plan's order
  std::vector<double> steps;      // per member: the steps done (the whole lease)
  Seconds start{0.0};
  Seconds finish{0.0};
  Failure failure = Failure::kNone;  // physics: the micro-task failed at `finish`
};

class SimExecutor final : public mechanism::Executor {
 public:
  // `physics` may be null (the original's idealised cluster); it must outlive the executor.
  explicit SimExecutor(EventQueue<MicroTaskEnd>* queue, PhysicsModel* physics = nullptr)
      : queue_(queue), physics_(physics) {}
  // Errors (Internal) on an assignment with a non-positive throughput, except a member with
  // throughput 0 and no step to do (a pair that truly cannot share a GPU; sim/estimation.h).
  Status Execute(const mechanism::RoundPlan& plan) override;
  // When the last micro-task of the last plan executed ends (its start if it had none).
  Seconds plan_end() const { return plan_end_; }

 private:
  EventQueue<MicroTaskEnd>* queue_;
  PhysicsModel* physics_;
  Seconds plan_end_{0.0};
};

// One report per GPU, each carrying `elapsed` for every member.
//   floor_split (compat): the original's split — every GPU but the last gets
//            floor(steps / GPUs), the last the rest; so a multi-GPU job with fewer steps left
//            than GPUs reports 0 steps on some GPUs and its micro-task fails (docs/differences.md).
//   otherwise: an even (fractional) split, so every GPU of a job that ran reports progress.
std::vector<mechanism::WorkerReport> SplitIntoReports(const MicroTaskEnd& end, Seconds elapsed,
                                                      bool floor_split);
// The same into `reports` (resized; its memory is reused across calls).
void SplitIntoReports(const MicroTaskEnd& end, Seconds elapsed, bool floor_split,
                      std::vector<mechanism::WorkerReport>& reports);

}  // namespace gavel::sim
