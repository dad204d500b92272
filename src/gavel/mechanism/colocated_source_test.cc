// The ColocatedThroughputSource port: pairs take their co-located throughputs from it, the
// plans and the packed policy act on them, and RefreshPair re-reads a pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "gavel/mechanism/round_scheduler.h"

namespace gavel::mechanism {
namespace {

constexpr char kTable[] = R"json({"v100": {
  "('A', 1)": {"null": 2.0, "('A', 1)": [1.0, 1.0], "('B', 1)": [0.2, 0.1]},
  "('B', 1)": {"null": 1.0, "('A', 1)": [0.1, 0.2], "('B', 1)": [0.6, 0.6]}}})json";

class FakeSource final : public ColocatedThroughputSource {
 public:
  std::array<double, 2> Colocated(JobId a, JobId b, int table_gpu_type) override {
    asked.push_back({a, b});
    EXPECT_EQ(table_gpu_type, 0);
    return value;
  }
  std::array<double, 2> value{1.9, 0.95};
  std::vector<std::array<JobId, 2>> asked;
};

bool HasPair(const RoundPlan& plan) {
  return std::any_of(plan.assignments.begin(), plan.assignments.end(),
                     [](const Assignment& a) { return a.combination.is_pair(); });
}

TEST(ColocatedSourceTest, PairsReadTheSourceAndRefreshPairRereadsIt) {
  auto table = ThroughputTable::Parse(kTable, "test table");
  ASSERT_TRUE(table.ok());
  const auto layout = ClusterLayout::Create({{"v100", 1, 1}});
  ASSERT_TRUE(layout.ok());
  ManualClock clock;
  auto source = std::make_shared<FakeSource>();
  SchedulerOptions options;
  options.policy = "max_min_fairness_packed";
  options.colocated = source;
  auto made = RoundScheduler::Create(*layout,
                                     std::make_shared<const ThroughputTable>(std::move(*table)),
                                     options, &clock);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  RoundScheduler& s = **made;
  JobDescription job;
  job.total_steps = 1e6;
  job.type = {"A", 1};
  const JobId a(0);
  ASSERT_TRUE(s.AddJob(a, job).ok());
  job.type = {"B", 1};
  const JobId b(1);
  ASSERT_TRUE(s.AddJob(b, job).ok());
  ASSERT_EQ(source->asked.size(), 1u);
  EXPECT_EQ(source->asked[0][0], a);
  EXPECT_EQ(source->asked[0][1], b);

  // The table says sharing is ruinous (0.2, 0.1 steps/s); the source says it is nearly free,
  // so the packed policy runs the pair, at the source's throughputs.
  const Result<RoundPlan> first = s.PlanRound();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->assignments.size(), 1u);
  ASSERT_TRUE(first->assignments[0].combination.is_pair());
  EXPECT_EQ(first->assignments[0].expected_throughput, (std::vector<double>{1.9, 0.95}));

  // The pair cannot share after all: re-read, it is never chosen again.
  source->value = {0.0, 0.0};
  ASSERT_TRUE(s.RefreshPair(b, a).ok());
  EXPECT_EQ(source->asked.size(), 2u);
  EXPECT_EQ(s.RefreshPair(a, a).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.RefreshPair(a, JobId(7)).code(), StatusCode::kNotFound);
  for (const Assignment& x : first->assignments) {
    for (const WorkerId w : x.workers) {
      WorkerReport r{x.combination, w, {360.0, 360.0}, {Seconds(360.0), Seconds(360.0)},
                     Seconds(360.0)};
      clock.Set(Seconds(360.0));
      ASSERT_TRUE(s.OnWorkerDone(r).ok());
    }
  }
  const Result<RoundPlan> second = s.PlanRound();
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(HasPair(*second));
}

}  // namespace
}  // namespace gavel::mechanism
