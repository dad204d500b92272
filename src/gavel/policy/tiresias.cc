#include "gavel/policy/tiresias.h"

#include <algorithm>
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
  explicit Tiresias2das(TiresiasOptions options) : options_(std::move(options)) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
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

    // Phase 2: order by (queue, arrival, id).
    std::vector<std::tuple<int, double, std::size_t>> order;
    order.reserve(input.num_jobs());
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      const PolicyJob& job = input.jobs[i];
      const auto it = baseline_.find(job.id);
      const double service =
          job.attained_gpu_seconds - (it == baseline_.end() ? 0.0 : it->second);
      order.emplace_back(TiresiasQueueOf(options_, service), -job.time_since_start.value(), i);
    }
    std::sort(order.begin(), order.end());

    // Phase 3: hand out GPUs in that order, skipping jobs that fit nowhere.
    GpuPool pool(input);
    for (const auto& [queue, arrival, job] : order) pool.Take(job);
    return pool.Output();
  }

 private:
  TiresiasOptions options_;
  std::map<JobId, double> baseline_;  // attained GPU-seconds at the last promotion (0 = none)
};

Result<double> NonNegative(const std::string& key, const std::string& text) {
  const std::optional<double> value = ParseFiniteDouble(text);
  if (!value || *value < 0.0) {
    return Status::InvalidArgument("option " + key + "=" + text +
                                   ": must be a non-negative number");
  }
  return *value;
}

}  // namespace

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
  return std::make_unique<Tiresias2das>(tiresias);
}

Result<std::unique_ptr<Policy>> MakeTiresias2das(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(TiresiasOptions tiresias, ParseTiresiasOptions(options));
  return MakeTiresias2das(tiresias);
}

std::unique_ptr<Policy> MakeTiresias2dasWithDefaults(const PolicyOptions& /*options*/) {
  return MakeTiresias2das(TiresiasOptions{});
}

}  // namespace gavel::policy
