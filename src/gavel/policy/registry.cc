#include "gavel/policy/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/check.h"
#include "gavel/core/parse_number.h"
#include "gavel/policy/allox.h"
#include "gavel/policy/drf.h"
#include "gavel/policy/fifo.h"
#include "gavel/policy/finish_time_fairness.h"
#include "gavel/policy/gandiva.h"
#include "gavel/policy/gandiva_introspective.h"
#include "gavel/policy/isolated.h"
#include "gavel/policy/max_min_fairness.h"
#include "gavel/policy/max_sum_throughput.h"
#include "gavel/policy/min_total_duration.h"
#include "gavel/policy/oasis.h"
#include "gavel/policy/proportional.h"
#include "gavel/policy/shortest_job_first.h"
#include "gavel/policy/tetris.h"
#include "gavel/policy/themis.h"
#include "gavel/policy/las_perf.h"
#include "gavel/policy/tiresias.h"
#include "gavel/policy/water_filling.h"
#include "gavel/policy/yarn_capacity.h"

namespace gavel::policy {
namespace {

template <Variant V>
std::unique_ptr<Policy> MaxMin(const PolicyOptions& o) {
  if (V == Variant::kPacked) return MakeMaxMinFairness(V, o);
  Result<std::unique_ptr<Policy>> policy = MakeMaxMinFairnessByName(V, o);
  GAVEL_CHECK_MSG(policy.ok(), policy.status().ToString().c_str());  // the default parses
  return std::move(*policy);
}
template <Variant V>
Result<std::unique_ptr<Policy>> MaxMinWithParams(const PolicyOptions& o) {
  return MakeMaxMinFairnessByName(V, o);
}
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

// Capabilities not named are false.
const PolicyInfo kPolicies[] = {
    {.name = "allox",
     .description = "AlloX: min-cost matching of waiting jobs to GPUs by estimated completion "
                    "time (single-GPU jobs; allox_alpha=<a> sets alpha)",
     .capabilities = {.needs_steps_remaining = true, .single_gpu_jobs_only = true},
     .make = &MakeAllox},
    {.name = "drf",
     .description = "Dominant resource fairness over GPUs (and host CPU/memory where given) by "
                    "progressive filling of time shares",
     .make = &MakeDrf},
    {.name = "fifo",
     .description = "First in, first out; heterogeneity-agnostic type choice",
     .capabilities = {.shuffles_gpu_type_order = true, .skips_zero_priority = true},
     .make = &Fifo<kAgn>},
    {.name = "fifo_packed",
     .description = "FIFO on each job's fastest free type, then space sharing of queued jobs",
     .capabilities = {.packing = true, .skips_zero_priority = true},
     .make = &Fifo<kPack>},
    {.name = "fifo_perf",
     .description = "FIFO, each job on its fastest free GPU type",
     .capabilities = {.skips_zero_priority = true},
     .make = &Fifo<kPerf>},
    {.name = "finish_time_fairness",
     .description = "Finish-time fairness (Themis), heterogeneity-agnostic",
     .capabilities = {.shuffles_gpu_type_order = true, .needs_steps_remaining = true},
     .make = &Ftf<kAgn>},
    {.name = "finish_time_fairness_packed",
     .description = "Finish-time fairness with space sharing",
     .capabilities = {.packing = true, .needs_steps_remaining = true},
     .make = &Ftf<kPack>},
    {.name = "finish_time_fairness_perf",
     .description = "Finish-time fairness (Themis): minimise the largest ratio of finish time to "
                    "finish time on an isolated 1/n share",
     .capabilities = {.needs_steps_remaining = true},
     .make = &Ftf<kPerf>},
    {.name = "gandiva",
     .description = "Gandiva: equal time shares with random space-sharing pairs",
     .capabilities = {.packing = true},
     .make = &MakeGandiva},
    {.name = "gandiva_introspective",
     .description = "Gandiva's introspective scheduler: time slicing by longest wait, packing "
                    "by measurement (pairs slower than apart are unpacked), grow-shrink of "
                    "elastic jobs, migration by re-consolidation (option keep=)",
     .capabilities = {.packing = true,
                      .skips_zero_priority = true,
                      .reallocates_every_round = true,
                      .resizes_elastic_jobs = true},
     .option_keys = "keep",
     .make_with_params = &MakeGandivaIntrospective,
     .make = &MakeGandivaIntrospectiveWithDefaults},
    {.name = "isolated",
     .description = "Each job gets an equal 1/n share of every GPU type",
     .capabilities = {.shuffles_gpu_type_order = true},
     .make = &MakeIsolated},
    {.name = "las_perf",
     .description = "Least attained service (GPUs x time) in Tiresias' queues, each gang on "
                    "its fastest type with room, fast GPUs traded to the jobs expected to save "
                    "most time there; while nothing contends, first come, first served on "
                    "the fastest free type; non-clairvoyant (options queues=, thresholds=, "
                    "starve=, upgrade=, trade=, min_remaining=, slow=, patience=, calm=, "
                    "calm_speed=)",
     .capabilities = {.skips_zero_priority = true, .reallocates_every_round = true},
     .option_keys =
         "queues,thresholds,starve,upgrade,trade,min_remaining,slow,patience,calm,calm_speed",
     .make_with_params = &MakeLasPerf,
     .make = &MakeLasPerfWithDefaults},
    {.name = "max_min_fairness",
     .description = "Least attained service: max-min fair time shares, heterogeneity-agnostic",
     .capabilities = {.shuffles_gpu_type_order = true},
     .option_keys = "stay,efficient,share_floor,head",
     .make_with_params = &MaxMinWithParams<kAgn>,
     .make = &MaxMin<kAgn>},
    {.name = "max_min_fairness_packed",
     .description = "Max-min fairness over normalised throughput with space sharing",
     .capabilities = {.packing = true},
     .make = &MaxMin<kPack>},
    {.name = "max_min_fairness_perf",
     .description = "Max-min fairness over throughput normalised by an equal share "
                    "(heterogeneity-aware LAS)",
     .option_keys = "stay,efficient,share_floor,head",
     .make_with_params = &MaxMinWithParams<kPerf>,
     .make = &MaxMin<kPerf>},
    {.name = "max_min_fairness_water_filling",
     .description = "Hierarchical max-min fairness by water filling (entity weights), "
                    "heterogeneity-agnostic",
     .capabilities = {.shuffles_gpu_type_order = true},
     .make = &WaterFilling<kAgn>},
    {.name = "max_min_fairness_water_filling_packed",
     .description = "Hierarchical max-min fairness by water filling with space sharing",
     .capabilities = {.packing = true},
     .make = &WaterFilling<kPack>},
    {.name = "max_min_fairness_water_filling_perf",
     .description = "Hierarchical max-min fairness by water filling over normalised throughput",
     .make = &WaterFilling<kPerf>},
    {.name = "max_sum_throughput_normalized_by_cost_packed_SLOs",
     .description = "Maximise throughput per dollar with space sharing, meeting SLOs",
     .capabilities = {.packing = true, .needs_steps_remaining = true, .needs_instance_costs = true},
     .make = &SumThroughput<true, true, true>},
    {.name = "max_sum_throughput_normalized_by_cost_perf",
     .description = "Maximise total throughput per dollar",
     .capabilities = {.needs_instance_costs = true},
     .make = &SumThroughput<true, false, false>},
    {.name = "max_sum_throughput_normalized_by_cost_perf_SLOs",
     .description = "Maximise throughput per dollar while meeting each job's SLO",
     .capabilities = {.needs_steps_remaining = true, .needs_instance_costs = true},
     .make = &SumThroughput<true, true, false>},
    {.name = "max_sum_throughput_perf",
     .description = "Maximise the sum of throughputs (steps/s) over all jobs",
     .make = &SumThroughput<false, false, false>},
    {.name = "min_total_duration",
     .description = "Minimise makespan, heterogeneity-agnostic",
     .capabilities = {.shuffles_gpu_type_order = true, .needs_steps_remaining = true},
     .make = &Makespan<kAgn>},
    {.name = "min_total_duration_packed",
     .description = "Minimise makespan with space sharing",
     .capabilities = {.packing = true, .needs_steps_remaining = true},
     .make = &Makespan<kPack>},
    {.name = "min_total_duration_perf",
     .description = "Minimise the time until every job finishes (makespan)",
     .capabilities = {.needs_steps_remaining = true},
     .make = &Makespan<kPerf>},
    {.name = "oasis",
     .description = "OASiS: online primal-dual admission by job utility; admitted jobs run "
                    "their best schedule's worker counts per slot "
                    "(options slot=, horizon=, units=, steps=, ps_ratio=, ps_cpus=, decide_per_round=, release_per_round=, defer=, urgency=, replan=)",
     .capabilities = {.skips_zero_priority = true,
                      .needs_steps_remaining = true,
                      .reallocates_every_round = true,
                      .resizes_elastic_jobs = true},
     .option_keys = "slot,horizon,units,steps,ps_ratio,ps_cpus,decide_per_round,release_per_round,defer,urgency,replan",
     .make_with_params = &MakeOasis,
     .make = &MakeOasisWithDefaults},
    {.name = "proportional",
     .description = "Each job gets time on each type in proportion to the type's GPU count",
     .make = &MakeProportional},
    {.name = "shortest_job_first",
     .description = "Shortest remaining time first (preemptive), heterogeneity-agnostic",
     .capabilities = {.shuffles_gpu_type_order = true,
                      .skips_zero_priority = true,
                      .needs_steps_remaining = true},
     .make = &Sjf<kAgn>},
    {.name = "shortest_job_first_perf",
     .description = "Shortest remaining time first on each job's fastest GPU types",
     .capabilities = {.skips_zero_priority = true, .needs_steps_remaining = true},
     .make = &Sjf<kPerf>},
    {.name = "tetris",
     .description = "Tetris: multi-resource packing (GPUs, host CPU/memory) by alignment score "
                    "plus a shortest-remaining-work term, no preemption (option srtf=)",
     .capabilities = {.skips_zero_priority = true, .needs_steps_remaining = true},
     .option_keys = "srtf",
     .make_with_params = &MakeTetris,
     .make = &MakeTetrisWithDefaults},
    {.name = "themis",
     .description = "Themis: finish-time fairness by partial-allocation auctions among the 1-f "
                    "of apps with the largest rho, leftovers to the rest (option f=, default 0.8)",
     .capabilities = {.needs_steps_remaining = true, .reallocates_every_round = true},
     .option_keys = "f",
     .make_with_params = &MakeThemis,
     .make = &MakeThemisWithDefaults},
    {.name = "tiresias_2das",
     .description = "Tiresias: discretized 2D least attained service (GPUs x time) in K "
                    "priority queues, FIFO within a queue, preemptive "
                    "(options queues=, thresholds=, starve=)",
     .capabilities = {.skips_zero_priority = true, .reallocates_every_round = true},
     .option_keys = "queues,thresholds,starve",
     .make_with_params = &MakeTiresias2das,
     .make = &MakeTiresias2dasWithDefaults},
    {.name = "tiresias_2das_perf",
     .description = "tiresias_2das's queues, each job started on the type where its normalised "
                    "throughput is largest relative to the other jobs' (options as "
                    "tiresias_2das)",
     .capabilities = {.skips_zero_priority = true, .reallocates_every_round = true},
     .option_keys = "queues,thresholds,starve",
     .make_with_params = &MakeTiresias2dasPerf,
     .make = &MakeTiresias2dasPerfWithDefaults},
    {.name = "tiresias_gittins",
     .description = "Tiresias: discretized 2D-Gittins index (from completed jobs' GPU-time) "
                    "within K priority queues, preemptive (options queues=, thresholds=, "
                    "starve=)",
     .capabilities = {.skips_zero_priority = true, .reallocates_every_round = true},
     .option_keys = "queues,thresholds,starve",
     .make_with_params = &MakeTiresiasGittins,
     .make = &MakeTiresiasGittinsWithDefaults},
    {.name = "yarn_cs",
     .description = "YARN capacity scheduler baseline: one FIFO queue, no preemption (a "
                    "started job keeps its GPUs until it finishes)",
     .capabilities = {.skips_zero_priority = true},
     .make = &MakeYarnCapacity},
};

constexpr std::string_view kAlloxAlphaPrefix = "allox_alpha=";

}  // namespace

std::span<const PolicyInfo> AllPolicies() { return kPolicies; }

namespace {

const PolicyInfo* FindBase(std::string_view base) {
  for (const PolicyInfo& info : kPolicies) {
    if (info.name == base) return &info;
  }
  return nullptr;
}

// Splits `name:key=value,...` and checks the options against the policy's keys.
Result<const PolicyInfo*> FindWithParams(std::string_view name,
                                         std::vector<std::pair<std::string, std::string>>* params) {
  const std::size_t colon = name.find(':');
  const std::string_view base = name.substr(0, colon);
  const PolicyInfo* info = FindBase(base);
  if (info == nullptr) {
    return Status::NotFound("unknown policy \"" + std::string(base) +
                            "\" (`gavel policies` lists them)");
  }
  if (colon == std::string_view::npos) return info;
  const std::string where = "policy \"" + std::string(name) + "\": ";
  if (info->option_keys.empty()) {
    return Status::InvalidArgument(where + std::string(base) + " takes no options");
  }
  std::string_view rest = name.substr(colon + 1);
  if (rest.empty()) return Status::InvalidArgument(where + "no option after ':'");
  std::vector<std::string> seen;
  while (true) {
    // ',' or ':' between options: `gavel sweep -p` splits policies at commas.
    const std::size_t comma = rest.find_first_of(",:");
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return Status::InvalidArgument(where + "option \"" + std::string(item) +
                                     "\" is not key=value");
    }
    const std::string key(item.substr(0, eq));
    if (!TakesOption(*info, key)) {
      return Status::InvalidArgument(where + "unknown option \"" + key + "\" (" +
                                     std::string(base) + " knows " +
                                     std::string(info->option_keys) + ")");
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Status::InvalidArgument(where + "option \"" + key + "\" given twice");
    }
    seen.push_back(key);
    if (params != nullptr) params->emplace_back(key, std::string(item.substr(eq + 1)));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return info;
}

}  // namespace

bool TakesOption(const PolicyInfo& info, std::string_view key) {
  for (std::string_view keys = info.option_keys; !keys.empty();) {
    const std::size_t k = keys.find(',');
    if (keys.substr(0, k) == key) return true;
    keys = k == std::string_view::npos ? std::string_view() : keys.substr(k + 1);
  }
  return false;
}

Result<const PolicyInfo*> FindPolicy(std::string_view name) {
  if (name.starts_with(kAlloxAlphaPrefix)) name = "allox";
  return FindWithParams(name, nullptr);
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
  if (name.starts_with(kAlloxAlphaPrefix)) name = "allox";
  options.params.clear();
  GAVEL_ASSIGN_OR_RETURN(const PolicyInfo* info, FindWithParams(name, &options.params));
  if (info->make_with_params != nullptr) {
    Result<std::unique_ptr<Policy>> policy = info->make_with_params(options);
    if (!policy.ok()) {
      return policy.status().WithContext("policy \"" + std::string(name) + "\"");
    }
    return policy;
  }
  return info->make(options);
}

Result<double> NumberOption(const std::string& key, const std::string& text, double lowest,
                            double highest, bool lowest_allowed) {
  const std::optional<double> value = ParseFiniteDouble(text);
  if (!value || *value < lowest || (!lowest_allowed && *value == lowest) || *value > highest) {
    std::ostringstream range;
    range << (lowest_allowed ? "[" : "(") << lowest << ", " << highest << "]";
    return Status::InvalidArgument("option " + key + "=" + text + ": must be a number in " +
                                   range.str());
  }
  return *value;
}

}  // namespace gavel::policy
