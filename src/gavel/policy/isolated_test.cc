// Tests of the two closed-form policies: isolated and proportional.
#include "gavel/policy/isolated.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gavel/policy/policy_test_support.h"
#include "gavel/policy/proportional.h"

namespace gavel::policy {
namespace {

// Jobs 1, 2, ... of the given scale factors, each at 1 step/s on every type.
PolicyInput UnitInput(const std::vector<std::string>& types, const std::vector<double>& counts,
                      const std::vector<int>& scale_factors) {
  std::vector<TestJob> jobs;
  for (std::size_t i = 0; i < scale_factors.size(); ++i) {
    jobs.push_back({i + 1, scale_factors[i], std::vector<double>(types.size(), 1.0)});
  }
  return MakeInput(types, counts, jobs);
}

// 2 k80 and 4 v100; jobs of 1, 4 and 1 GPUs (m = 3). Each job first gets c_j / (3 s_i):
// the 1-GPU jobs (2/3, 4/3), summing to 2, scaled to (1/3, 2/3); the 4-GPU job (1/6, 1/3),
// summing to 1/2, unchanged. GPUs used: k80 1/3 + 4/6 + 1/3 = 4/3 <= 2,
// v100 2/3 + 4/3 + 2/3 = 8/3 <= 4.
TEST(IsolatedTest, HandWorkedAllocation) {
  const PolicyOutput out =
      Allocated(*MakeIsolated(PolicyOptions{}), UnitInput({"k80", "v100"}, {2, 4}, {1, 4, 1}));
  EXPECT_DOUBLE_EQ(out.allocation(0, 0), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(out.allocation(0, 1), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(out.allocation(1, 0), 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(out.allocation(1, 1), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(out.allocation(2, 0), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(out.allocation(2, 1), 2.0 / 3.0);
  EXPECT_EQ(out.status, AllocationStatus::kHeuristic);
  EXPECT_FALSE(out.objective.has_value());
  EXPECT_EQ(out.pair_allocation.rows(), 0u);
}

// Rows never exceed 1 and no type is over its GPU count: Σ_i s_i c_j / (m s_i) / r_i <= c_j
// because every r_i >= 1.
TEST(IsolatedTest, FeasibleOnRandomClusters) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<double> counts = {static_cast<double>(1 + rng() % 8),
                                        static_cast<double>(1 + rng() % 8),
                                        static_cast<double>(1 + rng() % 8)};
    std::vector<int> scale_factors(1 + rng() % 12);
    for (int& s : scale_factors) s = 1 << (rng() % 4);
    const PolicyInput input = UnitInput({"k80", "p100", "v100"}, counts, scale_factors);
    const PolicyOutput out = Allocated(*MakeIsolated(PolicyOptions{}), input);
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      EXPECT_LE(out.allocation.RowSum(i), 1.0 + 1e-12);
      for (std::size_t j = 0; j < 3; ++j) EXPECT_GE(out.allocation(i, j), 0.0);
    }
    for (std::size_t j = 0; j < 3; ++j) {
      double used = 0.0;
      for (std::size_t i = 0; i < input.num_jobs(); ++i) {
        used += scale_factors[i] * out.allocation(i, j);
      }
      EXPECT_LE(used, counts[j] + 1e-9);
    }
  }
}

// Proportional, as the original: every job gets c_j / Σ_t c_t of each type whatever its scale
// factor and the number of jobs: (2/6, 4/6) here, rows summing to exactly 1.
TEST(ProportionalTest, HandWorkedAllocationUnderCompat) {
  PolicyOptions compat;
  compat.compat_gavel = true;
  for (const std::vector<int>& scale_factors :
       {std::vector<int>{1}, std::vector<int>{1, 4, 1}, std::vector<int>(7, 2)}) {
    const PolicyOutput out = Allocated(*MakeProportional(compat),
                                       UnitInput({"k80", "v100"}, {2, 4}, scale_factors));
    ASSERT_EQ(out.allocation.rows(), scale_factors.size());
    for (std::size_t i = 0; i < scale_factors.size(); ++i) {
      EXPECT_DOUBLE_EQ(out.allocation(i, 0), 1.0 / 3.0);
      EXPECT_DOUBLE_EQ(out.allocation(i, 1), 2.0 / 3.0);
      EXPECT_DOUBLE_EQ(out.allocation.RowSum(i), 1.0);
    }
    EXPECT_EQ(out.status, AllocationStatus::kHeuristic);
  }
}

// By default the shares are scaled by min(1, C / Σ s_k) so the cluster can honour them. With
// 6 GPUs: one 1-GPU job or {1, 4, 1} (demand 1 or 6) keep (1/3, 2/3); seven 2-GPU jobs demand
// 14, so every row is scaled by 6/14 = 3/7 to (1/7, 2/7): k80 then holds 7·2·(1/7) = 2 GPUs
// and v100 7·2·(2/7) = 4, exactly full.
TEST(ProportionalTest, HandWorkedAllocationFitsCapacityByDefault) {
  const std::vector<std::pair<std::vector<int>, double>> cases = {
      {{1}, 1.0}, {{1, 4, 1}, 1.0}, {std::vector<int>(7, 2), 3.0 / 7.0}};
  for (const auto& [scale_factors, fit] : cases) {
    const PolicyOutput out = Allocated(*MakeProportional(PolicyOptions{}),
                                       UnitInput({"k80", "v100"}, {2, 4}, scale_factors));
    for (std::size_t i = 0; i < scale_factors.size(); ++i) {
      EXPECT_DOUBLE_EQ(out.allocation(i, 0), fit / 3.0);
      EXPECT_DOUBLE_EQ(out.allocation(i, 1), 2.0 * fit / 3.0);
    }
  }
}

TEST(ClosedFormTest, EmptyInputGivesEmptyAllocation) {
  const PolicyInput input = UnitInput({"k80", "v100"}, {2, 4}, {});
  EXPECT_EQ(Allocated(*MakeIsolated(PolicyOptions{}), input).allocation.rows(), 0u);
  EXPECT_EQ(Allocated(*MakeProportional(PolicyOptions{}), input).allocation.rows(), 0u);
}

}  // namespace
}  // namespace gavel::policy
