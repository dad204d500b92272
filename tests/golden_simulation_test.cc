// Golden tests: whole simulations under --compat gavel against runs of the original Python
// implementation (shared/reference-runs, README.md there). The fidelity target is the average
// JCT over the window (continuous runs) and the makespan (static runs) within 1%; rounds are
// checked loosely (5%) too: they show whether the mechanism took roughly the same path (the
// end of a run hinges on its last window job, so it moves more than the average).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gavel/core/shipped_table.h"
#include "gavel/core/snapshot.h"
#include "gavel/sim/simulator.h"

namespace gavel::sim {
namespace {

std::string ReferenceDir() { return std::string(GAVEL_SOURCE_DIR) + "/../shared/reference-runs"; }

nlohmann::json ReadSummary(const std::string& name) {
  std::ifstream in(ReferenceDir() + "/" + name + ".summary.json");
  GAVEL_CHECK_MSG(in.good(), name.c_str());
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

SimulationOptions ReferenceOptions(const std::string& policy, double lam, std::size_t start,
                                   std::size_t end) {
  SimulationOptions o;
  o.cluster = {{"v100", 8, 1}, {"p100", 8, 1}, {"k80", 8, 1}};
  o.throughputs = ShippedThroughputTable();
  o.policy = policy;
  o.seed = 0;
  o.compat = mechanism::Compat::Gavel();
  workload::GeneratorOptions g;
  g.seed = 0;
  g.mean_interarrival = Seconds(lam);
  o.generator = g;
  o.window_start = start;
  o.window_end = end;
  return o;
}

struct ContinuousRun {
  const char* policy;
  double lam;
  double expected_average_jct;  // reference-runs/README.md
  // Relative. Max-min fairness solves its LPs by ECOS's iterations (docs/differences.md,
  // "Fidelity"): its four runs agree to 0.03%, so 0.2% catches a step back to another
  // optimal point (0.6% with Clp's central point).
  double tolerance = 0.01;
};

class ContinuousGoldenTest : public ::testing::TestWithParam<ContinuousRun> {};

TEST_P(ContinuousGoldenTest, AverageJctMatchesTheOriginal) {
  const ContinuousRun& run = GetParam();
  const auto result = Simulate(ReferenceOptions(run.policy, run.lam, 200, 400));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_NEAR(result->average_jct_seconds, run.expected_average_jct,
              run.tolerance * run.expected_average_jct);
  EXPECT_EQ(result->window_jobs_completed, 200u);
  // Rounds and the end time come from the reference runs' summaries.
  if (!std::filesystem::exists(ReferenceDir())) GTEST_SKIP() << "no shared/reference-runs";
  const nlohmann::json summary =
      ReadSummary(std::string("cont_") + run.policy + "_c8-8-8_lam" +
                  std::to_string(static_cast<int>(run.lam)) + "_seed0_s200_e400");
  const double rounds = summary["rounds"].get<double>();
  EXPECT_NEAR(static_cast<double>(result->rounds), rounds, 0.05 * rounds);
  const double end = summary["final_timestamp_s"].get<double>();
  EXPECT_NEAR(result->makespan_seconds, end, 0.05 * end);
}

INSTANTIATE_TEST_SUITE_P(ReferenceRuns, ContinuousGoldenTest,
                         ::testing::Values(ContinuousRun{"max_min_fairness_perf", 7200, 51586.449, 0.002},
                                           ContinuousRun{"max_min_fairness_perf", 3600, 50879.961, 0.002},
                                           ContinuousRun{"max_min_fairness", 7200, 70203.301, 0.002},
                                           ContinuousRun{"max_min_fairness", 3600, 71613.434, 0.002},
                                           ContinuousRun{"fifo_perf", 7200, 47015.247},
                                           ContinuousRun{"fifo_perf", 3600, 52224.149},
                                           ContinuousRun{"fifo", 7200, 56183.725},
                                           ContinuousRun{"fifo", 3600, 86338.158},
                                           ContinuousRun{"gandiva", 7200, 53925.086},
                                           ContinuousRun{"gandiva", 3600, 58500.637}),
                         [](const ::testing::TestParamInfo<ContinuousRun>& param) {
                           return std::string(param.param.policy) + "_lam" +
                                  std::to_string(static_cast<int>(param.param.lam));
                         });

TEST(StaticGoldenTest, FifoMakespanWithinOnePercentOfTheOriginal) {
  const auto result = Simulate(ReferenceOptions("fifo", 0.0, 0, 100));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_NEAR(result->makespan_seconds, 897559.62, 0.01 * 897559.62);
  EXPECT_NEAR(result->average_jct_seconds, 225870.186, 0.01 * 225870.186);
  EXPECT_EQ(result->jobs_admitted, 100u);
}

// The makespan policy's LPs are pure feasibility problems: which feasible point the solver
// returns decides which jobs run where. Under --compat gavel each is solved by ECOS's own
// iterations (lp/ecos_lp.h), as the original's cvxpy + ECOS did, which reproduces the
// original's run (a central point instead gave a makespan 1.6% off and an average JCT 12%
// off; docs/differences.md, "Fidelity").
TEST(StaticGoldenTest, MinTotalDurationWithinOnePercentOfTheOriginal) {
  const auto result = Simulate(ReferenceOptions("min_total_duration_perf", 0.0, 0, 100));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_NEAR(result->makespan_seconds, 448772.87, 0.01 * 448772.87);
  EXPECT_NEAR(result->average_jct_seconds, 152361.863, 0.01 * 152361.863);
  EXPECT_EQ(result->jobs_admitted, 100u);
  if (!std::filesystem::exists(ReferenceDir())) GTEST_SKIP() << "no shared/reference-runs";
  const nlohmann::json summary =
      ReadSummary("static_min_total_duration_perf_c8-8-8_lam0_seed0_s0_e100");
  // The same rounds as the original (1,248), not only the same end.
  const double rounds = summary["rounds"].get<double>();
  EXPECT_NEAR(static_cast<double>(result->rounds), rounds, 0.01 * rounds);
}

// Our own regression anchors for the default (fixed) behaviour: the same workloads without
// compat must stay close to the original (the fixes change details, not the policy).
TEST(DefaultBehaviourTest, StaysWithinAFewPercentOfTheOriginalForMaxMinFairness) {
  SimulationOptions o = ReferenceOptions("max_min_fairness_perf", 7200, 200, 400);
  o.compat = mechanism::Compat::None();
  const auto result = Simulate(o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_NEAR(result->average_jct_seconds, 51586.449, 0.05 * 51586.449);
}

}  // namespace
}  // namespace gavel::sim
