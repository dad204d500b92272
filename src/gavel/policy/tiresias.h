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

std::unique_ptr<Policy> MakeTiresias2das(const TiresiasOptions& tiresias);
Result<std::unique_ptr<Policy>> MakeTiresias2das(const PolicyOptions& options);
// The policy with its default options (options.params ignored).
std::unique_ptr<Policy> MakeTiresias2dasWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
