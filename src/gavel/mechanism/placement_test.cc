// Topology-aware placement: hand cases for its consolidation rule, and a property test that
// no sequence of placements ever exceeds a server's GPUs, CPUs or memory (checked with the
// test's own accounting).
#include "gavel/mechanism/placement.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>

namespace gavel::mechanism {
namespace {

ClusterLayout Layout(int gpus, int per_server, HostResources host) {
  ClusterLayout layout = *ClusterLayout::Create({GpuTypeSpec{"v100", gpus, per_server}});
  GAVEL_CHECK(layout.SetHostResources(host).ok());
  return layout;
}

std::set<int> Servers(const ClusterLayout& layout, const std::vector<WorkerId>& workers) {
  std::set<int> s;
  for (WorkerId w : workers) s.insert(layout.ServerOf(w));
  return s;
}

TEST(ClusterLayoutTest, GroupsServersIntoRacks) {
  const ClusterLayout layout = Layout(16, 2, HostResources{3, 0, 0});
  EXPECT_EQ(layout.num_servers(), 8);
  EXPECT_EQ(layout.num_racks(), 3);  // 3 + 3 + 2 servers
  EXPECT_EQ(layout.RackOf(WorkerId(5)), 0);   // server 2
  EXPECT_EQ(layout.RackOf(WorkerId(6)), 1);   // server 3
  EXPECT_EQ(layout.RackOf(WorkerId(15)), 2);  // server 7
}

TEST(ResourcePoolTest, PrefersOneServerThenOneRack) {
  // 4 servers of 4 GPUs, 2 servers per rack.
  const ClusterLayout layout = Layout(16, 4, HostResources{2, 0, 0});
  ResourcePool pool(layout);
  // 3 GPUs of server 0 taken: a 1-GPU job goes to the fullest server that fits (server 0).
  ASSERT_TRUE(pool.Take(0, 3, {}).has_value());
  auto one = pool.Take(0, 1, {});
  ASSERT_TRUE(one);
  EXPECT_EQ(Servers(layout, *one), std::set<int>{0});
  // 2 GPUs on server 1: now servers 2 and 3 (rack 1) are empty, server 1 has 2 left.
  ASSERT_TRUE(pool.Take(0, 2, {}));
  // 6 GPUs fit on no server; rack 0 has 2 free, rack 1 has 8: rack 1.
  auto six = pool.Take(0, 6, {});
  ASSERT_TRUE(six);
  for (WorkerId w : *six) EXPECT_EQ(layout.RackOf(w), 1);
  EXPECT_EQ(Servers(layout, *six).size(), 2u);
  // 4 GPUs left in all (2 + 2 in different racks): a 4-GPU job spans the racks; a 5th fails.
  EXPECT_FALSE(pool.Take(0, 5, {}));
  auto four = pool.Take(0, 4, {});
  ASSERT_TRUE(four);
  std::set<int> racks;
  for (WorkerId w : *four) racks.insert(layout.RackOf(w));
  EXPECT_EQ(racks.size(), 2u);
}

TEST(ResourcePoolTest, HostResourcesLimitWhatAServerTakes) {
  // 2 servers of 4 GPUs with 8 CPUs each; jobs need 4 CPUs per GPU.
  const ClusterLayout layout = Layout(8, 4, HostResources{0, 8.0, 0});
  ResourcePool pool(layout);
  const WorkerDemand demand{4.0, 0.0};
  auto a = pool.Take(0, 2, demand);
  ASSERT_TRUE(a);
  EXPECT_EQ(Servers(layout, *a).size(), 1u);
  auto b = pool.Take(0, 2, demand);
  ASSERT_TRUE(b);
  EXPECT_EQ(Servers(layout, *b).size(), 1u);
  EXPECT_NE(*Servers(layout, *a).begin(), *Servers(layout, *b).begin());
  // 4 GPUs free, but no CPUs: nothing else fits, not even a job with no demand... which fits.
  EXPECT_FALSE(pool.Take(0, 1, demand));
  EXPECT_TRUE(pool.Take(0, 1, WorkerDemand{}));
  // Keeping workers checks resources too.
  ResourcePool fresh(layout);
  EXPECT_TRUE(fresh.TryTake({WorkerId(0), WorkerId(1)}, demand));
  EXPECT_FALSE(fresh.TryTake({WorkerId(2)}, demand));
  EXPECT_FALSE(fresh.TryTake({WorkerId(1)}, WorkerDemand{}));  // already taken
}

// Invariant: whatever is asked, no server ever hands out more GPUs, CPUs or memory than it
// has, no GPU is handed out twice, a job gets exactly its GPUs of the type asked, and when a
// single server could hold a job, the job lands on one server.
RC_GTEST_PROP(ResourcePoolProperty, NeverExceedsCapacity, ()) {
  const int per_server = *rc::gen::inRange(1, 9);
  const int servers = *rc::gen::inRange(1, 13);
  HostResources host;
  host.servers_per_rack = *rc::gen::inRange(0, 5);
  host.cpus_per_server = static_cast<double>(*rc::gen::inRange(0, 33));
  host.mem_gb_per_server = static_cast<double>(*rc::gen::inRange(0, 257));
  const ClusterLayout layout = Layout(servers * per_server, per_server, host);
  ResourcePool pool(layout);
  std::map<int, double> cpus;
  std::map<int, double> mem;
  std::map<int, int> gpus;
  std::set<std::uint64_t> taken;
  const int requests = *rc::gen::inRange(1, 40);
  for (int k = 0; k < requests; ++k) {
    const int want = *rc::gen::element(1, 2, 4, 8, 16);
    const WorkerDemand d{static_cast<double>(*rc::gen::inRange(0, 9)),
                         static_cast<double>(*rc::gen::inRange(0, 65))};
    // Could one server hold it before this request (by the test's own accounting)?
    bool one_server_fits = false;
    for (int s = 0; s < layout.num_servers(); ++s) {
      const bool cpu_ok = host.cpus_per_server == 0 || cpus[s] + d.cpus * want <= host.cpus_per_server;
      const bool mem_ok =
          host.mem_gb_per_server == 0 || mem[s] + d.mem_gb * want <= host.mem_gb_per_server;
      one_server_fits = one_server_fits || (per_server - gpus[s] >= want && cpu_ok && mem_ok);
    }
    const auto got = pool.Take(0, want, d);
    if (one_server_fits) RC_ASSERT(got.has_value());
    if (!got) continue;
    RC_ASSERT(static_cast<int>(got->size()) == want);
    if (one_server_fits) RC_ASSERT(Servers(layout, *got).size() == 1u);
    for (WorkerId w : *got) {
      RC_ASSERT(taken.insert(w.value()).second);
      const int s = layout.ServerOf(w);
      ++gpus[s];
      cpus[s] += d.cpus;
      mem[s] += d.mem_gb;
    }
  }
  for (const auto& [s, n] : gpus) {
    RC_ASSERT(n <= per_server);
    if (host.cpus_per_server > 0) RC_ASSERT(cpus[s] <= host.cpus_per_server + 1e-9);
    if (host.mem_gb_per_server > 0) RC_ASSERT(mem[s] <= host.mem_gb_per_server + 1e-9);
  }
}

}  // namespace
}  // namespace gavel::mechanism
