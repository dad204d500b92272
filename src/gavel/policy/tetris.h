// Tetris (Grandl et al., SIGCOMM'14; docs/policies.md, "Tetris") as a GPU-cluster baseline:
// multi-resource packing by alignment score with a shortest-remaining-work term. Resources are
// the GPUs of each type and, where the cluster gives them, host CPU cores and memory. Not
// preemptive: a job that ran last round keeps its type while it fits (as yarn_cs). Then,
// repeatedly, of every (waiting job, type) that fits, the one with the largest score
//   alignment + ε · shortness
// starts: alignment = the dot product of the job's demand and the free resources, each
// normalised by its capacity; shortness = 1 − remaining / largest remaining (remaining = the
// job's GPU-seconds left on that type); ε = srtf × (mean alignment / mean shortness) over the
// candidates of the first pick, the paper's way of making the two terms comparable. Whole GPUs
// of one type per job. Needs remaining steps. Stateless.
#pragma once

#include <memory>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

struct TetrisOptions {
  double srtf = 1.0;  // weight of the shortest-remaining-work term (0 = packing alone)
};

// Parses `srtf=` (a non-negative number); errors name the key.
Result<TetrisOptions> ParseTetrisOptions(const PolicyOptions& options);

std::unique_ptr<Policy> MakeTetris(const TetrisOptions& tetris);
Result<std::unique_ptr<Policy>> MakeTetris(const PolicyOptions& options);
std::unique_ptr<Policy> MakeTetrisWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
