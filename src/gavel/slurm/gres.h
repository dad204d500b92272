// GPU GRES as Slurm reports them for a node (node_info_t::gres, the `Gres=` of slurm.conf):
// "gpu:k80:2", "gpu:k80:1(S:0),gpu:v100:1(S:0-1)", "gpu:a100:8(S:0-1),mps:400", "(null)".
// Only typed GPUs count: the type is what the throughput table is keyed by, so an untyped
// "gpu:4" is an error naming the entry (the node cannot be scheduled heterogeneity-aware).
// Other GRES (mps, shard, nic) are ignored. Types are lower-cased, as the throughput table's
// keys are. Entries of one type are summed. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/status.h"

namespace gavel::slurm {

struct GpuGres {
  std::string type;  // lower case, e.g. "v100"
  int count = 0;
  friend bool operator==(const GpuGres&, const GpuGres&) = default;
};

// The node's GPUs by type, in the order the types first appear. An empty or "(null)" string
// is no GPU.
Result<std::vector<GpuGres>> ParseGpuGres(std::string_view gres);

}  // namespace gavel::slurm
