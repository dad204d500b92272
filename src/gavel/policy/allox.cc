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

    // 2. The free GPUs.
    std::size_t num_gpus = 0;
    for (const int free : free_gpus) num_gpus += static_cast<std::size_t>(std::max(free, 0));

    // 3. Oldest first (stable: equal ages keep id order), truncated to max(⌊alpha·w⌋, gpus).
    std::stable_sort(waiting.begin(), waiting.end(), [&](std::size_t a, std::size_t b) {
      return input.jobs[a].time_since_start > input.jobs[b].time_since_start;
    });
    // Python's int() truncates toward zero.
    const double alpha_share = std::max(0.0, alpha_ * static_cast<double>(waiting.size()));
    const auto considered =
        std::min(waiting.size(), std::max(static_cast<std::size_t>(alpha_share), num_gpus));
    waiting.resize(considered);

    // 4. A min-cost matching of jobs to (GPU, position in its queue) slots minimises the sum
    // of completion times (AlloX, EuroSys 2020); the job first in line on each GPU gets it.
    if (!waiting.empty() && num_gpus > 0) {
      GAVEL_ASSIGN_OR_RETURN(const std::vector<Start> starts,
                             compat_ ? StartsByDenseMatching(input, waiting, free_gpus)
                                     : StartsByQueueMatching(input, waiting, free_gpus));
      for (const Start& start : starts) {
        // The original also starts a job on a GPU type it cannot run on when the matching
        // puts it there, and never preempts it (docs/differences.md).
        if (!compat_ && input.throughput(start.job, start.type) <= 0.0) continue;
        output.allocation(start.job, start.type) = 1.0;
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
  // A job the matching puts first in line on a GPU of `type`.
  struct Start {
    std::size_t job = 0;
    std::size_t type = 0;
  };

  static double Processing(const PolicyInput& input, std::size_t job, std::size_t type) {
    double throughput = input.throughput(job, type);
    if (throughput == 0.0) throughput = kZeroThroughput;
    return input.jobs[job].steps_remaining / throughput;
  }

  // The original's matching (--compat gavel): one column per free GPU g and position k, slot
  // k·G + g meaning "k-th from last on GPU g": a job there delays k others behind it and
  // costs (k + 1)·(its processing time on g) + its wait so far; solved as SciPy does, so that
  // equal-cost optima come out as the original's. Dense: rows × rows·G cells.
  static Result<std::vector<Start>> StartsByDenseMatching(const PolicyInput& input,
                                                          const std::vector<std::size_t>& waiting,
                                                          const std::vector<int>& free_gpus) {
    // The free GPUs, one column each, by type in name order.
    std::vector<std::size_t> gpu_type;
    for (std::size_t j = 0; j < free_gpus.size(); ++j) {
      for (int g = 0; g < free_gpus[j]; ++g) gpu_type.push_back(j);
    }
    const std::size_t rows = waiting.size();
    const std::size_t num_gpus = gpu_type.size();
    Matrix cost(rows, rows * num_gpus);
    for (std::size_t r = 0; r < rows; ++r) {
      const PolicyJob& job = input.jobs[waiting[r]];
      for (std::size_t g = 0; g < num_gpus; ++g) {
        const double processing = Processing(input, waiting[r], gpu_type[g]);
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
    std::vector<Start> starts;
    for (std::size_t g = 0; g < num_gpus; ++g) {
      if (first_job[g] != rows) starts.push_back(Start{waiting[first_job[g]], gpu_type[g]});
    }
    return starts;
  }

  // The same optimum with the identical GPUs of a type grouped (SolveQueueAssignment): a
  // sparse transportation problem instead of the dense matrix, so 2,048 jobs take
  // milliseconds, not hours. The wait so far is a per-job constant (every job is placed), so
  // it changes no optimum and is left out. On each type the jobs at the highest positions
  // start, one per GPU: an optimum fills a type's positions from 0 up (a job moved down to a
  // free lower position costs no more), so they are the first jobs of its GPUs' queues.
  static Result<std::vector<Start>> StartsByQueueMatching(const PolicyInput& input,
                                                          const std::vector<std::size_t>& waiting,
                                                          const std::vector<int>& free_gpus) {
    const std::size_t n = input.num_types();
    Matrix processing(waiting.size(), n);
    for (std::size_t r = 0; r < waiting.size(); ++r) {
      for (std::size_t j = 0; j < n; ++j) processing(r, j) = Processing(input, waiting[r], j);
    }
    std::vector<std::size_t> gpus(n);
    for (std::size_t j = 0; j < n; ++j) gpus[j] = static_cast<std::size_t>(std::max(0, free_gpus[j]));
    GAVEL_ASSIGN_OR_RETURN(const std::vector<QueuePlacement> placed,
                           SolveQueueAssignment(processing, gpus));
    std::vector<std::vector<std::size_t>> by_type(n);  // rows, highest position first
    for (std::size_t r = 0; r < placed.size(); ++r) by_type[placed[r].type].push_back(r);
    std::vector<Start> starts;
    for (std::size_t j = 0; j < n; ++j) {
      std::stable_sort(by_type[j].begin(), by_type[j].end(), [&](std::size_t a, std::size_t b) {
        return placed[a].position > placed[b].position;
      });
      for (std::size_t q = 0; q < std::min(gpus[j], by_type[j].size()); ++q) {
        starts.push_back(Start{waiting[by_type[j][q]], j});
      }
    }
    return starts;
  }

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
