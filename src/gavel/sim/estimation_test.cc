// The estimator inside whole simulations: when it is on, what it reports, and that runs still
// finish every job (pairs that truly cannot share a GPU fail once, are measured, and are not
// chosen again). Exactness of the estimates is tested in estimator/throughput_estimator_test.
#include "gavel/sim/estimation.h"

#include <gtest/gtest.h>

#include "gavel/core/shipped_table.h"
#include "gavel/workload/job_table.h"

namespace gavel::sim {
namespace {

SimulationOptions PackedRun(double p, int k, bool multi_gpu = false) {
  SimulationOptions o;
  o.cluster = {{"v100", 1, 1}, {"p100", 1, 1}, {"k80", 1, 1}};
  o.throughputs = ShippedThroughputTable();
  o.policy = "max_min_fairness_packed";
  o.seed = 1;
  if (multi_gpu) o.cluster = {{"v100", 2, 1}, {"p100", 2, 1}, {"k80", 2, 1}};
  o.profiling_percentage = p;
  o.num_reference_models = k;
  const auto table = workload::JobTable();
  for (int i = 0; i < 14; ++i) {
    workload::TraceJob job;
    job.job_type = table[static_cast<std::size_t>((i * 7) % 26)].model;
    job.scale_factor = multi_gpu && i % 5 == 0 ? 2 : 1;
    job.total_steps = 20000.0 + 3000.0 * i;
    job.arrival_time = Seconds(60.0 * i);
    o.trace.push_back(job);
  }
  return o;
}

TEST(SimEstimationTest, OffUnlessPackingAndSomethingIsUnknown) {
  const mechanism::ClusterLayout layout = *mechanism::ClusterLayout::Create({{"v100", 2, 1}});
  SimulationOptions o = PackedRun(1.0, 26);
  auto off = SimEstimation::Create(o, layout);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, nullptr);
  o.profiling_percentage = 0.5;
  o.policy = "max_min_fairness_perf";
  EXPECT_EQ(*SimEstimation::Create(o, layout), nullptr);
  o.policy = "max_min_fairness_packed";
  EXPECT_NE(*SimEstimation::Create(o, layout), nullptr);
  o.num_reference_models = 27;
  EXPECT_FALSE(SimEstimation::Create(o, layout).ok());
}

TEST(SimEstimationTest, EstimatedRunFinishesEveryJobAndReports) {
  const Result<SimulationResult> oracle = Simulate(PackedRun(1.0, 26));
  ASSERT_TRUE(oracle.ok()) << oracle.status().ToString();
  EXPECT_FALSE(oracle->throughput_estimation.has_value());
  EXPECT_NE(ResultToJson(*oracle).find("\"throughput_estimation\": null"), std::string::npos);

  const Result<SimulationResult> estimated = Simulate(PackedRun(0.3, 8));
  ASSERT_TRUE(estimated.ok()) << estimated.status().ToString();
  EXPECT_EQ(estimated->jobs_completed, 14u);
  ASSERT_TRUE(estimated->throughput_estimation.has_value());
  const ThroughputEstimationSummary& e = *estimated->throughput_estimation;
  EXPECT_EQ(e.jobs_matched, 14u);
  EXPECT_LE(e.jobs_matched_true_type, e.jobs_matched);
  EXPECT_GT(e.estimated_entries, 0);
  EXPECT_GT(e.mean_absolute_error, 0.0);
  EXPECT_LE(e.mean_absolute_error, 1.0);
  EXPECT_GT(e.pairs_measured, 0);
  EXPECT_NE(ResultToJson(*estimated).find("\"mean_absolute_error\""), std::string::npos);

  // Deterministic from the seed.
  const Result<SimulationResult> again = Simulate(PackedRun(0.3, 8));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->average_jct_seconds, estimated->average_jct_seconds);
  EXPECT_EQ(again->throughput_estimation->mean_absolute_error, e.mean_absolute_error);
}

TEST(SimEstimationTest, MultiGpuJobsAreEstimatedByDefaultAndRefusedUnderCompat) {
  const Result<SimulationResult> fine = Simulate(PackedRun(0.5, 10, /*multi_gpu=*/true));
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(fine->jobs_completed, 14u);
  SimulationOptions compat = PackedRun(0.5, 10, /*multi_gpu=*/true);
  compat.compat = mechanism::Compat::Gavel();
  const Result<SimulationResult> refused = Simulate(compat);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("single-GPU"), std::string::npos);
}

TEST(SimEstimationTest, IdealModeRefusesEstimation) {
  SimulationOptions o = PackedRun(0.5, 26);
  o.ideal = true;
  const Result<SimulationResult> r = Simulate(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--ideal"), std::string::npos);
}

}  // namespace
}  // namespace gavel::sim
