// Tiresias' discretized two-dimensional least-attained-service scheduler (2DAS, NSDI'19;
// docs/policies.md, "Tiresias"). Attained service = GPUs × seconds run (PolicyJob::
// attained_gpu_seconds, from the mechanism). K priority queues split by K−1 thresholds on
// attained service: a job starts in the first (highest) queue and moves to queue q once its
// service since its last promotion reaches thresholds[q−1]. Queues are served in order, FIFO
// (arrival) within a queue; each job takes whole GPUs of one type where it fits, a job that
// fits nowhere is skipped (the next may fit). Preemptive: the allocation is recomputed every
// round (capability reallocates_every_round). A job that has waited at least `starve`
// seconds (PolicyJob::waiting) is promoted to the first queue, its service counted afresh.
// Stateful (each job's service at its last promotion); single-threaded.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

struct TiresiasOptions {
  // K−1 increasing thresholds in GPU-seconds; K = thresholds.size() + 1 queues. Default: two
  // queues split at 3,600 GPU-seconds (the Tiresias simulator's documented example).
  std::vector<double> thresholds = {3600.0};
  double starve_seconds = 0.0;  // promotion after this long waiting; 0 = never
};

// Parses `queues=K`, `thresholds=a;b;...` (GPU-seconds) and `starve=S` (seconds) from
// options.params. Errors name the key.
Result<TiresiasOptions> ParseTiresiasOptions(const PolicyOptions& options);

// The queue (0 = highest) of a job with `service` GPU-seconds since its last promotion.
int TiresiasQueueOf(const TiresiasOptions& options, double service);

// The service (GPU-seconds) that completed jobs attained, the distribution Tiresias' 2D-Gittins
// index is computed from. Plain data; single-threaded.
class ServiceDistribution {
 public:
  void Add(double service);
  std::size_t size() const { return sorted_.size(); }
  // The Gittins index of a job that has attained `attained` GPU-seconds, for a quantum of
  // `delta` more (may be +infinity): P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a], the
  // chance to finish within the quantum per GPU-second spent on it. 0 where no completed job
  // attained more than `attained` (nothing to go by: the lowest index). O(log n).
  double GittinsIndex(double attained, double delta) const;

 private:
  std::vector<double> sorted_;
  std::vector<double> prefix_ = {0.0};  // prefix_[k] = the sum of sorted_[0..k)
};

std::unique_ptr<Policy> MakeTiresias2das(const TiresiasOptions& tiresias);
Result<std::unique_ptr<Policy>> MakeTiresias2das(const PolicyOptions& options);
// The policy with its default options (options.params ignored).
std::unique_ptr<Policy> MakeTiresias2dasWithDefaults(const PolicyOptions& options);

// tiresias_2das_perf: 2DAS's queues and order, but a job that must take a type (it is not
// running, or its type is full) takes the fitting type where its comparative advantage
// (queue_discipline.h, ComparativeAdvantage) is largest, preferring types with room, instead
// of the one with the most room. Non-clairvoyant, as 2DAS: throughputs, never remaining steps.
std::unique_ptr<Policy> MakeTiresias2dasPerf(const TiresiasOptions& tiresias);
Result<std::unique_ptr<Policy>> MakeTiresias2dasPerf(const PolicyOptions& options);
std::unique_ptr<Policy> MakeTiresias2dasPerfWithDefaults(const PolicyOptions& options);

// Tiresias' discretized 2D-Gittins (docs/policies.md, "Tiresias"): the same K queues by
// service, but within a queue jobs go by their Gittins index (highest first; ties FIFO) from
// the distribution of the service of the jobs that completed so far (a job that leaves the
// input is taken to have completed with the service it last reported). The quantum Δ is the
// service left before the job's next threshold, unbounded in the last queue. With no completed
// job yet every index is 0 and the order is 2DAS's. Stateful (the distribution, the
// promotions); single-threaded.
std::unique_ptr<Policy> MakeTiresiasGittins(const TiresiasOptions& tiresias);
Result<std::unique_ptr<Policy>> MakeTiresiasGittins(const PolicyOptions& options);
std::unique_ptr<Policy> MakeTiresiasGittinsWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
