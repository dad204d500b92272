#include "gavel/sim/sim_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace gavel::sim {

Status SimExecutor::Execute(const mechanism::RoundPlan& plan) {
  plan_end_ = plan.start;
  for (const mechanism::Assignment& a : plan.assignments) {
    Seconds finish = plan.start;
    for (std::size_t i = 0; i < a.max_steps.size(); ++i) {
      const double tput = a.expected_throughput[i];
      // A member that truly cannot run in this pair (estimated throughputs put it there) does
      // no step; the micro-task then fails, as in the original.
      if (tput == 0.0 && a.max_steps[i] == 0.0) continue;
      if (!(tput > 0.0)) {
        return Status::Internal("assignment of " + a.combination.ToString() +
                                " has no positive throughput");
      }
      finish = std::max(finish, plan.start + Seconds(a.max_steps[i] / tput));
    }
    std::optional<Outcome> outcome;
    if (physics_ != nullptr) {
      outcome = physics_->Launch(a, plan.start);
      finish = outcome->finish;
    }
    plan_end_ = std::max(plan_end_, finish);
    // Filled in place: the queue's slot keeps an earlier event's vectors for reuse.
    MicroTaskEnd& end = queue_->Emplace(finish);
    end.combination = a.combination;
    end.gpu_type = a.gpu_type;
    end.workers.assign(a.workers.begin(), a.workers.end());
    if (outcome) {
      end.steps = std::move(outcome->steps);
    } else {
      end.steps.assign(a.max_steps.begin(), a.max_steps.end());
    }
    end.start = plan.start;
    end.finish = finish;
    end.failure = outcome ? outcome->failure : Failure::kNone;
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
