// Whole simulations of oasis and gandiva_introspective against the baselines their papers
// argue against, on workloads where the papers' headline directions should show:
//   * OASiS earns more total utility than FIFO and DRF (generated jobs with sigmoid and
//     linear utilities, some of them elastic, on a loaded cluster), and every window job is
//     either completed or rejected (none lost);
//   * the introspective Gandiva (time slicing) beats the capacity scheduler's FIFO without
//     preemption on average JCT on the Philly-like workload (heavy-tailed, sizes unknown).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gavel/core/shipped_table.h"
#include "gavel/sim/sim_test_support.h"
#include "gavel/workload/philly_workload.h"

namespace gavel::sim {
namespace {

SimulationOptions UtilityRun(const std::string& policy, std::uint64_t seed, UtilityFamily family) {
  SimulationOptions o;
  o.cluster = {{"v100", 8, 1}, {"p100", 8, 1}, {"k80", 8, 1}};
  o.throughputs = ShippedThroughputTable();
  o.policy = policy;
  o.seed = seed;
  workload::GeneratorOptions g;
  g.seed = seed;
  g.mean_interarrival = Seconds(1800.0);  // 2 jobs/hour: more than 24 GPUs can serve well
  g.generate_multi_gpu_jobs = true;
  g.utility = family;
  g.elastic_fraction = 0.5;
  g.max_jobs = 60;
  o.generator = g;
  o.window_start = 0;
  o.window_end = 60;
  o.saturation_limit = Seconds(1e8);
  return o;
}

TEST(FieldSchedulersSimTest, OasisEarnsMoreUtilityThanFifoAndDrf) {
  // Summed over seeds per utility family (a lightly loaded seed can tie).
  for (const UtilityFamily family : {UtilityFamily::kSigmoid, UtilityFamily::kLinear}) {
    double oasis_total = 0.0;
    double fifo_total = 0.0;
    double drf_total = 0.0;
    for (std::uint64_t seed : {0, 1, 2}) {
      const SimulationResult oasis = simtest::MustSimulate(UtilityRun("oasis", seed, family));
      ASSERT_TRUE(oasis.has_utility);
      EXPECT_EQ(oasis.window_jobs_completed + oasis.jobs_rejected, 60u) << "seed " << seed;
      EXPECT_LE(oasis.utilization, 1.0 + 1e-9);
      oasis_total += oasis.total_utility;
      for (const std::string baseline : {"fifo", "drf"}) {
        const SimulationResult r = simtest::MustSimulate(UtilityRun(baseline, seed, family));
        EXPECT_EQ(r.jobs_rejected, 0u) << baseline;
        (baseline == "fifo" ? fifo_total : drf_total) += r.total_utility;
      }
    }
    EXPECT_GT(oasis_total, fifo_total) << UtilityFamilyName(family);
    EXPECT_GT(oasis_total, drf_total) << UtilityFamilyName(family);
    std::printf("%s: oasis %.1f fifo %.1f drf %.1f\n", UtilityFamilyName(family), oasis_total,
                fifo_total, drf_total);
  }
}

TEST(FieldSchedulersSimTest, IntrospectiveGandivaBeatsTheCapacityScheduler) {
  double gandiva = 0.0;
  double yarn = 0.0;
  for (std::uint64_t seed : {0, 1, 2}) {
    const SimulationResult g = simtest::MustSimulate(simtest::PhillyRun("gandiva_introspective", seed));
    const SimulationResult y = simtest::MustSimulate(simtest::PhillyRun("yarn_cs", seed));
    EXPECT_EQ(g.window_jobs_completed, 60u) << "seed " << seed;
    EXPECT_LE(g.utilization, 1.0 + 1e-9);
    gandiva += g.average_jct_seconds;
    yarn += y.average_jct_seconds;
  }
  EXPECT_LT(gandiva, yarn) << "gandiva_introspective " << gandiva / 3 << " s, yarn_cs " << yarn / 3;
}

}  // namespace
}  // namespace gavel::sim
