// ClusterLayout: the GPUs the round scheduler places jobs on, in the original's order:
// GPU types in sorted name order, each type's GPUs grouped into servers of
// `gpus_per_server` consecutive worker ids, ids numbered from 0 type after type. A type
// keeps count / gpus_per_server whole servers (remainder GPUs are dropped, as in the
// original); a type left with no GPU is not part of the cluster.
//
// It also remembers the order the user listed the types in: the scheduler walks types in that
// order each round (the original's fixed ["v100", "p100", "k80"]).
// Host resources and racks (opt-in, for topology-aware placement): every server of the
// cluster has the same CPU cores and host memory, and a type's servers are grouped into racks
// of `servers_per_rack` consecutive servers (racks never mix types). Without them a type's
// servers form one rack and host resources are unlimited.
// Immutable after Create (and SetHostResources); thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/status.h"

namespace gavel::mechanism {

struct HostResources {
  int servers_per_rack = 0;        // 0 = each type's servers form one rack
  double cpus_per_server = 0.0;    // 0 = not limited
  double mem_gb_per_server = 0.0;  // 0 = not limited
};

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

  // Errors: negative values. Regroups the racks.
  Status SetHostResources(const HostResources& host);
  const HostResources& host_resources() const { return host_; }
  // Servers are numbered 0.. across types in worker-id order; racks likewise.
  int num_servers() const { return static_cast<int>(rack_of_server_.size()); }
  int num_racks() const { return num_racks_; }
  int ServerOf(WorkerId worker) const {
    return server_of_worker_.at(static_cast<std::size_t>(worker.value()));
  }
  int RackOfServer(int server) const { return rack_of_server_.at(static_cast<std::size_t>(server)); }
  int RackOf(WorkerId worker) const { return RackOfServer(ServerOf(worker)); }
  // Global index of the type's first server.
  int first_server(int type) const { return first_server_.at(static_cast<std::size_t>(type)); }

  // The layout as GpuTypeSpecs, sorted by name (for snapshots and policy inputs).
  std::vector<GpuTypeSpec> Specs() const;

 private:
  std::vector<std::string> names_;
  std::vector<int> counts_;
  std::vector<int> per_server_;
  std::vector<std::vector<std::vector<WorkerId>>> servers_;
  std::vector<int> preference_;
  std::vector<int> type_of_worker_;
  HostResources host_;
  std::vector<int> server_of_worker_;
  std::vector<int> rack_of_server_;
  std::vector<int> first_server_;
  int num_racks_ = 0;
  void GroupRacks();
};

}  // namespace gavel::mechanism
