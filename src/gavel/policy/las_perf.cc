#include "gavel/policy/las_perf.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/policy/queue_discipline.h"

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

    if (options_.calm > 0.0) {
      std::optional<PolicyOutput> calm = FirstComeOnFastest(input, options_.calm_speed);
      if (!calm) {
        contended_at_ = input.now_seconds;
      } else if (!contended_at_ || input.now_seconds - *contended_at_ >= options_.calm) {
        return *std::move(calm);
      }
    }

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
    std::vector<std::size_t> skipped;
    const auto place = [&](std::size_t i) {
      const PolicyJob& job = input.jobs[i];
      const int running =
          job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < n
              ? job.running_type
              : -1;
      const int chosen = Choose(input, i, running, free, held);
      if (chosen < 0) return false;
      free[static_cast<std::size_t>(chosen)] -= job.scale_factor;
      output.allocation(i, static_cast<std::size_t>(chosen)) = 1.0;
      placed.push_back({i, chosen, running});
      return true;
    };
    for (const auto& [queue, age, i] : order) {
      const PolicyJob& job = input.jobs[i];
      if (job.running_type >= 0 && static_cast<std::size_t>(job.running_type) < n) {
        held[static_cast<std::size_t>(job.running_type)] -= job.scale_factor;
      }
      if (!place(i)) skipped.push_back(i);
    }
    // A trade may leave a type with room a skipped job fits in (a gang left GPUs its
    // smaller partners did not fill): offer them again, in order.
    if (options_.trade > 0.0 && Trade(input, placed, free, output.allocation)) {
      for (std::size_t i : skipped) place(i);
    }
    return output;
  }

 private:
  // Oldest first, each job on the type where it runs fastest among those with room for its
  // gang, afresh every round (OASiS's order for jobs without a utility, fifo_perf's speed);
  // nullopt when some job finds no room, or only room where it runs below `share` of its
  // fastest speed: the round is contended.
  static std::optional<PolicyOutput> FirstComeOnFastest(const PolicyInput& input,
                                                        double share) {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    double demand = 0.0;  // more GPUs wanted than the cluster has: contended, no sort needed
    for (const PolicyJob& job : input.jobs) demand += job.scale_factor;
    double capacity = 0.0;
    for (double count : input.gpu_counts) capacity += count;
    if (demand > capacity) return std::nullopt;
    std::vector<int> free(n, 0);
    for (std::size_t t = 0; t < n; ++t) free[t] = static_cast<int>(input.gpu_counts[t]);
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    for (std::size_t i : ArrivalOrder(input)) {
      const int need = input.jobs[i].scale_factor;
      int chosen = -1;
      double best = 0.0;
      double top = 0.0;  // its speed on its fastest type, room or not
      for (std::size_t t = 0; t < n; ++t) top = std::max(top, input.throughput(i, t));
      for (std::size_t t = 0; t < n; ++t) {
        // Ties within a relative 1e-9 go to the first type, as oasis's placement.
        if (free[t] >= need && input.throughput(i, t) > best * (1.0 + 1e-9)) {
          best = input.throughput(i, t);
          chosen = static_cast<int>(t);
        }
      }
      if (chosen < 0 || best < share * top) return std::nullopt;
      free[static_cast<std::size_t>(chosen)] -= need;
      output.allocation(i, static_cast<std::size_t>(chosen)) = 1.0;
    }
    return output;
  }

  struct Placed {
    std::size_t job;
    int type;
    int running;  // the type it ran on last round, −1 = none
  };

  // A placed job A takes a faster type b from jobs placed there (the ones that lose least
  // time per GPU first, until A's gang fits; they move to A's type, where they must fit) when
  // the run time this saves, by each job's expected remaining work, exceeds `trade` seconds
  // per job it restarts (one at least). Expected remaining work, in seconds on the job's
  // fastest type: what it has done, its wall-clock service times its relative speed where it
  // ran last (the heavy-tailed job sizes of deep learning clusters: the longer a job has run,
  // the longer it is likely to run), at least `min_remaining`. Repeated until no job would:
  // every trade lowers the sum of the placed jobs' expected remaining run times by more than
  // `trade`, so it ends. Moves into free GPUs are the upgrade rule's, not trades.
  // True when any job traded.
  bool Trade(const PolicyInput& input, std::vector<Placed>& placed, std::vector<int>& free,
             Matrix& allocation) const {
    std::vector<double> fastest(input.num_jobs(), 0.0);
    for (const Placed& p : placed) {
      for (std::size_t u = 0; u < input.num_types(); ++u) {
        fastest[p.job] = std::max(fastest[p.job], input.throughput(p.job, u));
      }
    }
    const auto relative = [&](std::size_t i, int t) {
      return input.throughput(i, static_cast<std::size_t>(t)) / fastest[i];
    };
    std::vector<double> remaining(input.num_jobs(), 0.0);
    for (const Placed& p : placed) {
      const PolicyJob& job = input.jobs[p.job];
      const double run = job.attained_gpu_seconds / job.scale_factor;
      remaining[p.job] = std::max(options_.min_remaining,
                                  run * (p.running >= 0 ? relative(p.job, p.running) : 1.0));
    }
    const auto time_on = [&](std::size_t i, int t) { return remaining[i] / relative(i, t); };
    const auto size = [&](const Placed& p) { return input.jobs[p.job].scale_factor; };
    const int types = static_cast<int>(input.num_types());
    bool any = false;
    for (bool traded = true; traded;) {
      traded = false;
      for (std::size_t x = 0; x < placed.size(); ++x) {
        Placed& a = placed[x];
        for (int b = 0; b < types; ++b) {
          const auto bt = static_cast<std::size_t>(b);
          const auto at = static_cast<std::size_t>(a.type);
          if (b == a.type || relative(a.job, b) <= relative(a.job, a.type)) continue;
          const int need = size(a) - free[bt];
          if (need <= 0) continue;
          std::vector<std::pair<double, std::size_t>> on_b;  // (time lost per GPU, index)
          for (std::size_t y = 0; y < placed.size(); ++y) {
            const Placed& c = placed[y];
            if (c.type != b || relative(c.job, a.type) <= 0.0) continue;
            on_b.emplace_back((time_on(c.job, a.type) - time_on(c.job, b)) / size(c), y);
          }
          std::sort(on_b.begin(), on_b.end());
          int moved = 0;
          double saved = time_on(a.job, a.type) - time_on(a.job, b);
          int restarts = a.type == a.running ? 1 : 0;
          std::vector<std::size_t> group;
          for (const auto& [loss, y] : on_b) {
            if (moved >= need) break;
            group.push_back(y);
            moved += size(placed[y]);
            saved -= loss * size(placed[y]);
            restarts += placed[y].type == placed[y].running ? 1 : 0;
          }
          if (moved < need || moved > free[at] + size(a) ||
              saved <= options_.trade * std::max(restarts, 1)) {
            continue;
          }
          free[bt] += moved - size(a);
          free[at] += size(a) - moved;
          for (std::size_t y : group) {
            allocation(placed[y].job, bt) = 0.0;
            allocation(placed[y].job, at) = 1.0;
            placed[y].type = a.type;
          }
          allocation(a.job, at) = 0.0;
          allocation(a.job, bt) = 1.0;
          a.type = b;
          traded = any = true;
          break;
        }
      }
    }
    return any;
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
  std::optional<double> contended_at_;  // now_seconds of the last contended round
};

}  // namespace

Result<LasPerfOptions> ParseLasPerfOptions(const PolicyOptions& options) {
  constexpr double kLargest = std::numeric_limits<double>::max();
  const auto non_negative = [&](const std::string& key, const std::string& text) {
    return NumberOption(key, text, 0.0, kLargest);
  };
  LasPerfOptions parsed;
  PolicyOptions queue_options;
  bool starve_given = false;
  for (const auto& [key, text] : options.params) {
    if (key == "upgrade") {
      GAVEL_ASSIGN_OR_RETURN(parsed.upgrade, non_negative(key, text));
      if (parsed.upgrade > 0.0 && parsed.upgrade < 1.0) {
        return Status::InvalidArgument("option upgrade=" + text +
                                       ": must be 0 (never move) or at least 1");
      }
    } else if (key == "trade") {
      GAVEL_ASSIGN_OR_RETURN(parsed.trade, non_negative(key, text));
    } else if (key == "min_remaining") {
      GAVEL_ASSIGN_OR_RETURN(parsed.min_remaining, NumberOption(key, text, 1.0, kLargest));
    } else if (key == "slow") {
      GAVEL_ASSIGN_OR_RETURN(parsed.slow, NumberOption(key, text, 0.0, 1.0));
    } else if (key == "calm_speed") {
      GAVEL_ASSIGN_OR_RETURN(parsed.calm_speed, NumberOption(key, text, 0.0, 1.0));
    } else if (key == "calm") {
      GAVEL_ASSIGN_OR_RETURN(parsed.calm, non_negative(key, text));
    } else if (key == "patience") {
      GAVEL_ASSIGN_OR_RETURN(parsed.patience, non_negative(key, text));
    } else {
      starve_given = starve_given || key == "starve";
      queue_options.params.emplace_back(key, text);
    }
  }
  GAVEL_ASSIGN_OR_RETURN(TiresiasOptions queues, ParseTiresiasOptions(queue_options));
  if (!starve_given) queues.starve_seconds = parsed.queues.starve_seconds;
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
