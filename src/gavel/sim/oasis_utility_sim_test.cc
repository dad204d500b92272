// Whole simulations of oasis against drf and yarn_cs by total utility, on the workloads where
// OASiS's plans used to lose to them: multi-GPU jobs on 4-GPU servers with the Philly
// physics (placement penalty, restart overhead, failures), at a light and a moderate load.
// At the light load large gangs were rejected or crawled on the slow GPU type while small
// jobs' long promises held the fast ones; deferral and urgency-first rounds while every job
// fits (docs/policies.md "oasis", "Deferral and urgency") win them back. Summed over seeds
// per point (one seed's total is dominated by a few large jobs), oasis must earn more than
// each baseline.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gavel/core/check.h"
#include "gavel/core/shipped_table.h"
#include "gavel/sim/physics.h"
#include "gavel/sim/sim_test_support.h"

namespace gavel::sim {
namespace {

SimulationOptions RealisticRun(const std::string& policy, std::uint64_t seed, double jobs_per_hour,
                               UtilityFamily family) {
  SimulationOptions o = simtest::RealisticMultiGpuRun(policy, seed, jobs_per_hour);
  o.generator->utility = family;
  return o;
}

TEST(OasisUtilitySimTest, EarnsMoreThanDrfAndYarnCsOnRealisticClusters) {
  for (const double rate : {0.5, 1.0}) {
    for (const UtilityFamily family : {UtilityFamily::kSigmoid, UtilityFamily::kLinear}) {
      const std::string point = std::to_string(rate) + " jobs/h, " + UtilityFamilyName(family);
      double oasis = 0.0;
      double drf = 0.0;
      double yarn = 0.0;
      for (std::uint64_t seed = 0; seed < 5; ++seed) {
        const SimulationResult o = simtest::MustSimulate(RealisticRun("oasis", seed, rate, family));
        ASSERT_TRUE(o.has_utility);
        EXPECT_LE(o.utilization, 1.0 + 1e-9);
        oasis += o.total_utility;
        drf += simtest::MustSimulate(RealisticRun("drf", seed, rate, family)).total_utility;
        yarn += simtest::MustSimulate(RealisticRun("yarn_cs", seed, rate, family)).total_utility;
      }
      EXPECT_GT(oasis, drf) << point;
      EXPECT_GT(oasis, yarn) << point;
      std::printf("%s: oasis %.1f drf %.1f yarn_cs %.1f\n", point.c_str(), oasis, drf, yarn);
    }
  }
}

}  // namespace
}  // namespace gavel::sim
