#include "gavel/mechanism/cluster_layout.h"

#include <algorithm>
#include <set>

namespace gavel::mechanism {

Result<ClusterLayout> ClusterLayout::Create(const std::vector<GpuTypeSpec>& types) {
  std::set<std::string> seen;
  for (const GpuTypeSpec& spec : types) {
    if (spec.name.empty()) return Status::InvalidArgument("cluster: a GPU type has no name");
    if (!seen.insert(spec.name).second) {
      return Status::InvalidArgument("cluster: GPU type \"" + spec.name + "\" listed twice");
    }
    if (spec.count < 0) {
      return Status::InvalidArgument("cluster: GPU type \"" + spec.name +
                                     "\" has a negative GPU count");
    }
    if (spec.gpus_per_server < 1) {
      return Status::InvalidArgument("cluster: GPU type \"" + spec.name +
                                     "\" needs at least 1 GPU per server");
    }
  }

  ClusterLayout layout;
  // Registered types, sorted by name; a type keeps whole servers only.
  std::vector<const GpuTypeSpec*> sorted;
  for (const GpuTypeSpec& spec : types) {
    if (spec.count / spec.gpus_per_server > 0) sorted.push_back(&spec);
  }
  if (sorted.empty()) return Status::InvalidArgument("cluster: no GPUs");
  std::sort(sorted.begin(), sorted.end(),
            [](const GpuTypeSpec* a, const GpuTypeSpec* b) { return a->name < b->name; });

  std::uint64_t next_worker = 0;
  for (const GpuTypeSpec* spec : sorted) {
    const int type = static_cast<int>(layout.names_.size());
    const int num_servers = spec->count / spec->gpus_per_server;
    layout.names_.push_back(spec->name);
    layout.counts_.push_back(num_servers * spec->gpus_per_server);
    layout.per_server_.push_back(spec->gpus_per_server);
    std::vector<std::vector<WorkerId>> servers(static_cast<std::size_t>(num_servers));
    for (auto& server : servers) {
      for (int g = 0; g < spec->gpus_per_server; ++g) {
        server.push_back(WorkerId(next_worker++));
        layout.type_of_worker_.push_back(type);
      }
    }
    layout.servers_.push_back(std::move(servers));
  }
  for (const GpuTypeSpec& spec : types) {
    const int index = layout.TypeIndex(spec.name);
    if (index >= 0) layout.preference_.push_back(index);
  }
  layout.GroupRacks();
  return layout;
}

Status ClusterLayout::SetHostResources(const HostResources& host) {
  if (host.servers_per_rack < 0 || !(host.cpus_per_server >= 0.0) ||
      !(host.mem_gb_per_server >= 0.0)) {
    return Status::InvalidArgument(
        "cluster: servers per rack, CPUs and memory per server must be >= 0");
  }
  host_ = host;
  GroupRacks();
  return Status::Ok();
}

void ClusterLayout::GroupRacks() {
  server_of_worker_.assign(type_of_worker_.size(), 0);
  rack_of_server_.clear();
  first_server_.clear();
  num_racks_ = 0;
  for (std::size_t t = 0; t < servers_.size(); ++t) {
    first_server_.push_back(static_cast<int>(rack_of_server_.size()));
    const int n = static_cast<int>(servers_[t].size());
    const int per_rack = host_.servers_per_rack > 0 ? host_.servers_per_rack : std::max(n, 1);
    for (int s = 0; s < n; ++s) {
      const int global = static_cast<int>(rack_of_server_.size());
      rack_of_server_.push_back(num_racks_ + s / per_rack);
      for (WorkerId w : servers_[t][static_cast<std::size_t>(s)]) {
        server_of_worker_[static_cast<std::size_t>(w.value())] = global;
      }
    }
    num_racks_ += (n + per_rack - 1) / per_rack;
  }
}

int ClusterLayout::TypeIndex(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? -1 : static_cast<int>(it - names_.begin());
}

std::vector<GpuTypeSpec> ClusterLayout::Specs() const {
  std::vector<GpuTypeSpec> specs;
  for (int t = 0; t < num_types(); ++t) {
    specs.push_back(
        GpuTypeSpec{names_[static_cast<std::size_t>(t)], gpu_count(t), gpus_per_server(t)});
  }
  return specs;
}

}  // namespace gavel::mechanism
