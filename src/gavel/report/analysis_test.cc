#include "gavel/report/analysis.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gavel::report {
namespace {

const std::vector<MetricSpec> kMetrics = {
    {"jct", "average JCT", Direction::kLowerIsBetter, 3600.0, "h"},
    {"goodput", "goodput", Direction::kHigherIsBetter, 1.0, "jobs/h"},
    {"utilization", "utilisation", Direction::kNotRanked, 1.0, ""}};

Observation Failed(const std::string& policy, std::uint64_t seed, Outcome outcome) {
  Observation o;
  o.cluster = "4:4:4";
  o.policy = policy;
  o.rate = 2.0;
  o.seed = seed;
  o.outcome = outcome;
  return o;
}

Observation Drained(const std::string& policy, std::uint64_t seed, double jct,
                    double goodput = 1.0) {
  Observation o = Failed(policy, seed, Outcome::kDrained);
  o.metrics = {{"jct", jct}, {"goodput", goodput}, {"utilization", 0.5}};
  return o;
}

TEST(AnalyzeTest, APolicyThatFailsOneSeedIsReportedNotRankedOnTheOther) {
  std::vector<Observation> obs = {Drained("a", 0, 100.0), Drained("a", 1, 110.0),
                                  Drained("b", 0, 200.0), Drained("b", 1, 230.0),
                                  // c is the fastest on seed 0 but does not drain seed 1.
                                  Drained("c", 0, 10.0)};
  obs.push_back(Failed("c", 1, Outcome::kSaturated));
  const Analysis analysis = Analyze(obs, {"a", "b", "c"}, kMetrics);
  ASSERT_EQ(analysis.points.size(), 1u);
  const PointAnalysis& p = analysis.points[0];
  EXPECT_EQ(p.policies.at("c").outcome, Outcome::kSaturated);
  EXPECT_EQ(p.policies.at("c").drained_seeds, std::vector<std::uint64_t>{0});
  EXPECT_EQ(p.policies.at("c").seeds, (std::vector<std::uint64_t>{0, 1}));
  const Ranking* jct = p.RankingOf("jct");
  ASSERT_NE(jct, nullptr);
  ASSERT_EQ(jct->entries.size(), 2u);
  EXPECT_EQ(jct->entries[0].policy, "a");
  EXPECT_EQ(jct->entries[1].policy, "b");
  // b - a per seed: {100, 120}: mean 110, half-width t_{0.975,1} × 10 / sqrt(2) × sqrt(2)...
  // s = sqrt(((100-110)^2 + (120-110)^2) / 1) = 14.142, se = 10, half = 12.706 × 10.
  EXPECT_DOUBLE_EQ(jct->entries[1].versus_best.mean, 110.0);
  EXPECT_NEAR(*jct->entries[1].versus_best.half_width, 127.06, 0.01);
  EXPECT_TRUE(jct->entries[1].tied_with_best);  // two seeds this noisy: not significant
  EXPECT_EQ(jct->entries[1].rank, 1);
  EXPECT_EQ(p.RankingOf("utilization"), nullptr);  // not a goal: never ranked
}

TEST(AnalyzeTest, RanksOnTheSeedsEveryRankedPolicyRanAndInTheMetricsDirection) {
  // a ran three seeds, b two: the comparison pairs seeds 0 and 1 only.
  const std::vector<Observation> obs = {
      Drained("a", 0, 100.0, 5.0), Drained("a", 1, 101.0, 5.0), Drained("a", 2, 1.0, 1.0),
      Drained("b", 0, 150.0, 4.0), Drained("b", 1, 152.0, 4.05)};
  const Analysis analysis = Analyze(obs, {}, kMetrics);
  const PointAnalysis& p = analysis.points.at(0);
  const Ranking* jct = p.RankingOf("jct");
  ASSERT_NE(jct, nullptr);
  EXPECT_EQ(jct->seeds, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(jct->entries[0].policy, "a");
  EXPECT_DOUBLE_EQ(jct->entries[0].mean, 100.5);  // seed 2 left out of the paired mean
  // Differences {50, 51}: mean 50.5, s = 0.7071, se = 0.5, half = 6.353: significant.
  EXPECT_NEAR(*jct->entries[1].versus_best.half_width, 12.7062 * 0.5, 1e-3);
  EXPECT_FALSE(jct->entries[1].tied_with_best);
  EXPECT_EQ(jct->entries[1].rank, 2);
  const Ranking* goodput = p.RankingOf("goodput");
  ASSERT_NE(goodput, nullptr);
  EXPECT_EQ(goodput->entries[0].policy, "a");  // higher is better
  const Decision d = Decide(*goodput, kMetrics[1]);
  EXPECT_EQ(d.best, "a");
  EXPECT_EQ(d.runner_up, "b");
  // Differences {1, 0.95}: mean 0.975, half-width 12.706 × 0.025 = 0.318: significant.
  EXPECT_NEAR(d.margin.mean, 0.975, 1e-12);  // positive: in the best's favour
  EXPECT_TRUE(d.significant);
  // The policy's own mean still covers all its seeds.
  EXPECT_NEAR(p.policies.at("a").metrics.at("jct").mean, 202.0 / 3.0, 1e-9);
}

// Ranks count the policies significantly better, so a noisy policy whose mean is worse but
// which nobody beats for sure ranks above a steady one that the best beats for sure.
TEST(AnalyzeTest, ARankCountsThePoliciesSignificantlyBetter) {
  const std::vector<Observation> obs = {
      Drained("a", 0, 10.0), Drained("a", 1, 10.0), Drained("a", 2, 10.0),
      Drained("b", 0, 5.0),  Drained("b", 1, 15.0), Drained("b", 2, 16.0),   // mean 12, noisy
      Drained("c", 0, 11.0), Drained("c", 1, 11.0), Drained("c", 2, 11.2)};  // mean 11.07
  const Analysis analysis = Analyze(obs, {}, kMetrics);
  const Ranking* jct = analysis.points.at(0).RankingOf("jct");
  ASSERT_NE(jct, nullptr);
  ASSERT_EQ(jct->entries.size(), 3u);
  // c - a = {1, 1, 1.2}: mean 1.067, half-width 4.303 × 0.1155 / sqrt(3) = 0.287: significant.
  // b - a = {-5, 5, 6}: mean 2, half-width 15.1: a tie; b - c = {-6, 4, 4.8}: a tie.
  EXPECT_EQ(jct->entries[0].policy, "a");
  EXPECT_EQ(jct->entries[0].rank, 1);
  EXPECT_EQ(jct->entries[1].policy, "b");
  EXPECT_EQ(jct->entries[1].rank, 1);
  EXPECT_TRUE(jct->entries[1].tied_with_best);
  EXPECT_EQ(jct->entries[2].policy, "c");
  EXPECT_EQ(jct->entries[2].rank, 2);
  EXPECT_FALSE(jct->entries[2].tied_with_best);
}

TEST(AnalyzeTest, StarvedBeatsSaturatedAsTheReportedOutcome) {
  std::vector<Observation> obs = {Drained("a", 0, 1.0)};
  obs.push_back(Failed("a", 1, Outcome::kStarved));
  EXPECT_EQ(Analyze(obs, {}, kMetrics).points.at(0).policies.at("a").outcome, Outcome::kStarved);
}

TEST(SummaryJsonTest, CarriesSeedsDrainedSeedsMeansAndIntervals) {
  std::vector<Observation> obs = {Drained("a", 0, 100.0), Drained("a", 1, 200.0),
                                  Drained("a", 2, 300.0), Drained("b", 0, 400.0),
                                  Drained("b", 1, 400.0)};
  obs.push_back(Failed("b", 2, Outcome::kSaturated));
  Analysis analysis = Analyze(obs, {"a", "b"}, kMetrics);
  Capacity capacity;
  capacity.cluster = "4:4:4";
  capacity.policy = "a";
  capacity.sustainable = 2.5;
  capacity.failing = 2.6;
  capacity.precision = 0.05;
  analysis.capacities.push_back(capacity);
  const nlohmann::json j = nlohmann::json::parse(SummaryJson(analysis));
  const nlohmann::json& cluster = j.at("clusters").at(0);
  EXPECT_EQ(cluster.at("cluster"), "4:4:4");
  const nlohmann::json& point = cluster.at("rates").at(0);
  EXPECT_EQ(point.at("jobs_per_hour"), 2.0);
  const nlohmann::json& a = point.at("policies").at(0);
  EXPECT_EQ(a.at("policy"), "a");
  EXPECT_EQ(a.at("seeds"), nlohmann::json({0, 1, 2}));
  EXPECT_EQ(a.at("outcome"), "drained");
  // {100, 200, 300}: mean 200, s = 100, half-width = 4.302653 × 100 / sqrt(3).
  EXPECT_DOUBLE_EQ(a.at("metrics").at("jct").at("mean").get<double>(), 200.0);
  EXPECT_NEAR(a.at("metrics").at("jct").at("ci95").get<double>(), 248.4138, 1e-3);
  const nlohmann::json& b = point.at("policies").at(1);
  EXPECT_EQ(b.at("outcome"), "saturated");
  EXPECT_EQ(b.at("drained_seeds"), nlohmann::json({0, 1}));
  EXPECT_FALSE(b.at("metrics").at("jct").contains("rank"));  // not ranked
  EXPECT_EQ(cluster.at("capacity").at(0).at("sustainable_jobs_per_hour"), 2.5);
}

}  // namespace
}  // namespace gavel::report
