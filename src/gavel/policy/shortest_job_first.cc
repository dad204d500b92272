#include "gavel/policy/shortest_job_first.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

#include "gavel/policy/common.h"

namespace gavel::policy {
namespace {

// Not in the original (the paper names SJF among its baselines). Every call re-sorts the
// jobs by estimated remaining time, so a newly arrived short job preempts a long one at the
// next allocation. A job that does not fit on any free type is skipped and the next one is
// tried (no head-of-line blocking, unlike FIFO): the order decides who goes first, not who
// may go at all.
class ShortestJobFirst final : public Policy {
 public:
  explicit ShortestJobFirst(Variant variant) : variant_(variant) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const std::vector<double> rate = EstimatedRates(input);
    // steps_remaining / rate; a job that can run nowhere goes last.
    std::vector<double> time_left(m, std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < m; ++i) {
      if (rate[i] > 0.0) time_left[i] = input.jobs[i].steps_remaining / rate[i];
    }
    std::vector<std::size_t> order(m);
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Stable: equal times keep id order.
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return time_left[a] < time_left[b]; });

    std::vector<int> free_gpus(n);
    for (std::size_t j = 0; j < n; ++j) free_gpus[j] = static_cast<int>(input.gpu_counts[j]);
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    for (const std::size_t i : order) {
      const int scale_factor = input.jobs[i].scale_factor;
      std::size_t chosen = n;
      for (std::size_t j = 0; j < n; ++j) {
        if (free_gpus[j] < scale_factor || input.throughput(i, j) <= 0.0) continue;
        // Agnostic: the type with the most free GPUs, as a scheduler blind to speed balances
        // load (a fixed name order would always start with the same, possibly slowest,
        // type); perf: the fastest. Ties go to the earlier name.
        if (chosen == n) {
          chosen = j;
        } else if (variant_ == Variant::kAgnostic ? free_gpus[j] > free_gpus[chosen]
                                                  : input.throughput(i, j) >
                                                        input.throughput(i, chosen)) {
          chosen = j;
        }
      }
      if (chosen == n) continue;
      output.allocation(i, chosen) = 1.0;
      free_gpus[chosen] -= scale_factor;
    }
    return output;
  }

 private:
  // The speed the policy believes each job runs at: agnostic, its cluster-wide average
  // throughput Σ_j T[i][j] c_j / Σ_t c_t (it does not know which type it will get); perf,
  // its throughput on its fastest type.
  std::vector<double> EstimatedRates(const PolicyInput& input) const {
    if (variant_ == Variant::kAgnostic) return ProportionalThroughputs(input, input.throughput);
    std::vector<double> rate(input.num_jobs(), 0.0);
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        rate[i] = std::max(rate[i], input.throughput(i, j));
      }
    }
    return rate;
  }

  Variant variant_;
};

}  // namespace

std::unique_ptr<Policy> MakeShortestJobFirst(Variant variant, const PolicyOptions& /*options*/) {
  return std::make_unique<ShortestJobFirst>(variant);
}

}  // namespace gavel::policy
