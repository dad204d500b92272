#include "gavel/policy/oasis_reference_pricing.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gavel::policy::oasis {

std::optional<std::pair<double, PlanEntry>> ReferenceGreedy(std::span<const Server> servers,
                                                            const PriceCurve& price_of,
                                                            const ParameterServers& ps,
                                                            SlotView use, double cpus_per_gpu,
                                                            std::size_t type, int k) {
  const bool cpu_limited = !servers.empty() && servers[0].cpus > 0.0;
  std::vector<std::pair<double, std::size_t>> by_price;  // (price per worker, server)
  std::vector<double> cpu_room(servers.size(), 0.0);
  for (std::size_t s = 0; s < servers.size(); ++s) {
    const Server& server = servers[s];
    const int used = use.gpus[s];
    const double used_cpu = use.cpus[s];
    cpu_room[s] = server.cpus - used_cpu;
    if (server.type != static_cast<int>(type) || used >= server.gpus) continue;
    double price = price_of(used, server.gpus);
    if (cpu_limited)
      price += cpus_per_gpu * price_of(used_cpu, server.cpus) * server.gpus / server.cpus;
    by_price.emplace_back(price, s);
  }
  std::sort(by_price.begin(), by_price.end());
  PlanEntry entry;
  entry.type = static_cast<int>(type);
  entry.workers = k;
  double cost = 0.0;
  int left = k;
  for (const auto& [price, s] : by_price) {
    if (left == 0) break;
    const int used = use.gpus[s];
    int take = std::min(left, servers[s].gpus - used);
    if (cpu_limited && cpus_per_gpu > 0.0) {
      take = std::min(take, static_cast<int>(std::floor(cpu_room[s] / cpus_per_gpu)));
    }
    if (take <= 0) continue;
    left -= take;
    cost += take * price;
    entry.gpus.emplace_back(s, take);
    if (cpu_limited && cpus_per_gpu > 0.0) {
      cpu_room[s] -= take * cpus_per_gpu;
      entry.cpus.emplace_back(s, take * cpus_per_gpu);
    }
  }
  if (left > 0) return std::nullopt;
  // Parameter servers: CPU cores only, on the servers whose cores are cheapest.
  const int servers_wanted = ps.For(k);
  if (cpu_limited && servers_wanted > 0 && ps.cpus > 0.0) {
    std::vector<std::pair<double, std::size_t>> cpu_price;
    for (std::size_t s = 0; s < servers.size(); ++s) {
      const double used_cpu = servers[s].cpus - cpu_room[s];
      cpu_price.emplace_back(
          price_of(used_cpu, servers[s].cpus) * servers[s].gpus / servers[s].cpus, s);
    }
    std::sort(cpu_price.begin(), cpu_price.end());
    int ps_left = servers_wanted;
    for (const auto& [price, s] : cpu_price) {
      while (ps_left > 0 && cpu_room[s] >= ps.cpus) {
        cpu_room[s] -= ps.cpus;
        cost += price * ps.cpus;
        entry.cpus.emplace_back(s, ps.cpus);
        --ps_left;
      }
    }
    if (ps_left > 0) return std::nullopt;
  }
  return std::make_pair(cost, std::move(entry));
}

}  // namespace gavel::policy::oasis
