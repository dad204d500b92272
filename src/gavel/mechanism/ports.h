// The round scheduler's ports to the outside world (design.md habit 4): a Clock it reads the
// current time from (gavel::Clock, core/clock.h), and an Executor that carries out its round
// plans. The simulator plugs in a ManualClock it advances itself and an executor that turns
// plans into completion events (sim::SimExecutor); the cluster daemon plugs in its wall clock
// (seconds since the state directory was made) and an executor that sends the plans to
// worker agents (daemon::AgentExecutor). Neither port is owned by the scheduler; both must
// outlive it.
#pragma once

#include <array>

#include "gavel/core/clock.h"
#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/round_plan.h"

namespace gavel::mechanism {

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
