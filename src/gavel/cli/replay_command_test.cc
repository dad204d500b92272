// gavel replay's pieces without a cluster: the trace scaling, the comparison's arithmetic and
// the refusals before anything is submitted (replay_e2e_test runs it against a live daemon).
#include "gavel/cli/replay_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace gavel::cli {
namespace {

using ::testing::HasSubstr;

TEST(ScaleTraceTest, DividesArrivalsAndRoundsStepsToAtLeastOne) {
  workload::TraceJob a;
  a.job_type = "A3C";
  a.total_steps = 1234.0;
  a.arrival_time = Seconds(600.0);
  workload::TraceJob b = a;
  b.total_steps = 20.0;  // 20 / 60 rounds to 0: kept at 1
  b.arrival_time = Seconds(630.0);
  b.duration = Seconds(120.0);
  const std::vector<workload::TraceJob> scaled = ScaleTrace({a, b}, 60.0);
  ASSERT_EQ(scaled.size(), 2u);
  EXPECT_DOUBLE_EQ(scaled[0].arrival_time.value(), 10.0);
  EXPECT_DOUBLE_EQ(scaled[0].total_steps, 21.0);  // 20.57 rounded
  EXPECT_DOUBLE_EQ(scaled[1].arrival_time.value(), 10.5);
  EXPECT_DOUBLE_EQ(scaled[1].total_steps, 1.0);
  EXPECT_DOUBLE_EQ(scaled[1].duration->value(), 2.0);
  EXPECT_EQ(scaled[1].job_type, "A3C");
}

TEST(CompareResultsTest, RelativeDifferenceIsLiveOverSimulatedMinusOne) {
  sim::SimulationResult live;
  sim::SimulationResult simulated;
  live.average_jct_seconds = 110.0;
  simulated.average_jct_seconds = 100.0;
  live.makespan_seconds = 90.0;
  simulated.makespan_seconds = 120.0;
  live.utilization = 0.5;  // simulated 0: no ratio
  const std::vector<ComparedMetric> metrics = CompareResults(live, simulated);
  auto find = [&](const std::string& name) {
    for (const ComparedMetric& m : metrics) {
      if (m.name == name) return m;
    }
    ADD_FAILURE() << "no metric " << name;
    return ComparedMetric{};
  };
  EXPECT_DOUBLE_EQ(find("average JCT (s)").relative_difference, 0.1);
  EXPECT_DOUBLE_EQ(find("makespan (s)").relative_difference, -0.25);
  EXPECT_TRUE(std::isinf(find("utilization").relative_difference));
  EXPECT_DOUBLE_EQ(find("p50 JCT (s)").relative_difference, 0.0);  // both 0
  std::ostringstream text;
  PrintComparison(metrics, text);
  EXPECT_THAT(text.str(), HasSubstr("+10.0%"));
  EXPECT_THAT(text.str(), HasSubstr("-25.0%"));
  EXPECT_THAT(text.str(), HasSubstr("n/a"));
}

TEST(RunReplayTest, RefusesBadOptionsBeforeSubmittingAnything) {
  std::ostringstream out;
  ReplayOptions o;
  o.out_dir = "/tmp/unused";
  EXPECT_THAT(RunReplay(o, out).message(), HasSubstr("--trace"));
  o.trace_file = "/nonexistent/trace";
  o.time_scale = 0.0;
  EXPECT_THAT(RunReplay(o, out).message(), HasSubstr("--time-scale"));
  o.time_scale = 60.0;
  o.command = "   ";
  EXPECT_THAT(RunReplay(o, out).message(), HasSubstr("--command"));
  o.command = "";
  o.client.scheduler = "127.0.0.1:1";  // nothing listens on port 1
  o.client.timeout_seconds = 1.0;
  EXPECT_THAT(RunReplay(o, out).message(), HasSubstr("cannot reach the scheduler"));
}

}  // namespace
}  // namespace gavel::cli
