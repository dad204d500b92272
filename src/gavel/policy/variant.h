// The three flavours most policies of the original come in (docs/policies.md).
#pragma once

namespace gavel::policy {

enum class Variant {
  kAgnostic,  // heterogeneity-agnostic baseline: the policy does not know per-type speed-ups
  kPerf,      // heterogeneity-aware: uses each job's throughput on each GPU type
  kPacked,    // heterogeneity-aware with space sharing (two jobs on the same GPUs)
};

}  // namespace gavel::policy
