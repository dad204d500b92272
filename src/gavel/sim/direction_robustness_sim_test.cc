// The papers' headline directions (docs/policies.md, "How robust the papers' directions
// are") on workloads other than
// those of queue_disciplines_sim_test.cc and field_schedulers_sim_test.cc: other generators
// (the original's multi-GPU mix, hyper-parameter searches, Philly-like sizes), other cluster
// shapes (homogeneous 16:0:0 and 0:0:24, 8:8:8) and other seeds (10 and 11), each a contended
// burst of jobs at time 0 that drains (every window job finishes, so averages compare the same
// jobs). scripts/direction-grid.py runs the wider grid (docs/policies.md, "How robust the
// papers' directions are"); these are points of it where the mechanism each paper names has
// room to act, checked against the baselines' own runs, never against recorded numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gavel/core/shipped_table.h"
#include "gavel/sim/sim_test_support.h"
#include "gavel/workload/generator.h"
#include "gavel/workload/philly_workload.h"

namespace gavel::sim {
namespace {

struct Workload {
  std::string name;
  std::vector<int> cluster;  // v100:p100:k80 GPUs, one per server
  bool philly = false;       // Philly-like sizes and durations, else the original's generator
  bool multi_gpu = true;     // the original's generator: 1/2/4/8-GPU jobs
  double hpo_fraction = 0.0;
  int jobs = 48;             // drawn jobs, all at time 0
};

SimulationOptions Burst(const Workload& w, const std::string& policy, std::uint64_t seed) {
  SimulationOptions o;
  const char* const types[] = {"v100", "p100", "k80"};
  for (std::size_t t = 0; t < 3; ++t) {
    if (w.cluster[t] > 0) o.cluster.push_back({types[t], w.cluster[t], 1});
  }
  o.throughputs = ShippedThroughputTable();
  o.policy = policy;
  o.seed = seed;
  workload::GeneratorOptions g;
  g.seed = seed;
  g.mean_interarrival = Seconds(0.0);  // a burst: every job at time 0
  g.generate_multi_gpu_jobs = w.multi_gpu;
  g.hpo_fraction = w.hpo_fraction;
  if (w.philly) {
    auto table =
        workload::PhillyJobDistribution::LoadCsv(workload::DefaultPhillyDistributionFile());
    GAVEL_CHECK_MSG(table.ok(), table.status().ToString().c_str());
    auto philly = std::make_shared<workload::PhillyWorkloadOptions>();
    philly->distribution =
        std::make_shared<const workload::PhillyJobDistribution>(std::move(*table));
    g.philly_workload = std::move(philly);
  }
  g.max_jobs = static_cast<std::size_t>(w.jobs);
  o.generator = g;
  o.window_start = 0;
  // `jobs` drawn jobs; a static workload's window holds the whole burst, a search's extra
  // trials included (sim/setup.cc).
  o.window_end = static_cast<std::size_t>(w.jobs);
  o.saturation_limit = Seconds(1e9);  // a guard only: every window job must finish
  return o;
}

constexpr std::uint64_t kSeeds[] = {10, 11};

// Runs every policy on every seed; returns metric(result) summed over the seeds per policy,
// after checking that no window job was lost and no GPU type over-committed.
std::map<std::string, double> Summed(const Workload& w, const std::vector<std::string>& policies,
                                     bool fairness, double (*metric)(const SimulationResult&)) {
  std::map<std::string, double> sum;
  for (const std::uint64_t seed : kSeeds) {
    for (const std::string& policy : policies) {
      SimulationOptions o = Burst(w, policy, seed);
      o.fairness = fairness;
      const SimulationResult r = simtest::MustSimulate(o);
      EXPECT_FALSE(r.saturated) << w.name << " " << policy << " seed " << seed;
      EXPECT_GE(r.window_end, static_cast<std::size_t>(w.jobs)) << w.name;
      EXPECT_EQ(r.window_jobs_completed + r.jobs_rejected, r.window_end)
          << w.name << " " << policy << " seed " << seed;
      EXPECT_LE(r.utilization, 1.0 + 1e-9) << policy;
      sum[policy] += metric(r);
      std::printf("%-22s seed %2d %-22s %.6g\n", w.name.c_str(), static_cast<int>(seed),
                  policy.c_str(), metric(r));
    }
  }
  return sum;
}

double AverageJct(const SimulationResult& r) { return r.average_jct_seconds; }
double MaxRho(const SimulationResult& r) { return r.fairness ? r.fairness->max_rho : 0.0; }

const Workload kPhillyHomogeneous{.name = "philly 16:0:0", .cluster = {16, 0, 0}, .philly = true};
const Workload kMultiGpu{.name = "gavel -m 8:8:8", .cluster = {8, 8, 8}};
const Workload kHpoK80{.name = "hpo 0:0:24", .cluster = {0, 0, 24}, .multi_gpu = false,
                       .hpo_fraction = 0.5,
                       .jobs = 24};
const Workload kSingleGpuK80{.name = "gavel 1-GPU 0:0:24", .cluster = {0, 0, 24},
                             .multi_gpu = false, .jobs = 60};

TEST(DirectionRobustnessSimTest, TiresiasBeatsTheCapacitySchedulerByAWideMargin) {
  // Heavy-tailed sizes the scheduler does not know, contended: 2DAS's least attained service
  // lets the short jobs past the long ones that FIFO without preemption leaves in front.
  for (const Workload& w : {kPhillyHomogeneous, kMultiGpu}) {
    const auto jct = Summed(w, {"tiresias_2das", "yarn_cs"}, false, AverageJct);
    EXPECT_LT(jct.at("tiresias_2das"), 0.8 * jct.at("yarn_cs")) << w.name;
  }
}

TEST(DirectionRobustnessSimTest, IntrospectiveGandivaBeatsTheCapacityScheduler) {
  // Time slicing: a job waiting behind long ones gets its turn within a round or so.
  for (const Workload& w : {kPhillyHomogeneous, kMultiGpu}) {
    const auto jct = Summed(w, {"gandiva_introspective", "yarn_cs"}, false, AverageJct);
    EXPECT_LT(jct.at("gandiva_introspective"), jct.at("yarn_cs")) << w.name;
  }
}

TEST(DirectionRobustnessSimTest, ThemisHasTheLowestWorstCaseRho) {
  // Apps of several trials (hyper-parameter searches) and a heterogeneous mix: the apps
  // furthest behind their fair finish time bid first.
  for (const Workload& w : {kHpoK80, kMultiGpu}) {
    const auto rho = Summed(
        w, {"themis", "tiresias_2das", "gandiva_introspective", "yarn_cs"}, true, MaxRho);
    for (const char* other : {"tiresias_2das", "gandiva_introspective", "yarn_cs"}) {
      EXPECT_LT(rho.at("themis"), rho.at(other)) << w.name << " against " << other;
    }
  }
}

TEST(DirectionRobustnessSimTest, OasisEarnsMoreUtilityThanFifoAndDrf) {
  // More work than the cluster can serve before the utilities decay: admission control
  // spends the GPUs on the jobs that can still earn.
  for (const UtilityFamily family : {UtilityFamily::kSigmoid, UtilityFamily::kLinear}) {
    for (Workload w : {kSingleGpuK80, kHpoK80}) {
      w.name += std::string(" ") + UtilityFamilyName(family);
      std::map<std::string, double> total;
      for (const std::uint64_t seed : kSeeds) {
        for (const std::string policy : {"oasis", "fifo", "drf"}) {
          SimulationOptions o = Burst(w, policy, seed);
          o.generator->utility = family;
          const SimulationResult r = simtest::MustSimulate(o);
          ASSERT_TRUE(r.has_utility);
          EXPECT_GE(r.window_end, static_cast<std::size_t>(w.jobs)) << w.name;
          EXPECT_EQ(r.window_jobs_completed + r.jobs_rejected, r.window_end)
              << w.name << " " << policy;
          if (policy != "oasis") {
            EXPECT_EQ(r.jobs_rejected, 0u) << policy;
          }
          total[policy] += r.total_utility;
          std::printf("%-30s seed %2d %-6s utility %.1f rejected %zu\n", w.name.c_str(),
                      static_cast<int>(seed), policy.c_str(), r.total_utility, r.jobs_rejected);
        }
      }
      EXPECT_GT(total.at("oasis"), total.at("fifo")) << w.name;
      EXPECT_GT(total.at("oasis"), total.at("drf")) << w.name;
    }
  }
}

}  // namespace
}  // namespace gavel::sim
