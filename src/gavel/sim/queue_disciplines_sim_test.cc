// Whole simulations of the non-LP schedulers (tiresias_2das, yarn_cs, drf) on the Philly-like
// workload (las_perf's on realistic clusters at the end): every window job finishes (none lost, none stuck behind a scheduler that forgets
// it), the cluster is never over-committed, and Tiresias' headline direction holds: with
// heavy-tailed durations the scheduler does not know, least attained service beats the
// capacity scheduler's FIFO without preemption on average JCT by a wide margin.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "gavel/core/shipped_table.h"
#include "gavel/sim/sim_test_support.h"
#include "gavel/workload/philly_workload.h"

namespace gavel::sim {
namespace {

TEST(QueueDisciplinesSimTest, EveryJobFinishesAndTiresiasBeatsTheCapacityScheduler) {
  double tiresias = 0.0;
  double yarn = 0.0;
  for (std::uint64_t seed : {0, 1, 2, 3, 4, 5}) {
    double tiresias_seed = 0.0;
    double yarn_seed = 0.0;
    for (const std::string policy : {"tiresias_2das", "yarn_cs", "drf"}) {
      const SimulationResult r = simtest::MustSimulate(simtest::PhillyRun(policy, seed));
      EXPECT_FALSE(r.saturated) << policy;
      EXPECT_EQ(r.window_jobs_completed, 60u) << policy << " seed " << seed;
      EXPECT_LE(r.utilization, 1.0 + 1e-9) << policy;
      if (policy == "tiresias_2das") tiresias_seed = r.average_jct_seconds;
      if (policy == "yarn_cs") yarn_seed = r.average_jct_seconds;
    }
    EXPECT_LT(tiresias_seed, yarn_seed) << "seed " << seed;
    std::printf("seed %d tiresias_2das %.0f s yarn_cs %.0f s\n", static_cast<int>(seed),
                tiresias_seed, yarn_seed);
    tiresias += tiresias_seed;
    yarn += yarn_seed;
  }
  // Measured: 1.44e6 against 3.96e6 s summed over the six seeds (ratio 0.36; per seed 0.23 to
  // 0.67; 2.11e6 before 2DAS stopped moving running jobs off their type for newcomers).
  EXPECT_LT(tiresias, 0.6 * yarn) << "tiresias " << tiresias / 2 << " s, yarn_cs " << yarn / 2;
}

TEST(QueueDisciplinesSimTest, ThemisHasTheLowestWorstCaseRho) {
  // Themis' headline direction: a lower worst-case finish-time fairness ρ (JCT / JCT under
  // `isolated`) than Tiresias, the introspective Gandiva and the capacity scheduler, on the
  // same workload.
  std::map<std::string, double> max_rho;
  for (std::uint64_t seed : {0, 1, 2}) {
    for (const std::string policy :
         {"themis", "themis:f=0", "tiresias_2das", "tiresias_gittins", "yarn_cs", "tetris",
          "gandiva_introspective"}) {
      SimulationOptions o = simtest::PhillyRun(policy, seed);
      o.fairness = true;
      const SimulationResult r = simtest::MustSimulate(o);
      EXPECT_EQ(r.window_jobs_completed, 60u) << policy << " seed " << seed;
      EXPECT_LE(r.utilization, 1.0 + 1e-9) << policy;
      ASSERT_TRUE(r.fairness.has_value()) << policy;
      max_rho[policy] += r.fairness->max_rho / 3.0;
      std::printf("seed %d %-18s avg JCT %10.0f s  max rho %7.2f  mean rho %6.2f\n",
                  static_cast<int>(seed), policy.c_str(), r.average_jct_seconds,
                  r.fairness->max_rho, r.fairness->mean_rho);
    }
  }
  EXPECT_LT(max_rho["themis"], max_rho["tiresias_2das"]);
  EXPECT_LT(max_rho["themis"], max_rho["yarn_cs"]);
  EXPECT_LT(max_rho["themis"], max_rho["gandiva_introspective"]);
}

// las_perf's headline direction (docs/policies.md, "las_perf"): on a realistic cluster with
// multi-GPU jobs, least attained service that starts each job on its fastest type and trades
// fast GPUs by expected time saved beats Tiresias, agnostic or with types by comparative
// advantage, on average JCT summed over seeds, drains every run, and spends under 2 % of its
// busy GPU-time on restarts.
TEST(QueueDisciplinesSimTest, LasPerfBeatsTiresiasOnRealisticClustersWithFewRestarts) {
  for (const double rate : {0.6, 1.2}) {
    std::map<std::string, double> jct;
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      for (const std::string policy : {"las_perf", "tiresias_2das_perf", "tiresias_2das"}) {
        const SimulationResult r =
            simtest::MustSimulate(simtest::RealisticMultiGpuRun(policy, seed, rate));
        EXPECT_LE(r.utilization, 1.0 + 1e-9) << policy;
        if (policy == "las_perf") {
          EXPECT_FALSE(r.saturated) << rate << " jobs/h, seed " << seed;
          EXPECT_LT(r.restart_share, 0.02) << rate << " jobs/h, seed " << seed;
        }
        jct[policy] += r.average_jct_seconds;
      }
    }
    std::printf("%.1f jobs/h, average JCT summed over 5 seeds: las_perf %.0f s, "
                "tiresias_2das_perf %.0f s, tiresias_2das %.0f s\n",
                rate, jct["las_perf"], jct["tiresias_2das_perf"], jct["tiresias_2das"]);
    // Measured, summed over the five seeds: 3.39e5 s against 5.09e5 (tiresias_2das_perf) and
    // 5.11e5 (tiresias_2das) at 0.6 jobs/h; 3.78e5 against 5.30e5 and 5.33e5 at 1.2.
    EXPECT_LT(jct["las_perf"], jct["tiresias_2das_perf"]) << rate << " jobs/h";
    EXPECT_LT(jct["las_perf"], jct["tiresias_2das"]) << rate << " jobs/h";
  }
}

}  // namespace
}  // namespace gavel::sim
