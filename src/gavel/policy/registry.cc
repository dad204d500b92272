#include "gavel/policy/registry.h"

#include <charconv>
#include <cmath>
#include <string>

#include "gavel/policy/allox.h"
#include "gavel/policy/fifo.h"
#include "gavel/policy/finish_time_fairness.h"
#include "gavel/policy/gandiva.h"
#include "gavel/policy/isolated.h"
#include "gavel/policy/max_min_fairness.h"
#include "gavel/policy/max_sum_throughput.h"
#include "gavel/policy/min_total_duration.h"
#include "gavel/policy/proportional.h"
#include "gavel/policy/shortest_job_first.h"
#include "gavel/policy/water_filling.h"

namespace gavel::policy {
namespace {

template <Variant V>
std::unique_ptr<Policy> MaxMin(const PolicyOptions& o) { return MakeMaxMinFairness(V, o); }
template <Variant V>
std::unique_ptr<Policy> WaterFilling(const PolicyOptions& o) {
  return MakeMaxMinFairnessWaterFilling(V, o);
}
template <Variant V>
std::unique_ptr<Policy> Ftf(const PolicyOptions& o) { return MakeFinishTimeFairness(V, o); }
template <Variant V>
std::unique_ptr<Policy> Makespan(const PolicyOptions& o) { return MakeMinTotalDuration(V, o); }
template <Variant V>
std::unique_ptr<Policy> Fifo(const PolicyOptions& o) { return MakeFifo(V, o); }
template <Variant V>
std::unique_ptr<Policy> Sjf(const PolicyOptions& o) { return MakeShortestJobFirst(V, o); }
template <bool PerCost, bool Slos, bool Packed>
std::unique_ptr<Policy> SumThroughput(const PolicyOptions& o) {
  return MakeMaxSumThroughput(MaxSumThroughputOptions{PerCost, Slos, Packed}, o);
}

constexpr Variant kAgn = Variant::kAgnostic;
constexpr Variant kPerf = Variant::kPerf;
constexpr Variant kPack = Variant::kPacked;

// name, description, packing, shuffles type order, skips zero priority, needs steps,
// needs prices, factory.
const PolicyInfo kPolicies[] = {
    {"allox", "AlloX: min-cost matching of waiting jobs to GPUs by estimated completion time "
              "(single-GPU jobs; allox_alpha=<a> sets alpha)",
     false, false, false, true, false, &MakeAllox},
    {"fifo", "First in, first out; heterogeneity-agnostic type choice", false, true, true, false,
     false, &Fifo<kAgn>},
    {"fifo_packed", "FIFO on each job's fastest free type, then space sharing of queued jobs",
     true, false, true, false, false, &Fifo<kPack>},
    {"fifo_perf", "FIFO, each job on its fastest free GPU type", false, false, true, false, false,
     &Fifo<kPerf>},
    {"finish_time_fairness", "Finish-time fairness (Themis), heterogeneity-agnostic", false, true,
     false, true, false, &Ftf<kAgn>},
    {"finish_time_fairness_packed", "Finish-time fairness with space sharing", true, false, false,
     true, false, &Ftf<kPack>},
    {"finish_time_fairness_perf", "Finish-time fairness (Themis): minimise the largest ratio of "
                                  "finish time to finish time on an isolated 1/n share",
     false, false, false, true, false, &Ftf<kPerf>},
    {"gandiva", "Gandiva: equal time shares with random space-sharing pairs", true, false, false,
     false, false, &MakeGandiva},
    {"isolated", "Each job gets an equal 1/n share of every GPU type", false, true, false, false,
     false, &MakeIsolated},
    {"max_min_fairness", "Least attained service: max-min fair time shares, "
                         "heterogeneity-agnostic",
     false, true, false, false, false, &MaxMin<kAgn>},
    {"max_min_fairness_packed", "Max-min fairness over normalised throughput with space sharing",
     true, false, false, false, false, &MaxMin<kPack>},
    {"max_min_fairness_perf", "Max-min fairness over throughput normalised by an equal share "
                              "(heterogeneity-aware LAS)",
     false, false, false, false, false, &MaxMin<kPerf>},
    {"max_min_fairness_water_filling", "Hierarchical max-min fairness by water filling "
                                       "(entity weights), heterogeneity-agnostic",
     false, true, false, false, false, &WaterFilling<kAgn>},
    {"max_min_fairness_water_filling_packed", "Hierarchical max-min fairness by water filling "
                                              "with space sharing",
     true, false, false, false, false, &WaterFilling<kPack>},
    {"max_min_fairness_water_filling_perf", "Hierarchical max-min fairness by water filling over "
                                            "normalised throughput",
     false, false, false, false, false, &WaterFilling<kPerf>},
    {"max_sum_throughput_normalized_by_cost_packed_SLOs", "Maximise throughput per dollar with "
                                                          "space sharing, meeting SLOs",
     true, false, false, true, true, &SumThroughput<true, true, true>},
    {"max_sum_throughput_normalized_by_cost_perf", "Maximise total throughput per dollar", false,
     false, false, false, true, &SumThroughput<true, false, false>},
    {"max_sum_throughput_normalized_by_cost_perf_SLOs", "Maximise throughput per dollar while "
                                                        "meeting each job's SLO",
     false, false, false, true, true, &SumThroughput<true, true, false>},
    {"max_sum_throughput_perf", "Maximise the sum of throughputs (steps/s) over all jobs", false,
     false, false, false, false, &SumThroughput<false, false, false>},
    {"min_total_duration", "Minimise makespan, heterogeneity-agnostic", false, true, false, true,
     false, &Makespan<kAgn>},
    {"min_total_duration_packed", "Minimise makespan with space sharing", true, false, false, true,
     false, &Makespan<kPack>},
    {"min_total_duration_perf", "Minimise the time until every job finishes (makespan)", false,
     false, false, true, false, &Makespan<kPerf>},
    {"proportional", "Each job gets time on each type in proportion to the type's GPU count",
     false, false, false, false, false, &MakeProportional},
    {"shortest_job_first", "Shortest remaining time first (preemptive), heterogeneity-agnostic",
     false, true, true, true, false, &Sjf<kAgn>},
    {"shortest_job_first_perf", "Shortest remaining time first on each job's fastest GPU types",
     false, false, true, true, false, &Sjf<kPerf>},
};

constexpr std::string_view kAlloxAlphaPrefix = "allox_alpha=";

}  // namespace

std::span<const PolicyInfo> AllPolicies() { return kPolicies; }

Result<const PolicyInfo*> FindPolicy(std::string_view name) {
  if (name.starts_with(kAlloxAlphaPrefix)) name = "allox";
  for (const PolicyInfo& info : kPolicies) {
    if (info.name == name) return &info;
  }
  return Status::NotFound("unknown policy \"" + std::string(name) +
                          "\" (`gavel policies` lists them)");
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, PolicyOptions options) {
  if (name.starts_with(kAlloxAlphaPrefix)) {
    const std::string_view text = name.substr(kAlloxAlphaPrefix.size());
    double alpha = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), alpha);
    if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(alpha) ||
        alpha <= 0.0) {
      return Status::InvalidArgument("policy \"" + std::string(name) +
                                     "\": alpha must be a positive number");
    }
    options.allox_alpha = alpha;
  }
  GAVEL_ASSIGN_OR_RETURN(const PolicyInfo* info, FindPolicy(name));
  return info->make(options);
}

}  // namespace gavel::policy
