#include "gavel/mechanism/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gavel::mechanism {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Rounding slack for sums of fractional demands.
constexpr double kEps = 1e-9;

int Fits(double left, double per_gpu) {
  if (!(per_gpu > 0.0) || std::isinf(left)) return std::numeric_limits<int>::max();
  return static_cast<int>(std::floor((left + kEps) / per_gpu));
}

}  // namespace

ResourcePool::ResourcePool(const ClusterLayout& layout) { Reset(layout); }

void ResourcePool::Reset(const ClusterLayout& layout) {
  layout_ = &layout;
  const auto n = static_cast<std::size_t>(layout.num_servers());
  free_.resize(n);
  for (std::vector<WorkerId>& free : free_) free.clear();
  const HostResources& host = layout.host_resources();
  cpus_.assign(n, host.cpus_per_server > 0.0 ? host.cpus_per_server : kInf);
  mem_.assign(n, host.mem_gb_per_server > 0.0 ? host.mem_gb_per_server : kInf);
  for (int t = 0; t < layout.num_types(); ++t) {
    for (const std::vector<WorkerId>& server : layout.servers(t)) {
      for (WorkerId w : server) free_[static_cast<std::size_t>(layout.ServerOf(w))].push_back(w);
    }
  }
}

int ResourcePool::Capacity(int server, const WorkerDemand& demand) const {
  const auto s = static_cast<std::size_t>(server);
  return std::min({static_cast<int>(free_[s].size()), Fits(cpus_[s], demand.cpus),
                   Fits(mem_[s], demand.mem_gb)});
}

void ResourcePool::TakeFrom(int server, int gpus, const WorkerDemand& demand,
                            std::vector<WorkerId>& out) {
  const auto s = static_cast<std::size_t>(server);
  std::vector<WorkerId>& free = free_[s];
  out.insert(out.end(), free.begin(), free.begin() + gpus);
  free.erase(free.begin(), free.begin() + gpus);
  cpus_[s] -= demand.cpus * gpus;
  mem_[s] -= demand.mem_gb * gpus;
}

bool ResourcePool::TryTake(const std::vector<WorkerId>& workers, const WorkerDemand& demand) {
  // Per server: how many of the workers land there, and are they all free?
  std::vector<std::pair<int, int>>& per_server = per_server_;  // (server, gpus)
  per_server.clear();
  for (WorkerId w : workers) {
    const int s = layout_->ServerOf(w);
    const std::vector<WorkerId>& free = free_[static_cast<std::size_t>(s)];
    if (std::find(free.begin(), free.end(), w) == free.end()) return false;
    auto it = std::find_if(per_server.begin(), per_server.end(),
                           [&](const auto& p) { return p.first == s; });
    if (it == per_server.end()) {
      per_server.emplace_back(s, 1);
    } else {
      ++it->second;
    }
  }
  for (const auto& [s, gpus] : per_server) {
    const auto us = static_cast<std::size_t>(s);
    if (Fits(cpus_[us], demand.cpus) < gpus || Fits(mem_[us], demand.mem_gb) < gpus) return false;
  }
  for (WorkerId w : workers) {
    const auto s = static_cast<std::size_t>(layout_->ServerOf(w));
    std::erase(free_[s], w);
    cpus_[s] -= demand.cpus;
    mem_[s] -= demand.mem_gb;
  }
  return true;
}

std::optional<std::vector<WorkerId>> ResourcePool::Take(int type, int gpus,
                                                        const WorkerDemand& demand) {
  const int first = layout_->first_server(type);
  const int end = first + static_cast<int>(layout_->servers(type).size());
  std::vector<int> capacity(static_cast<std::size_t>(end - first));
  int total = 0;
  for (int s = first; s < end; ++s) {
    capacity[static_cast<std::size_t>(s - first)] = Capacity(s, demand);
    total += capacity[static_cast<std::size_t>(s - first)];
  }
  if (total < gpus) return std::nullopt;
  const auto cap = [&](int s) { return capacity[static_cast<std::size_t>(s - first)]; };
  std::vector<WorkerId> out;
  out.reserve(static_cast<std::size_t>(gpus));

  // 1. One server: the fullest that fits (lowest index on ties).
  int best = -1;
  for (int s = first; s < end; ++s) {
    if (cap(s) >= gpus && (best < 0 || free_gpus(s) < free_gpus(best))) best = s;
  }
  if (best >= 0) {
    TakeFrom(best, gpus, demand, out);
    return out;
  }
  // Takes from `servers`, roomiest first, until the job is placed.
  const auto take_roomiest = [&](std::vector<int> servers) {
    std::stable_sort(servers.begin(), servers.end(),
                     [&](int a, int b) { return cap(a) > cap(b); });
    int left = gpus;
    for (int s : servers) {
      const int n = std::min(left, cap(s));
      if (n <= 0) continue;
      TakeFrom(s, n, demand, out);
      left -= n;
      if (left == 0) break;
    }
  };
  // 2. One rack: the rack with the least room that still fits.
  int best_rack = -1;
  int best_room = 0;
  for (int s = first; s < end;) {
    const int rack = layout_->RackOfServer(s);
    int room = 0;
    int r = s;
    for (; r < end && layout_->RackOfServer(r) == rack; ++r) room += cap(r);
    if (room >= gpus && (best_rack < 0 || room < best_room)) {
      best_rack = rack;
      best_room = room;
    }
    s = r;
  }
  std::vector<int> servers;
  for (int s = first; s < end; ++s) {
    if (best_rack < 0 || layout_->RackOfServer(s) == best_rack) servers.push_back(s);
  }
  // 3. (best_rack < 0) Anywhere in the type.
  take_roomiest(std::move(servers));
  return out;
}

std::optional<std::vector<WorkerId>> ResourcePool::TakeFirstFit(int type, int gpus) {
  const int first = layout_->first_server(type);
  const int end = first + static_cast<int>(layout_->servers(type).size());
  int total = 0;
  for (int s = first; s < end && total < gpus; ++s) total += free_gpus(s);
  if (total < gpus) return std::nullopt;
  std::vector<WorkerId> out;
  out.reserve(static_cast<std::size_t>(gpus));
  for (int s = first; s < end && static_cast<int>(out.size()) < gpus; ++s) {
    const int n = std::min(gpus - static_cast<int>(out.size()), free_gpus(s));
    if (n > 0) TakeFrom(s, n, WorkerDemand{}, out);
  }
  return out;
}

}  // namespace gavel::mechanism
