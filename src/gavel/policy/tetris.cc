#include "gavel/policy/tetris.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>


namespace gavel::policy {
namespace {

class Tetris final : public Policy {
 public:
  explicit Tetris(TetrisOptions options) : options_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    std::vector<double> free_gpus(input.gpu_counts);
    double free_cpus = input.host_cpus;
    double free_mem = input.host_mem_gb;
    Matrix allocation(m, n);
    const auto s = [&](std::size_t i) { return double(input.jobs[i].scale_factor); };
    const auto cpus = [&](std::size_t i) { return s(i) * input.jobs[i].cpus_per_gpu; };
    const auto mem = [&](std::size_t i) { return s(i) * input.jobs[i].mem_gb_per_gpu; };
    const auto fits = [&](std::size_t i, std::size_t j) {
      return input.throughput(i, j) > 0.0 && free_gpus[j] >= s(i) &&
             (input.host_cpus <= 0.0 || free_cpus >= cpus(i)) &&
             (input.host_mem_gb <= 0.0 || free_mem >= mem(i));
    };
    const auto take = [&](std::size_t i, std::size_t j) {
      allocation(i, j) = 1.0;
      free_gpus[j] -= s(i);
      free_cpus -= cpus(i);
      free_mem -= mem(i);
    };

    // Phase 1: running jobs keep their type while it fits (no preemption).
    std::vector<std::size_t> waiting;
    for (std::size_t i = 0; i < m; ++i) {
      const int running = input.jobs[i].running_type;
      if (running >= 0 && static_cast<std::size_t>(running) < n &&
          fits(i, static_cast<std::size_t>(running))) {
        take(i, static_cast<std::size_t>(running));
      } else {
        waiting.push_back(i);
      }
    }

    // Phase 2: shortness of each (job, type): 1 − remaining GPU-seconds / the largest.
    Matrix shortness(m, n);
    double longest = 0.0;
    for (std::size_t i : waiting) {
      for (std::size_t j = 0; j < n; ++j) {
        if (input.throughput(i, j) <= 0.0) continue;
        shortness(i, j) = s(i) * input.jobs[i].steps_remaining / input.throughput(i, j);
        longest = std::max(longest, shortness(i, j));
      }
    }
    for (std::size_t i : waiting) {
      for (std::size_t j = 0; j < n; ++j) {
        shortness(i, j) = longest > 0.0 ? 1.0 - shortness(i, j) / longest : 0.0;
      }
    }

    // Phase 3: start the best-scoring fitting pair until none fits.
    const auto alignment = [&](std::size_t i, std::size_t j) {
      double a = (s(i) / input.gpu_counts[j]) * (free_gpus[j] / input.gpu_counts[j]);
      if (input.host_cpus > 0.0) a += (cpus(i) / input.host_cpus) * (free_cpus / input.host_cpus);
      if (input.host_mem_gb > 0.0) {
        a += (mem(i) / input.host_mem_gb) * (free_mem / input.host_mem_gb);
      }
      return a;
    };
    // ε from the candidates of the first pick.
    double sum_alignment = 0.0;
    double sum_shortness = 0.0;
    for (std::size_t i : waiting) {
      for (std::size_t j = 0; j < n; ++j) {
        if (!fits(i, j)) continue;
        sum_alignment += alignment(i, j);
        sum_shortness += shortness(i, j);
      }
    }
    const double epsilon =
        sum_shortness > 0.0 ? options_.srtf * sum_alignment / sum_shortness : 0.0;
    const auto score = [&](std::size_t i, std::size_t j) {
      return alignment(i, j) + epsilon * shortness(i, j);
    };
    // Jobs with the same demand (scale factor, CPUs and memory per GPU) have the same alignment
    // on a type, so the best of them there is the one with the largest shortness: one list per
    // (demand profile, type), sorted by (ε·shortness desc, id), and each pick compares the heads
    // of the lists (a few dozen profiles) instead of every waiting job. Ties go to the earlier
    // job, then the earlier type, as a full scan's would.
    std::map<std::tuple<int, double, double>, std::size_t> profile_of;
    std::vector<std::vector<std::size_t>> lists;  // [profile * n + type]
    for (std::size_t i : waiting) {
      const PolicyJob& job = input.jobs[i];
      const auto [it, added] = profile_of.emplace(
          std::make_tuple(job.scale_factor, job.cpus_per_gpu, job.mem_gb_per_gpu),
          profile_of.size());
      if (added) lists.resize(lists.size() + n);
      for (std::size_t j = 0; j < n; ++j) {
        if (input.throughput(i, j) > 0.0) lists[it->second * n + j].push_back(i);
      }
    }
    for (std::size_t l = 0; l < lists.size(); ++l) {
      const std::size_t j = l % n;
      std::stable_sort(lists[l].begin(), lists[l].end(), [&](std::size_t a, std::size_t b) {
        return epsilon * shortness(a, j) > epsilon * shortness(b, j);
      });
    }
    std::vector<std::size_t> head(lists.size(), 0);
    std::vector<bool> started(m, false);
    while (true) {
      std::optional<std::tuple<double, long, long>> best;
      for (std::size_t l = 0; l < lists.size(); ++l) {
        const std::size_t j = l % n;
        while (head[l] < lists[l].size() && started[lists[l][head[l]]]) ++head[l];
        if (head[l] == lists[l].size()) continue;
        const std::size_t i = lists[l][head[l]];
        if (!fits(i, j)) {  // nor will any job of this profile here: capacity only shrinks
          head[l] = lists[l].size();
          continue;
        }
        const std::tuple<double, long, long> key{score(i, j), -long(i), -long(j)};
        if (!best || key > *best) best = key;
      }
      if (!best) break;
      const auto i = static_cast<std::size_t>(-std::get<1>(*best));
      take(i, static_cast<std::size_t>(-std::get<2>(*best)));
      started[i] = true;
    }
    PolicyOutput output;
    output.allocation = std::move(allocation);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    return output;
  }

 private:
  TetrisOptions options_;
};

}  // namespace

Result<TetrisOptions> ParseTetrisOptions(const PolicyOptions& options) {
  TetrisOptions parsed;
  for (const auto& [key, text] : options.params) {
    if (key != "srtf") return Status::InvalidArgument("unknown option " + key);
    GAVEL_ASSIGN_OR_RETURN(parsed.srtf,
                           NumberOption(key, text, 0.0, std::numeric_limits<double>::max()));
  }
  return parsed;
}

std::unique_ptr<Policy> MakeTetris(const TetrisOptions& tetris) {
  return std::make_unique<Tetris>(tetris);
}

Result<std::unique_ptr<Policy>> MakeTetris(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(TetrisOptions tetris, ParseTetrisOptions(options));
  return MakeTetris(tetris);
}

std::unique_ptr<Policy> MakeTetrisWithDefaults(const PolicyOptions& /*options*/) {
  return MakeTetris(TetrisOptions{});
}

}  // namespace gavel::policy
