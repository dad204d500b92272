#include "gavel/policy/tiresias.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>

#include "gavel/core/parse_number.h"
#include "gavel/policy/queue_discipline.h"

namespace gavel::policy {
namespace {

// Enough for any sensible discretisation; guards against a typo like queues=1000000.
constexpr int kMaxQueues = 64;

class Tiresias2das final : public Policy {
 public:
  Tiresias2das(TiresiasOptions options, bool gittins, bool heterogeneity_aware = false)
      : options_(std::move(options)), gittins_(gittins), aware_(heterogeneity_aware) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    // Phase 0 (2D-Gittins): the jobs that left completed with the service they last had.
    if (gittins_) {
      std::map<JobId, double> last;
      for (const PolicyJob& job : input.jobs) last[job.id] = job.attained_gpu_seconds;
      for (const auto& [id, service] : last_service_) {
        if (!last.contains(id)) completed_.Add(service);
      }
      last_service_ = std::move(last);
    }

    // Phase 1: promote the starved and forget the jobs that left.
    std::map<JobId, double> baseline;
    for (const PolicyJob& job : input.jobs) {
      const auto it = baseline_.find(job.id);
      double base = it == baseline_.end() ? 0.0 : it->second;
      if (options_.starve_seconds > 0.0 && job.running_type < 0 &&
          job.waiting.value() >= options_.starve_seconds) {
        base = job.attained_gpu_seconds;
      }
      if (base > 0.0) baseline[job.id] = base;
    }
    baseline_ = std::move(baseline);

    // Phase 2: order by (queue, −Gittins index (0 under 2DAS), arrival, id).
    std::vector<std::tuple<int, double, double, std::size_t>> order;
    order.reserve(input.num_jobs());
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      const PolicyJob& job = input.jobs[i];
      const auto it = baseline_.find(job.id);
      const double service =
          job.attained_gpu_seconds - (it == baseline_.end() ? 0.0 : it->second);
      const int queue = TiresiasQueueOf(options_, service);
      double index = 0.0;
      if (gittins_) {
        const auto q = static_cast<std::size_t>(queue);
        const double delta = q < options_.thresholds.size()
                                 ? options_.thresholds[q] - service
                                 : std::numeric_limits<double>::infinity();
        index = completed_.GittinsIndex(job.attained_gpu_seconds, delta);
      }
      order.emplace_back(queue, -index, -job.time_since_start.value(), i);
    }
    std::sort(order.begin(), order.end());

    // Phase 3: hand out GPUs in that order, skipping jobs that fit nowhere.
    const Matrix preference = aware_ ? ComparativeAdvantage(input) : Matrix();
    GpuPool pool(input, aware_ ? &preference : nullptr);
    for (const auto& [queue, index, arrival, job] : order) pool.Take(job);
    return pool.Output();
  }

 private:
  TiresiasOptions options_;
  bool gittins_ = false;
  bool aware_ = false;  // types by comparative advantage (tiresias_2das_perf)
  std::map<JobId, double> baseline_;  // attained GPU-seconds at the last promotion (0 = none)
  std::map<JobId, double> last_service_;  // 2D-Gittins: each job's service at the last call
  ServiceDistribution completed_;         // 2D-Gittins: the completed jobs' service
};

Result<double> NonNegative(const std::string& key, const std::string& text) {
  return NumberOption(key, text, 0.0, std::numeric_limits<double>::max());
}

}  // namespace

void ServiceDistribution::Add(double service) {
  const auto at = std::upper_bound(sorted_.begin(), sorted_.end(), service);
  const auto k = static_cast<std::size_t>(at - sorted_.begin());
  sorted_.insert(at, service);
  prefix_.resize(sorted_.size() + 1);
  for (std::size_t i = k; i < sorted_.size(); ++i) prefix_[i + 1] = prefix_[i] + sorted_[i];
}

double ServiceDistribution::GittinsIndex(double attained, double delta) const {
  const auto begin = std::upper_bound(sorted_.begin(), sorted_.end(), attained);
  const auto lo = static_cast<std::size_t>(begin - sorted_.begin());
  const std::size_t alive = sorted_.size() - lo;  // samples with S > a
  if (alive == 0) return 0.0;
  // Samples that finish within the quantum: a < S ≤ a + Δ (all of them when Δ is unbounded).
  const std::size_t hi =
      std::isinf(delta) ? sorted_.size()
                        : static_cast<std::size_t>(
                              std::upper_bound(begin, sorted_.end(), attained + delta) -
                              sorted_.begin());
  const std::size_t finish = hi - lo;
  // n · E[min(S − a, Δ) | S > a]: those that finish spend S − a, the others the whole Δ.
  double spent = prefix_[hi] - prefix_[lo] - double(finish) * attained;
  if (alive > finish) spent += double(alive - finish) * delta;
  return spent > 0.0 ? double(finish) / spent : 0.0;
}

int TiresiasQueueOf(const TiresiasOptions& options, double service) {
  int queue = 0;
  while (static_cast<std::size_t>(queue) < options.thresholds.size() &&
         service >= options.thresholds[static_cast<std::size_t>(queue)]) {
    ++queue;
  }
  return queue;
}

Result<TiresiasOptions> ParseTiresiasOptions(const PolicyOptions& options) {
  TiresiasOptions parsed;
  std::optional<int> queues;
  bool thresholds_given = false;
  for (const auto& [key, text] : options.params) {
    if (key == "queues") {
      queues = ParseInteger<int>(text);
      if (!queues || *queues < 1 || *queues > kMaxQueues) {
        return Status::InvalidArgument("option queues=" + text + ": must be an integer in [1, " +
                                       std::to_string(kMaxQueues) + "]");
      }
    } else if (key == "thresholds") {
      thresholds_given = true;
      parsed.thresholds.clear();
      std::string_view rest = text;
      while (true) {
        const std::size_t semi = rest.find(';');
        const std::string item(rest.substr(0, semi));
        const std::optional<double> value = ParseFiniteDouble(item);
        if (!value || *value <= 0.0 ||
            (!parsed.thresholds.empty() && *value <= parsed.thresholds.back())) {
          return Status::InvalidArgument(
              "option thresholds=" + text + ": \"" + item +
              "\" is not a positive number of GPU-seconds above the one before it");
        }
        parsed.thresholds.push_back(*value);
        if (semi == std::string_view::npos) break;
        rest = rest.substr(semi + 1);
      }
    } else if (key == "starve") {
      GAVEL_ASSIGN_OR_RETURN(parsed.starve_seconds, NonNegative(key, text));
    } else {
      return Status::InvalidArgument("unknown option " + key);
    }
  }
  if (queues && !thresholds_given) {
    if (*queues == 1) {
      parsed.thresholds.clear();
    } else if (*queues != 2) {
      return Status::InvalidArgument("option queues=" + std::to_string(*queues) + " needs " +
                                     std::to_string(*queues - 1) +
                                     " thresholds (thresholds=a;b;...)");
    }
  }
  if (queues && thresholds_given &&
      parsed.thresholds.size() + 1 != static_cast<std::size_t>(*queues)) {
    return Status::InvalidArgument("option thresholds: queues=" + std::to_string(*queues) +
                                   " needs " + std::to_string(*queues - 1) + " thresholds, got " +
                                   std::to_string(parsed.thresholds.size()));
  }
  return parsed;
}

std::unique_ptr<Policy> MakeTiresias2das(const TiresiasOptions& tiresias) {
  return std::make_unique<Tiresias2das>(tiresias, /*gittins=*/false);
}

std::unique_ptr<Policy> MakeTiresias2dasPerf(const TiresiasOptions& tiresias) {
  return std::make_unique<Tiresias2das>(tiresias, /*gittins=*/false,
                                        /*heterogeneity_aware=*/true);
}

Result<std::unique_ptr<Policy>> MakeTiresias2dasPerf(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(TiresiasOptions tiresias, ParseTiresiasOptions(options));
  return MakeTiresias2dasPerf(tiresias);
}

std::unique_ptr<Policy> MakeTiresias2dasPerfWithDefaults(const PolicyOptions& /*options*/) {
  return MakeTiresias2dasPerf(TiresiasOptions{});
}

std::unique_ptr<Policy> MakeTiresiasGittins(const TiresiasOptions& tiresias) {
  return std::make_unique<Tiresias2das>(tiresias, /*gittins=*/true);
}

Result<std::unique_ptr<Policy>> MakeTiresiasGittins(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(TiresiasOptions tiresias, ParseTiresiasOptions(options));
  return MakeTiresiasGittins(tiresias);
}

std::unique_ptr<Policy> MakeTiresiasGittinsWithDefaults(const PolicyOptions& /*options*/) {
  return MakeTiresiasGittins(TiresiasOptions{});
}

Result<std::unique_ptr<Policy>> MakeTiresias2das(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(TiresiasOptions tiresias, ParseTiresiasOptions(options));
  return MakeTiresias2das(tiresias);
}

std::unique_ptr<Policy> MakeTiresias2dasWithDefaults(const PolicyOptions& /*options*/) {
  return MakeTiresias2das(TiresiasOptions{});
}

}  // namespace gavel::policy
