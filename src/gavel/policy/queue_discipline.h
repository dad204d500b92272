// Shared by the queue-discipline policies (tiresias_2das, yarn_cs): whole GPUs of one type
// given to jobs one at a time, in the order the policy decides. Heterogeneity-agnostic, as the
// schedulers they stand for are: a job keeps the type it ran on last round when it still fits
// there, else takes the fitting type (enough free GPUs, throughput > 0) with the most GPUs
// that are free and not held by a running job still to be placed (ties to the first in sorted
// order). The GPUs of running jobs count as held until their turn comes, so a job placed
// earlier in the order goes where there is room rather than onto a running job's GPUs: no job
// is preempted or moved to another type while another fits the newcomer (Tiresias and
// Gandiva preempt to make room, never without need). Plain data; single-threaded.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

// The type a job that needs `need` GPUs takes (the rule above): `running_type` when it fits,
// else the type t where `runs(t)` and free[t] >= need with the largest free[t] − held[t]; −1
// when none fits. `held[t]`: GPUs of type t that running jobs not yet placed will want back.
int ChooseGpuType(int running_type, int need, const std::vector<int>& free,
                  const std::vector<int>& held, const std::function<bool(int)>& runs);

// The heterogeneity-aware rule: `running_type` when it fits; else, among the fitting types,
// one with room (free − held >= need) before one without, then the largest preference[t],
// then the most room; −1 when none fits.
int ChooseGpuTypeByPreference(int running_type, int need, const std::vector<int>& free,
                              const std::vector<int>& held, const std::function<bool(int)>& runs,
                              const std::function<double(int)>& preference);

// Each job's comparative advantage on each type (Gavel's view of heterogeneity): its
// normalised throughput there, T[i][t] / prop_i (prop_i: its throughput on an equal share of
// the cluster, docs/policies.md), over the mean of the same over the jobs that can run on t.
// Above 1 where the job gains more from type t than the jobs around it do; 0 where it cannot
// run.
Matrix ComparativeAdvantage(const PolicyInput& input);

class GpuPool {
 public:
  // `preference` (jobs × types, e.g. ComparativeAdvantage): when given, a job that must take
  // a type takes it by ChooseGpuTypeByPreference; otherwise by ChooseGpuType. It must outlive
  // the pool.
  explicit GpuPool(const PolicyInput& input, const Matrix* preference = nullptr);
  // Gives job `job` (an index into input.jobs) its GPUs; false when no type fits it. Each
  // job's running GPUs stop being held the first time it is offered.
  bool Take(std::size_t job);
  // The allocation so far (1 where a job took a type), as a heuristic PolicyOutput.
  PolicyOutput Output() const;

 private:
  const PolicyInput& input_;
  const Matrix* preference_ = nullptr;
  std::vector<int> free_;
  std::vector<int> held_;      // per type: GPUs of running jobs not offered yet
  std::vector<char> offered_;  // per job: offered to Take once
  Matrix allocation_;
};

// Job indices sorted by arrival (earliest first: largest time_since_start), ties by id.
std::vector<std::size_t> ArrivalOrder(const PolicyInput& input);

}  // namespace gavel::policy
