#include "gavel/policy/las_perf.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gavel/core/matrix.h"

namespace gavel::policy {
namespace {

class LasPerf final : public Policy {
 public:
  explicit LasPerf(LasPerfOptions options) : options_(std::move(options)) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();

    // Promote the starved (their service counts afresh) and forget the jobs that left.
    std::map<JobId, double> baseline;
    for (const PolicyJob& job : input.jobs) {
      const auto it = baseline_.find(job.id);
      double base = it == baseline_.end() ? 0.0 : it->second;
      if (options_.queues.starve_seconds > 0.0 && job.running_type < 0 &&
          job.waiting.value() >= options_.queues.starve_seconds) {
        base = job.attained_gpu_seconds;
      }
      if (base > 0.0) baseline[job.id] = base;
    }
    baseline_ = std::move(baseline);

    std::vector<std::tuple<int, double, std::size_t>> order;  // (queue, −age, index)
    order.reserve(m);
    for (std::size_t i = 0; i < m; ++i) {
      const PolicyJob& job = input.jobs[i];
      const auto it = baseline_.find(job.id);
      const double service =
          job.attained_gpu_seconds - (it == baseline_.end() ? 0.0 : it->second);
      order.emplace_back(TiresiasQueueOf(options_.queues, service),
                         -job.time_since_start.value(), i);
    }
    std::sort(order.begin(), order.end());

    std::vector<int> free(n, 0);
    std::vector<int> held(n, 0);  // GPUs of running jobs not placed yet
    for (std::size_t t = 0; t < n; ++t) free[t] = static_cast<int>(input.gpu_counts[t]);
    for (const PolicyJob& job : input.jobs) {
      if (job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < n) {
        held[static_cast<std::size_t>(job.running_type)] += job.scale_factor;
      }
    }

    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    std::vector<Placed> placed;
    for (const auto& [queue, age, i] : order) {
      const PolicyJob& job = input.jobs[i];
      const int need = job.scale_factor;
      const int running =
          job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < n
              ? job.running_type
              : -1;
      if (running >= 0) held[static_cast<std::size_t>(running)] -= need;
      const int chosen = Choose(input, i, running, free, held);
      if (chosen < 0) continue;
      free[static_cast<std::size_t>(chosen)] -= need;
      output.allocation(i, static_cast<std::size_t>(chosen)) = 1.0;
      placed.push_back({i, chosen, running});
    }
    if (options_.swap > 0.0) Swap(input, placed, output.allocation);
    return output;
  }

 private:
  struct Placed {
    std::size_t job;
    int type;
    int running;  // the type it ran on last round, −1 = none
  };

  // Two placed jobs of the same size trade types where that raises the sum of their
  // throughputs, each relative to its fastest type, by more than `swap` per job it restarts
  // (one at least), until no two would. Every trade raises the sum over the placed jobs by
  // more than `swap` and the sum is at most their number, so this ends; O(placed²) per pass.
  void Swap(const PolicyInput& input, std::vector<Placed>& placed, Matrix& allocation) const {
    std::vector<double> fastest(input.num_jobs(), 0.0);
    for (const Placed& p : placed) {
      for (std::size_t u = 0; u < input.num_types(); ++u) {
        fastest[p.job] = std::max(fastest[p.job], input.throughput(p.job, u));
      }
    }
    const auto relative = [&](std::size_t i, int t) {
      return input.throughput(i, static_cast<std::size_t>(t)) / fastest[i];
    };
    for (bool traded = true; traded;) {
      traded = false;
      for (Placed& a : placed) {
        for (Placed& b : placed) {
          if (a.type == b.type ||
              input.jobs[a.job].scale_factor != input.jobs[b.job].scale_factor) {
            continue;
          }
          const double gain = relative(a.job, b.type) + relative(b.job, a.type) -
                              relative(a.job, a.type) - relative(b.job, b.type);
          const int restarts =
              std::max(int{a.type == a.running} + int{b.type == b.running}, 1);
          if (relative(a.job, b.type) <= 0.0 || relative(b.job, a.type) <= 0.0 ||
              gain <= options_.swap * restarts) {
            continue;
          }
          allocation(a.job, static_cast<std::size_t>(a.type)) = 0.0;
          allocation(b.job, static_cast<std::size_t>(b.type)) = 0.0;
          std::swap(a.type, b.type);
          allocation(a.job, static_cast<std::size_t>(a.type)) = 1.0;
          allocation(b.job, static_cast<std::size_t>(b.type)) = 1.0;
          traded = true;
        }
      }
    }
  }

  // The type job i takes (the rules in las_perf.h), −1 when none fits.
  int Choose(const PolicyInput& input, std::size_t i, int running, const std::vector<int>& free,
             const std::vector<int>& held) const {
    const int need = input.jobs[i].scale_factor;
    const auto speed = [&](int t) { return input.throughput(i, static_cast<std::size_t>(t)); };
    const auto room = [&](int t) {
      return free[static_cast<std::size_t>(t)] - held[static_cast<std::size_t>(t)];
    };
    const auto fits = [&](int t) {
      return free[static_cast<std::size_t>(t)] >= need && speed(t) > 0.0;
    };
    const int types = static_cast<int>(free.size());
    if (running >= 0 && fits(running)) {
      int best = running;
      if (options_.upgrade >= 1.0) {
        for (int t = 0; t < types; ++t) {
          if (fits(t) && room(t) >= need && speed(t) >= options_.upgrade * speed(running) &&
              speed(t) > speed(best)) {
            best = t;
          }
        }
      }
      return best;
    }
    const auto key = [&](int t) { return std::tuple(room(t) >= need, speed(t), room(t)); };
    double fastest = 0.0;
    for (int t = 0; t < types; ++t) fastest = std::max(fastest, speed(t));
    const bool patient = input.jobs[i].waiting.value() < options_.patience;
    int chosen = -1;
    for (int t = 0; t < types; ++t) {
      if (patient && speed(t) < options_.slow * fastest) continue;
      if (fits(t) && (chosen < 0 || key(t) > key(chosen))) chosen = t;
    }
    return chosen;
  }

  LasPerfOptions options_;
  std::map<JobId, double> baseline_;  // attained GPU-seconds at the last promotion (0 = none)
};

}  // namespace

Result<LasPerfOptions> ParseLasPerfOptions(const PolicyOptions& options) {
  LasPerfOptions parsed;
  PolicyOptions queue_options;
  for (const auto& [key, text] : options.params) {
    if (key == "upgrade") {
      GAVEL_ASSIGN_OR_RETURN(parsed.upgrade,
                             NumberOption(key, text, 0.0, std::numeric_limits<double>::max()));
      if (parsed.upgrade > 0.0 && parsed.upgrade < 1.0) {
        return Status::InvalidArgument("option upgrade=" + text +
                                       ": must be 0 (never move) or at least 1");
      }
    } else if (key == "slow") {
      GAVEL_ASSIGN_OR_RETURN(parsed.slow, NumberOption(key, text, 0.0, 1.0));
    } else if (key == "patience") {
      GAVEL_ASSIGN_OR_RETURN(parsed.patience,
                             NumberOption(key, text, 0.0, std::numeric_limits<double>::max()));
    } else if (key == "swap") {
      GAVEL_ASSIGN_OR_RETURN(parsed.swap, NumberOption(key, text, 0.0, 2.0));
    } else {
      queue_options.params.emplace_back(key, text);
    }
  }
  GAVEL_ASSIGN_OR_RETURN(TiresiasOptions queues, ParseTiresiasOptions(queue_options));
  parsed.queues = std::move(queues);
  return parsed;
}

std::unique_ptr<Policy> MakeLasPerf(const LasPerfOptions& options) {
  return std::make_unique<LasPerf>(options);
}

Result<std::unique_ptr<Policy>> MakeLasPerf(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(LasPerfOptions parsed, ParseLasPerfOptions(options));
  return MakeLasPerf(parsed);
}

std::unique_ptr<Policy> MakeLasPerfWithDefaults(const PolicyOptions& /*options*/) {
  return MakeLasPerf(LasPerfOptions{});
}

}  // namespace gavel::policy
