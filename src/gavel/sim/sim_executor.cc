#include "gavel/sim/sim_executor.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace gavel::sim {

Status SimExecutor::Execute(const mechanism::RoundPlan& plan) {
  plan_end_ = plan.start;
  for (const mechanism::Assignment& a : plan.assignments) {
    MicroTaskEnd end;
    end.combination = a.combination;
    end.gpu_type = a.gpu_type;
    end.workers = a.workers;
    end.steps = a.max_steps;
    end.start = plan.start;
    end.finish = plan.start;
    for (std::size_t i = 0; i < a.max_steps.size(); ++i) {
      const double tput = a.expected_throughput[i];
      // A member that truly cannot run in this pair (estimated throughputs put it there) does
      // no step; the micro-task then fails, as in the original.
      if (tput == 0.0 && a.max_steps[i] == 0.0) continue;
      if (!(tput > 0.0)) {
        return Status::Internal("assignment of " + a.combination.ToString() +
                                " has no positive throughput");
      }
      end.finish = std::max(end.finish, plan.start + Seconds(a.max_steps[i] / tput));
    }
    if (physics_ != nullptr) {
      Outcome outcome = physics_->Launch(a, plan.start);
      end.steps = std::move(outcome.steps);
      end.finish = outcome.finish;
      end.failure = outcome.failure;
    }
    const Seconds finish = end.finish;
    plan_end_ = std::max(plan_end_, finish);
    queue_->Push(finish, std::move(end));
  }
  return Status::Ok();
}

std::vector<mechanism::WorkerReport> SplitIntoReports(const MicroTaskEnd& end, Seconds elapsed,
                                                      bool floor_split) {
  std::vector<mechanism::WorkerReport> reports;
  SplitIntoReports(end, elapsed, floor_split, reports);
  return reports;
}

void SplitIntoReports(const MicroTaskEnd& end, Seconds elapsed, bool floor_split,
                      std::vector<mechanism::WorkerReport>& reports) {
  const std::size_t members = end.steps.size();
  const std::size_t gpus = end.workers.size();
  const double sf = static_cast<double>(gpus);
  std::array<double, 2> given{0.0, 0.0};
  GAVEL_CHECK(members <= given.size());
  reports.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    mechanism::WorkerReport& r = reports[g];
    r.combination = end.combination;
    r.worker = end.workers[g];
    r.finished_at = end.finish;
    r.elapsed.assign(members, elapsed);
    r.steps.resize(members);
    for (std::size_t j = 0; j < members; ++j) {
      double part;
      if (g + 1 == gpus) {
        part = end.steps[j] - given[j];
      } else {
        part = floor_split ? std::floor(end.steps[j] / sf) : end.steps[j] / sf;
      }
      given[j] += part;
      r.steps[j] = part;
    }
  }
}

}  // namespace gavel::sim
