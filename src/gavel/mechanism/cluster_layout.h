// ClusterLayout: the GPUs the round scheduler places jobs on, as the original registers them
// (spec §1.3): GPU types in sorted name order, each type's GPUs grouped into servers of
// `gpus_per_server` consecutive worker ids, ids numbered from 0 type after type. A type
// keeps count / gpus_per_server whole servers (remainder GPUs are dropped, as in the
// original); a type left with no GPU is not part of the cluster.
//
// It also remembers the order the user listed the types in: the scheduler walks types in that
// order each round (the original's fixed ["v100", "p100", "k80"]).
// Immutable after Create; thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/status.h"

namespace gavel::mechanism {

class ClusterLayout {
 public:
  // `types` in the user's preference order. Errors: duplicate or empty names, negative counts,
  // gpus_per_server < 1, or no GPU at all.
  static Result<ClusterLayout> Create(const std::vector<GpuTypeSpec>& types);

  int num_types() const { return static_cast<int>(names_.size()); }
  // Type names, sorted; a type's index is its position here (the policies' column order).
  const std::vector<std::string>& type_names() const { return names_; }
  const std::string& type_name(int type) const { return names_.at(static_cast<std::size_t>(type)); }
  // Index of `name`, or -1.
  int TypeIndex(const std::string& name) const;
  // GPUs of a type (whole servers only).
  int gpu_count(int type) const { return counts_.at(static_cast<std::size_t>(type)); }
  int gpus_per_server(int type) const { return per_server_.at(static_cast<std::size_t>(type)); }
  // The type's servers, each a list of consecutive worker ids.
  const std::vector<std::vector<WorkerId>>& servers(int type) const {
    return servers_.at(static_cast<std::size_t>(type));
  }
  // Type indices in the order the user listed them.
  const std::vector<int>& preference_order() const { return preference_; }

  int num_workers() const { return static_cast<int>(type_of_worker_.size()); }
  int TypeOf(WorkerId worker) const {
    return type_of_worker_.at(static_cast<std::size_t>(worker.value()));
  }

  // The layout as GpuTypeSpecs, sorted by name (for snapshots and policy inputs).
  std::vector<GpuTypeSpec> Specs() const;

 private:
  std::vector<std::string> names_;
  std::vector<int> counts_;
  std::vector<int> per_server_;
  std::vector<std::vector<std::vector<WorkerId>>> servers_;
  std::vector<int> preference_;
  std::vector<int> type_of_worker_;
};

}  // namespace gavel::mechanism
