#include "gavel/policy/allox.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "gavel/policy/assignment.h"

namespace gavel::policy {
namespace {

// The original's stand-in for a zero throughput, so that the processing time stays finite.
constexpr double kZeroThroughput = 1e-10;

class Allox final : public Policy {
 public:
  explicit Allox(const PolicyOptions& options)
      : alpha_(options.allox_alpha), compat_(options.compat_gavel) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    for (const PolicyJob& job : input.jobs) {
      if (job.scale_factor != 1) {
        return Status::InvalidArgument("allox: job " + job.id.ToString() + " needs " +
                                       std::to_string(job.scale_factor) +
                                       " GPUs; AlloX schedules single-GPU jobs only");
      }
    }
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;

    // 1. Running jobs keep their GPU (non-preemptive); the others wait.
    std::vector<std::size_t> waiting;
    std::vector<int> free_gpus(n);
    for (std::size_t j = 0; j < n; ++j) free_gpus[j] = static_cast<int>(input.gpu_counts[j]);
    for (std::size_t i = 0; i < m; ++i) {
      const auto it = running_.find(input.jobs[i].id);
      const int type = it == running_.end() ? -1 : input.TypeIndex(it->second);
      if (type < 0) {
        waiting.push_back(i);
        continue;
      }
      output.allocation(i, static_cast<std::size_t>(type)) = 1.0;
      --free_gpus[static_cast<std::size_t>(type)];
    }

    // 2. The free GPUs, one column each, by type in name order.
    std::vector<std::size_t> gpu_type;
    for (std::size_t j = 0; j < n; ++j) {
      for (int g = 0; g < free_gpus[j]; ++g) gpu_type.push_back(j);
    }
    const std::size_t num_gpus = gpu_type.size();

    // 3. Oldest first (stable: equal ages keep id order), truncated to max(⌊alpha·w⌋, gpus).
    std::stable_sort(waiting.begin(), waiting.end(), [&](std::size_t a, std::size_t b) {
      return input.jobs[a].time_since_start > input.jobs[b].time_since_start;
    });
    // Python's int() truncates toward zero.
    const double alpha_share = std::max(0.0, alpha_ * static_cast<double>(waiting.size()));
    const auto considered =
        std::min(waiting.size(), std::max(static_cast<std::size_t>(alpha_share), num_gpus));
    waiting.resize(considered);

    // 4. Slot k·G + g means "k-th from last on GPU g": a job there delays k others behind it
    // and costs (k + 1)·(its processing time on g) + its wait so far. A min-cost matching of
    // jobs to slots minimises the sum of completion times (AlloX, EuroSys 2020).
    const std::size_t rows = waiting.size();
    if (rows > 0 && num_gpus > 0) {
      Matrix cost(rows, rows * num_gpus);
      for (std::size_t r = 0; r < rows; ++r) {
        const PolicyJob& job = input.jobs[waiting[r]];
        for (std::size_t g = 0; g < num_gpus; ++g) {
          double throughput = input.throughput(waiting[r], gpu_type[g]);
          if (throughput == 0.0) throughput = kZeroThroughput;
          const double processing = job.steps_remaining / throughput;
          for (std::size_t k = 0; k < rows; ++k) {
            cost(r, k * num_gpus + g) =
                static_cast<double>(k + 1) * processing + job.time_since_start.value();
          }
        }
      }
      GAVEL_ASSIGN_OR_RETURN(const LinearAssignment matching, SolveLinearSumAssignment(cost));
      // The job that runs first on each GPU is the one with the largest k there.
      std::vector<std::size_t> first_job(num_gpus, rows);
      std::vector<std::size_t> first_slot(num_gpus, 0);
      for (std::size_t k = 0; k < matching.rows.size(); ++k) {
        const std::size_t g = matching.cols[k] % num_gpus;
        const std::size_t slot = matching.cols[k] / num_gpus;
        if (first_job[g] == rows || slot > first_slot[g]) {
          first_job[g] = matching.rows[k];
          first_slot[g] = slot;
        }
      }
      for (std::size_t g = 0; g < num_gpus; ++g) {
        if (first_job[g] == rows) continue;
        const std::size_t job = waiting[first_job[g]];
        // The original also starts a job on a GPU type it cannot run on when the matching
        // puts it there, and never preempts it (docs/differences.md).
        if (!compat_ && input.throughput(job, gpu_type[g]) <= 0.0) continue;
        output.allocation(job, gpu_type[g]) = 1.0;
      }
    }

    // 5. Remember who runs where; jobs not started are matched again next time.
    running_.clear();
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (output.allocation(i, j) == 1.0) running_[input.jobs[i].id] = input.gpu_types[j];
      }
    }
    return output;
  }

 private:
  double alpha_;
  bool compat_;
  // Jobs holding a GPU: job → GPU type name (the original's _prev_allocation rows summing to 1).
  std::map<JobId, std::string> running_;
};

}  // namespace

std::unique_ptr<Policy> MakeAllox(const PolicyOptions& options) {
  return std::make_unique<Allox>(options);
}

}  // namespace gavel::policy
