// The round scheduler's ports to the outside world (design.md habit 4): a Clock it reads the
// current time from, and an Executor that carries out its round plans. The simulator plugs
// in a ManualClock it advances itself and an executor that turns plans into completion
// events; the cluster daemon will plug in a wall clock and an executor that talks to worker
// agents. Neither port is owned by the scheduler; both must outlive it.
// Thread-safety: ManualClock is not synchronised (one simulation thread).
#pragma once

#include <array>

#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/round_plan.h"

namespace gavel::mechanism {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since the start of the run; never decreases.
  virtual Seconds Now() const = 0;
};

// A clock that only moves when told to: the simulator's, and the tests'.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Seconds start = Seconds(0.0)) : now_(start) {}
  Seconds Now() const override { return now_; }
  void Set(Seconds now) { now_ = now; }

 private:
  Seconds now_;
};

// Runs the micro-tasks of a round plan and, as they finish, feeds WorkerReports back to the
// scheduler (RoundScheduler::OnWorkerDone) through whatever event path its world has.
class Executor {
 public:
  virtual ~Executor() = default;
  // Starts every assignment of `plan` at plan.start. An error means the plan could not be
  // carried out at all (a bug, or a lost connection), not that a micro-task failed; failed
  // micro-tasks come back as reports with zero steps.
  virtual Status Execute(const RoundPlan& plan) = 0;
};

// Where the scheduler reads the co-located throughputs of a pair (space sharing) when it creates
// the pair, when the cluster changes, and when told to re-read it (RoundScheduler::RefreshPair):
// the throughput estimator's estimates (docs/estimator.md). Without one, the table's.
class ColocatedThroughputSource {
 public:
  virtual ~ColocatedThroughputSource() = default;
  // {steps/s of a, steps/s of b} while jobs a < b share one GPU of the table's GPU type
  // `table_gpu_type` (index into ThroughputTable::gpu_types()).
  virtual std::array<double, 2> Colocated(JobId a, JobId b, int table_gpu_type) = 0;
};

}  // namespace gavel::mechanism
