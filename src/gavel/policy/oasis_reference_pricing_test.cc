#include "gavel/policy/oasis_reference_pricing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gavel::policy::oasis {
namespace {

// Prices between L = 1 and U = 16: a server's GPU costs 16^(used / capacity) per slot.
constexpr PriceCurve kCurve{1.0, 16.0};

TEST(OasisReferencePricing, PriceCurveRunsFromLowerToUpper) {
  EXPECT_DOUBLE_EQ(kCurve(0.0, 4.0), 1.0);
  EXPECT_DOUBLE_EQ(kCurve(2.0, 4.0), 4.0);  // 16^(1/2)
  EXPECT_DOUBLE_EQ(kCurve(4.0, 4.0), 16.0);
  EXPECT_DOUBLE_EQ(kCurve(9.0, 4.0), 16.0);  // capped at U
  EXPECT_TRUE(std::isinf(kCurve(0.0, 0.0)));
  EXPECT_DOUBLE_EQ((PriceCurve{2.0, 1.0})(1.0, 2.0), 2.0);  // U below L counts as L
}

// Two servers of 2 GPUs of type 0 and one of type 1, CPUs not limited: worked by hand.
TEST(OasisReferencePricing, TakesTheCheapestGpusFirstByHand) {
  const std::vector<Server> servers = {{0, 2, 0.0}, {0, 2, 0.0}, {1, 2, 0.0}};
  const std::vector<double> no_cpus(3, 0.0);
  const ParameterServers ps;
  // Nothing promised: every GPU costs 1; three workers take server 0's two (ties go to the
  // lower index) and one of server 1.
  std::vector<int> used = {0, 0, 0};
  auto placed =
      ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), no_cpus.data()}, 0.0, 0, 3);
  ASSERT_TRUE(placed.has_value());
  EXPECT_DOUBLE_EQ(placed->first, 3.0);
  EXPECT_EQ(placed->second.gpus, (std::vector<GpuPlacement>{{0, 2}, {1, 1}}));
  EXPECT_TRUE(placed->second.cpus.empty());
  // One GPU of server 0 promised: its price is 16^(1/2) = 4 per GPU, server 1's stays 1. Two
  // workers go to server 1 (cost 2); three add one of server 0 (2 + 4).
  used = {1, 0, 0};
  placed = ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), no_cpus.data()}, 0.0, 0, 2);
  ASSERT_TRUE(placed.has_value());
  EXPECT_DOUBLE_EQ(placed->first, 2.0);
  EXPECT_EQ(placed->second.gpus, (std::vector<GpuPlacement>{{1, 2}}));
  placed = ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), no_cpus.data()}, 0.0, 0, 3);
  ASSERT_TRUE(placed.has_value());
  EXPECT_DOUBLE_EQ(placed->first, 6.0);
  // Four workers of type 0 do not fit in the three GPUs left; type 1 has its own server.
  EXPECT_FALSE(
      ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), no_cpus.data()}, 0.0, 0, 4)
          .has_value());
  placed = ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), no_cpus.data()}, 0.0, 1, 2);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->second.gpus, (std::vector<GpuPlacement>{{2, 2}}));
}

// CPU-limited servers of 2 GPUs and 8 cores: a worker's price adds its cores at the core
// price scaled to a GPU's (cores per GPU · p_cpu · gpus / cpus), and its parameter servers
// take ps.cpus cores each on the servers whose cores are cheapest. Worked by hand.
TEST(OasisReferencePricing, PricesCoresAndParameterServersByHand) {
  const std::vector<Server> servers = {{0, 2, 8.0}, {0, 2, 8.0}};
  const ParameterServers ps{0.5, 2.0};  // one parameter server per two workers, 2 cores each
  std::vector<int> used = {0, 0};
  std::vector<double> cores = {4.0, 0.0};  // half of server 0's cores promised
  // Server 0: GPU 1 + 2 cores · 16^(1/2) · 2 / 8 = 1 + 2 = 3 per worker; server 1: 1 + 2 ·
  // 1 · 2 / 8 = 1.5. Two workers go to server 1 (3.0), using 4 of its cores; their one
  // parameter server's cores cost 16^(4/8) · 2 / 8 = 1 per core on either server (ties to
  // server 0): 2 cores, 2.0. Total 5.
  const auto placed =
      ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), cores.data()}, 2.0, 0, 2);
  ASSERT_TRUE(placed.has_value());
  EXPECT_DOUBLE_EQ(placed->first, 5.0);
  EXPECT_EQ(placed->second.gpus, (std::vector<GpuPlacement>{{1, 2}}));
  EXPECT_EQ(placed->second.cpus, (std::vector<CpuPlacement>{{1, 4.0}, {0, 2.0}}));
  // With 5 cores per worker server 1 (8 cores) holds one and server 0 (4 left) none.
  EXPECT_FALSE(ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), cores.data()}, 5.0, 0, 2)
                   .has_value());
  // Both servers with 4 cores left and 3 cores per worker: one worker on each at 1 + 3 · 4 · 2
  // / 8 = 4 (cost 8), leaving 1 core on each: no room for the parameter server's 2 ...
  cores = {4.0, 4.0};
  EXPECT_FALSE(ReferenceGreedy(servers, kCurve, ps, SlotView{used.data(), cores.data()}, 3.0, 0, 2)
                   .has_value());
  // ... which a job without parameter servers does not need.
  const auto spread = ReferenceGreedy(servers, kCurve, ParameterServers{0.0, 2.0},
                                      SlotView{used.data(), cores.data()}, 3.0, 0, 2);
  ASSERT_TRUE(spread.has_value());
  EXPECT_DOUBLE_EQ(spread->first, 8.0);
  EXPECT_EQ(spread->second.gpus, (std::vector<GpuPlacement>{{0, 1}, {1, 1}}));
}

}  // namespace
}  // namespace gavel::policy::oasis
