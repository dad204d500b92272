#include "gavel/policy/policy_input.h"
#include "gavel/policy/policy_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"

namespace gavel::policy {
namespace {

using ::testing::HasSubstr;

JobSpec Job(std::uint64_t id, std::string job_type, int scale_factor = 1) {
  JobSpec job;
  job.id = JobId(id);
  job.job_type = std::move(job_type);
  job.scale_factor = scale_factor;
  return job;
}

ClusterSnapshot Cluster(std::vector<GpuTypeSpec> types, std::vector<JobSpec> jobs) {
  ClusterSnapshot snapshot;
  snapshot.gpu_types = std::move(types);
  snapshot.jobs = std::move(jobs);
  return snapshot;
}

std::vector<GpuTypeSpec> ThreeTypes(int count = 4) {
  return {{"k80", count, 1}, {"p100", count, 1}, {"v100", count, 1}};
}

double Isolated(const char* type, const std::string& model, int scale_factor = 1) {
  return ShippedTable().Isolated(type, JobTypeKey{model, scale_factor}).value();
}

TEST(PolicyInputTest, ThroughputsComeFromTheTableInSortedOrder) {
  const auto input = BuildPolicyInput(
      Cluster({{"k80", 2, 1}, {"p100", 3, 2}, {"v100", 4, 4}},
              {Job(0, "A3C"), Job(4, "ResNet-50 (batch size 128)", 2), Job(9, "CycleGAN")}),
      &ShippedTable(), {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->gpu_types, (std::vector<std::string>{"k80", "p100", "v100"}));
  EXPECT_EQ(input->gpu_counts, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(input->gpus_per_server, (std::vector<int>{1, 2, 4}));
  ASSERT_EQ(input->num_jobs(), 3u);
  EXPECT_EQ(input->jobs[1].id, JobId(4));
  EXPECT_EQ(input->jobs[1].scale_factor, 2);
  ASSERT_EQ(input->throughput.rows(), 3u);
  ASSERT_EQ(input->throughput.cols(), 3u);
  const char* types[] = {"k80", "p100", "v100"};
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(input->throughput(0, j), Isolated(types[j], "A3C"));
    EXPECT_EQ(input->throughput(1, j), Isolated(types[j], "ResNet-50 (batch size 128)", 2));
    EXPECT_EQ(input->throughput(2, j), Isolated(types[j], "CycleGAN"));
  }
  // Spot values of the shipped table, independently of the loader: v100 A3C 7.176, k80 CycleGAN
  // 0.505, and k80 cannot run ResNet-50 bs128 on 2 GPUs.
  EXPECT_NEAR(input->throughput(0, 2), 7.176, 1e-3);
  EXPECT_NEAR(input->throughput(2, 0), 0.505, 1e-3);
  EXPECT_EQ(input->throughput(1, 0), 0.0);
  EXPECT_TRUE(input->pairs.empty());  // not asked for
  EXPECT_EQ(input->pair_throughput_first.rows(), 0u);
  EXPECT_EQ(input->TypeIndex("p100"), 1);
  EXPECT_EQ(input->TypeIndex("a100"), -1);
}

TEST(PolicyInputTest, JobFieldsAreCarriedOver) {
  JobSpec job = Job(5, "A3C");
  job.priority_weight = 3.0;
  job.steps_remaining = 1000.0;
  job.time_since_start = Seconds(12.5);
  job.slo_time_left = Seconds(600.0);
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {job}), &ShippedTable(), {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  const PolicyJob& out = input->jobs.at(0);
  EXPECT_EQ(out.id, JobId(5));
  EXPECT_EQ(out.priority_weight, 3.0);
  EXPECT_EQ(out.steps_remaining, 1000.0);
  EXPECT_EQ(out.time_since_start, Seconds(12.5));
  EXPECT_EQ(out.slo_time_left, Seconds(600.0));
  EXPECT_EQ(out.entity, -1);
}

TEST(PolicyInputTest, PerJobThroughputsOverrideTheTableTypeByType) {
  JobSpec job = Job(0, "A3C");
  job.throughputs = {{"v100", 99.0}, {"a100", 500.0}};  // a100 is not in the cluster: unused
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {job}), &ShippedTable(), {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->throughput(0, 0), Isolated("k80", "A3C"));
  EXPECT_EQ(input->throughput(0, 1), Isolated("p100", "A3C"));
  EXPECT_EQ(input->throughput(0, 2), 99.0);
}

TEST(PolicyInputTest, AJobWithOnlyThroughputsNeedsNoTable) {
  JobSpec job = Job(0, "");
  job.throughputs = {{"v100", 3.0}, {"k80", 1.0}};
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {job}), nullptr, {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  // Types the job does not list are types it cannot run on.
  EXPECT_EQ(input->throughput(0, 0), 1.0);
  EXPECT_EQ(input->throughput(0, 1), 0.0);
  EXPECT_EQ(input->throughput(0, 2), 3.0);
}

TEST(PolicyInputTest, AnUnknownJobTypeWithThroughputsUsesThem) {
  JobSpec job = Job(0, "MyModel");
  job.throughputs = {{"p100", 2.0}};
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {job}), &ShippedTable(), {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->throughput(0, 1), 2.0);
  EXPECT_EQ(input->throughput(0, 0), 0.0);
}

TEST(PolicyInputTest, AScaleFactorLargerThanATypesCountCannotRunThere) {
  JobSpec overridden = Job(1, "", 4);
  overridden.throughputs = {{"k80", 5.0}, {"p100", 6.0}, {"v100", 7.0}};
  const auto input = BuildPolicyInput(Cluster({{"k80", 8, 1}, {"p100", 3, 1}, {"v100", 4, 1}},
                                              {Job(0, "LM (batch size 20)", 4), overridden}),
                                      &ShippedTable(), {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->throughput(0, 0), Isolated("k80", "LM (batch size 20)", 4));
  EXPECT_GT(input->throughput(0, 0), 0.0);
  EXPECT_EQ(input->throughput(0, 1), 0.0);  // 4 GPUs needed, 3 p100s
  EXPECT_EQ(input->throughput(0, 2), Isolated("v100", "LM (batch size 20)", 4));  // exactly 4
  // Even a throughput the user gave is no use where the job does not fit.
  EXPECT_EQ(input->throughput(1, 0), 5.0);
  EXPECT_EQ(input->throughput(1, 1), 0.0);
  EXPECT_EQ(input->throughput(1, 2), 7.0);
}

TEST(PolicyInputTest, AnUnknownJobTypeIsNotFoundNamingJobAndType) {
  const auto input = BuildPolicyInput(
      Cluster(ThreeTypes(), {Job(0, "A3C"), Job(17, "ResNet-18 (batch size 64)", 3)}),
      &ShippedTable(), {});
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(input.status().message(), HasSubstr("job 17"));
  // The table has this model at scale factors 1, 2, 4, 8, not 3: the key names both.
  EXPECT_THAT(input.status().message(), HasSubstr("('ResNet-18 (batch size 64)', 3)"));
}

TEST(PolicyInputTest, AJobTypeWithoutATableIsAnError) {
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {Job(2, "A3C")}), nullptr, {});
  ASSERT_FALSE(input.ok());
  EXPECT_THAT(input.status().message(), HasSubstr("job 2"));
}

TEST(PolicyInputTest, StepsRemainingIsRequiredOnlyWhenThePolicyPlansWithIt) {
  JobSpec with_steps = Job(0, "A3C");
  with_steps.steps_remaining = 50.0;
  const ClusterSnapshot snapshot = Cluster(ThreeTypes(), {with_steps, Job(8, "CycleGAN")});
  const auto relaxed = BuildPolicyInput(snapshot, &ShippedTable(), {});
  ASSERT_TRUE(relaxed.ok()) << relaxed.status().ToString();
  EXPECT_EQ(relaxed->jobs[0].steps_remaining, 50.0);
  EXPECT_EQ(relaxed->jobs[1].steps_remaining, 0.0);

  InputRequirements requirements;
  requirements.steps_remaining = true;
  const auto strict = BuildPolicyInput(snapshot, &ShippedTable(), requirements);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(strict.status().message(), HasSubstr("job 8"));
  EXPECT_THAT(strict.status().message(), HasSubstr("steps_remaining"));
}

TEST(PolicyInputTest, InstanceCostsAreRequiredForEveryTypeOnlyByCostPolicies) {
  ClusterSnapshot snapshot = Cluster(ThreeTypes(), {Job(0, "A3C")});
  snapshot.instance_costs = {{"v100", 2.5}, {"k80", 0.5}, {"a100", 9.0}};
  InputRequirements requirements;
  requirements.instance_costs = true;
  const auto strict = BuildPolicyInput(snapshot, &ShippedTable(), requirements);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(strict.status().message(), HasSubstr("instance_costs.p100"));

  // Without the requirement a missing price is the original's default of 1.
  const auto relaxed = BuildPolicyInput(snapshot, &ShippedTable(), {});
  ASSERT_TRUE(relaxed.ok()) << relaxed.status().ToString();
  EXPECT_EQ(relaxed->instance_costs, (std::vector<double>{0.5, 1.0, 2.5}));

  snapshot.instance_costs["p100"] = 1.5;
  const auto complete = BuildPolicyInput(snapshot, &ShippedTable(), requirements);
  ASSERT_TRUE(complete.ok()) << complete.status().ToString();
  EXPECT_EQ(complete->instance_costs, (std::vector<double>{0.5, 1.5, 2.5}));

  snapshot.instance_costs.clear();
  const auto none = BuildPolicyInput(snapshot, &ShippedTable(), {});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->instance_costs.empty());
}

TEST(PolicyInputTest, EntitiesAreSortedWithTheirWeights) {
  JobSpec a = Job(0, "A3C");
  a.entity = "zeta";
  JobSpec b = Job(1, "A3C");
  b.entity = "alpha";
  JobSpec c = Job(2, "A3C");  // no entity
  ClusterSnapshot snapshot = Cluster(ThreeTypes(), {a, b, c});
  snapshot.entity_weights = {{"mid", 3.0}, {"zeta", 2.0}};
  const auto input = BuildPolicyInput(snapshot, &ShippedTable(), {});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->entities, (std::vector<std::string>{"alpha", "mid", "zeta"}));
  EXPECT_EQ(input->entity_weights, (std::vector<double>{1.0, 3.0, 2.0}));
  EXPECT_EQ(input->jobs[0].entity, 2);
  EXPECT_EQ(input->jobs[1].entity, 0);
  EXPECT_EQ(input->jobs[2].entity, -1);
}

InputRequirements WithPairs(bool keep_unusable = false) {
  InputRequirements requirements;
  requirements.pairs = true;
  requirements.keep_unusable_pairs = keep_unusable;
  return requirements;
}

TEST(PolicyInputTest, PairsCarryTheTablesColocatedThroughputs) {
  // A3C + CycleGAN share every type (the shipped table: v100 [4.562, 3.163]).
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {Job(3, "A3C"), Job(8, "CycleGAN")}),
                                      &ShippedTable(), WithPairs());
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  ASSERT_EQ(input->pairs.size(), 1u);
  EXPECT_EQ(input->pairs[0].first, 0);
  EXPECT_EQ(input->pairs[0].second, 1);
  ASSERT_EQ(input->pair_throughput_first.rows(), 1u);
  ASSERT_EQ(input->pair_throughput_first.cols(), 3u);
  ASSERT_EQ(input->pair_throughput_second.rows(), 1u);
  const char* types[] = {"k80", "p100", "v100"};
  for (std::size_t j = 0; j < 3; ++j) {
    const auto co =
        ShippedTable().Colocated(types[j], JobTypeKey{"A3C", 1}, JobTypeKey{"CycleGAN", 1});
    EXPECT_EQ(input->pair_throughput_first(0, j), (*co)[0]);
    EXPECT_EQ(input->pair_throughput_second(0, j), (*co)[1]);
  }
  EXPECT_NEAR(input->pair_throughput_first(0, 2), 4.562, 1e-3);
  EXPECT_NEAR(input->pair_throughput_second(0, 2), 3.163, 1e-3);
}

TEST(PolicyInputTest, PairsFormOnlyBetweenEqualScaleFactors) {
  // Multi-GPU pairs are all [0, 0] in the shipped table, so keep them to see which form.
  const auto input = BuildPolicyInput(
      Cluster(ThreeTypes(8), {Job(0, "LM (batch size 20)", 2), Job(1, "A3C"),
                              Job(2, "Transformer (batch size 64)", 2), Job(3, "CycleGAN"),
                              Job(4, "ResNet-18 (batch size 32)", 4)}),
      &ShippedTable(), WithPairs(/*keep_unusable=*/true));
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  ASSERT_EQ(input->pairs.size(), 2u);
  EXPECT_EQ(input->pairs[0].first, 0);
  EXPECT_EQ(input->pairs[0].second, 2);
  EXPECT_EQ(input->pairs[1].first, 1);
  EXPECT_EQ(input->pairs[1].second, 3);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(input->pair_throughput_first(0, j), 0.0);
    EXPECT_EQ(input->pair_throughput_second(0, j), 0.0);
  }
}

TEST(PolicyInputTest, AllZeroPairsAreDroppedUnlessKept) {
  // CycleGAN + ResNet-50 bs128 is [0, 0] on every type; A3C + ResNet-50 bs128 only on p100.
  const ClusterSnapshot snapshot = Cluster(
      ThreeTypes(), {Job(0, "CycleGAN"), Job(1, "ResNet-50 (batch size 128)"), Job(2, "A3C")});
  const auto dropped = BuildPolicyInput(snapshot, &ShippedTable(), WithPairs());
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  ASSERT_EQ(dropped->pairs.size(), 2u);
  EXPECT_EQ(dropped->pairs[0].first, 0);  // CycleGAN + A3C
  EXPECT_EQ(dropped->pairs[0].second, 2);
  EXPECT_EQ(dropped->pairs[1].first, 1);  // ResNet-50 + A3C, usable on p100 only
  EXPECT_EQ(dropped->pairs[1].second, 2);
  EXPECT_EQ(dropped->pair_throughput_first(1, 0), 0.0);
  EXPECT_GT(dropped->pair_throughput_first(1, 1), 0.0);
  EXPECT_EQ(dropped->pair_throughput_first(1, 2), 0.0);

  const auto kept = BuildPolicyInput(snapshot, &ShippedTable(), WithPairs(true));
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->pairs.size(), 3u);  // every two jobs, sorted by (first, second)
  EXPECT_EQ(kept->pairs[0].first, 0);
  EXPECT_EQ(kept->pairs[0].second, 1);
  EXPECT_EQ(kept->pairs[1].first, 0);
  EXPECT_EQ(kept->pairs[1].second, 2);
  EXPECT_EQ(kept->pairs[2].first, 1);
  EXPECT_EQ(kept->pairs[2].second, 2);
  EXPECT_EQ(kept->pair_throughput_first.rows(), 3u);
  for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(kept->pair_throughput_first(0, j), 0.0);
}

TEST(PolicyInputTest, PairsKeepTheTablesSlowdownUnderOverriddenThroughputs) {
  // A3C alone on v100 is 7.176 in the table, 4.562 beside CycleGAN. If the user says A3C
  // runs at twice the table's speed alone, it runs at twice the table's speed beside
  // CycleGAN too: 2 × 4.562. CycleGAN keeps the table's numbers.
  JobSpec fast = Job(0, "A3C");
  const double table_alone = Isolated("v100", "A3C");
  fast.throughputs = {{"v100", 2.0 * table_alone}, {"k80", 0.0}};
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {fast, Job(1, "CycleGAN")}),
                                      &ShippedTable(), WithPairs());
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  ASSERT_EQ(input->pairs.size(), 1u);
  const auto v100 =
      *ShippedTable().Colocated("v100", JobTypeKey{"A3C", 1}, JobTypeKey{"CycleGAN", 1});
  EXPECT_NEAR(input->pair_throughput_first(0, 2), 2.0 * v100[0], 1e-12);
  EXPECT_EQ(input->pair_throughput_second(0, 2), v100[1]);
  // Overridden to "cannot run" on k80: no share of a k80 for A3C, CycleGAN's unchanged.
  const auto k80 =
      *ShippedTable().Colocated("k80", JobTypeKey{"A3C", 1}, JobTypeKey{"CycleGAN", 1});
  EXPECT_EQ(input->pair_throughput_first(0, 0), 0.0);
  EXPECT_EQ(input->pair_throughput_second(0, 0), k80[1]);
  // p100 not overridden: the table's pair.
  const auto p100 =
      *ShippedTable().Colocated("p100", JobTypeKey{"A3C", 1}, JobTypeKey{"CycleGAN", 1});
  EXPECT_NEAR(input->pair_throughput_first(0, 1), p100[0], 1e-12);
}

TEST(PolicyInputTest, JobsWithoutATableTypeFormNoPairs) {
  JobSpec custom = Job(1, "");
  custom.throughputs = {{"v100", 3.0}};
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {Job(0, "A3C"), custom, Job(2, "A3C")}),
                                      &ShippedTable(), WithPairs(true));
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  ASSERT_EQ(input->pairs.size(), 1u);
  EXPECT_EQ(input->pairs[0].first, 0);
  EXPECT_EQ(input->pairs[0].second, 2);
}

TEST(PolicyInputTest, NoTypesInTheTableMeansNoPairs) {
  // The cluster's a100 is not in the table: a pair's throughput there is unknown, so no pair.
  JobSpec a = Job(0, "A3C");
  a.throughputs = {{"a100", 9.0}};
  JobSpec b = Job(1, "CycleGAN");
  b.throughputs = {{"a100", 5.0}};
  const auto input = BuildPolicyInput(Cluster({{"a100", 2, 1}, {"v100", 2, 1}}, {a, b}),
                                      &ShippedTable(), WithPairs(true));
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->throughput(0, 0), 9.0);
  EXPECT_EQ(input->throughput(0, 1), Isolated("v100", "A3C"));
  EXPECT_TRUE(input->pairs.empty());
  EXPECT_EQ(input->pair_throughput_first.rows(), 0u);
  EXPECT_EQ(input->pair_throughput_first.cols(), 2u);
}

TEST(PolicyInputTest, PairsOfJobsTooLargeForATypeGetNothingThere) {
  const char* table_json = R"j({
    "k80":  {"('M', 2)": {"null": 2.0, "('M', 2)": [1.5, 1.5]}},
    "v100": {"('M', 2)": {"null": 4.0, "('M', 2)": [3.0, 3.0]}}})j";
  const auto table = ThroughputTable::Parse(table_json, "tiny.json");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const auto input =
      BuildPolicyInput(Cluster({{"k80", 1, 1}, {"v100", 2, 1}}, {Job(0, "M", 2), Job(1, "M", 2)}),
                       &*table, WithPairs());
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  ASSERT_EQ(input->pairs.size(), 1u);
  EXPECT_EQ(input->throughput(0, 0), 0.0);  // 2 GPUs needed, 1 k80
  EXPECT_EQ(input->pair_throughput_first(0, 0), 0.0);
  EXPECT_EQ(input->pair_throughput_second(0, 0), 0.0);
  EXPECT_EQ(input->pair_throughput_first(0, 1), 3.0);
  EXPECT_EQ(input->pair_throughput_second(0, 1), 3.0);
}

TEST(PolicyInputTest, AnEmptySnapshotGivesAnEmptyProblem) {
  const auto input = BuildPolicyInput(Cluster(ThreeTypes(), {}), &ShippedTable(), WithPairs());
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(input->num_jobs(), 0u);
  EXPECT_EQ(input->num_types(), 3u);
  EXPECT_EQ(input->throughput.rows(), 0u);
  EXPECT_EQ(input->throughput.cols(), 3u);
  EXPECT_TRUE(input->pairs.empty());
}

// The enumeration shared by BuildPolicyInput and the round scheduler's builder, worked by
// hand. Jobs 0..4 of scale factors (1, 1, 2, 2, 1) on types of 1 and 2 GPUs. The callback
// knows (0, 4) as all zero, (1, 4) and (2, 3), where (2, 3) shares only type 0, which is too
// small for it, and not (0, 1); it is never asked about jobs of different scale factors.
TEST(PolicyInputTest, SpaceSharingPairsAreEveryKnownUsablePairOfEqualScaleFactorsInOrder) {
  using PerType = std::span<std::array<double, 2>>;
  const auto run = [](const PairOptions& options, std::vector<std::pair<int, int>>* asked) {
    PolicyInput input = MakeInput({"a", "b"}, {1, 2}, {{0, 1}, {1, 1}, {2, 2}, {3, 2}, {4, 1}});
    AddSpaceSharingPairs(input, options, [&](std::size_t a, std::size_t b, PerType per_type) {
      asked->emplace_back(static_cast<int>(a), static_cast<int>(b));
      if (a == 0 && b == 1) return false;
      per_type[0] = {0.0, 0.0};
      per_type[1] = {0.0, 0.0};
      if (a == 1 && b == 4) {
        per_type[0] = {1.0, 2.0};
        per_type[1] = {3.0, 4.0};
      }
      if (a == 2 && b == 3) per_type[0] = {5.0, 6.0};
      return true;
    });
    return input;
  };
  const auto pairs_of = [](const PolicyInput& input) {
    std::vector<std::pair<int, int>> pairs;
    for (const JobPair& p : input.pairs) pairs.emplace_back(p.first, p.second);
    return pairs;
  };
  using Pairs = std::vector<std::pair<int, int>>;

  std::vector<std::pair<int, int>> asked;
  const PolicyInput plain = run(PairOptions{}, &asked);
  EXPECT_EQ(asked, (Pairs{{0, 1}, {0, 4}, {1, 4}, {2, 3}}));
  ASSERT_EQ(pairs_of(plain), (Pairs{{1, 4}, {2, 3}}));
  EXPECT_EQ(plain.pair_throughput_first.data(), (std::vector<double>{1, 3, 5, 0}));
  EXPECT_EQ(plain.pair_throughput_second.data(), (std::vector<double>{2, 4, 6, 0}));

  const PolicyInput kept = run(PairOptions{.keep_unusable = true}, &asked);
  ASSERT_EQ(pairs_of(kept), (Pairs{{0, 4}, {1, 4}, {2, 3}}));
  EXPECT_EQ(kept.pair_throughput_first.data(), (std::vector<double>{0, 0, 1, 3, 5, 0}));

  // Usable is judged before the too-small type is zeroed: (2, 3) stays, with nothing.
  const PolicyInput zeroed = run(PairOptions{.zero_oversized = true}, &asked);
  ASSERT_EQ(pairs_of(zeroed), (Pairs{{1, 4}, {2, 3}}));
  EXPECT_EQ(zeroed.pair_throughput_first.data(), (std::vector<double>{1, 3, 0, 0}));
  EXPECT_EQ(zeroed.pair_throughput_second.data(), (std::vector<double>{2, 4, 0, 0}));
  EXPECT_EQ(zeroed.pair_throughput_first.rows(), 2u);
  EXPECT_EQ(zeroed.pair_throughput_first.cols(), 2u);
}

// PairIndexOf's binary search against a linear scan of the pairs, for every two jobs in
// either order, on pairs as BuildPolicyInput makes them (some job pairs absent: scale factors
// differ).
TEST(PolicyInputTest, PairIndexOfFindsEveryPairInEitherOrderAndNothingElse) {
  const auto input = BuildPolicyInput(
      Cluster(ThreeTypes(8), {Job(0, "LM (batch size 20)", 2), Job(1, "A3C"),
                              Job(2, "Transformer (batch size 64)", 2), Job(3, "CycleGAN"),
                              Job(4, "ResNet-18 (batch size 32)"), Job(5, "A3C")}),
      &ShippedTable(), WithPairs(/*keep_unusable=*/true));
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  ASSERT_GE(input->pairs.size(), 4u);
  for (std::size_t a = 0; a < input->num_jobs(); ++a) {
    for (std::size_t b = 0; b < input->num_jobs(); ++b) {
      std::optional<std::size_t> expected;
      for (std::size_t p = 0; p < input->pairs.size(); ++p) {
        const auto first = static_cast<std::size_t>(input->pairs[p].first);
        const auto second = static_cast<std::size_t>(input->pairs[p].second);
        if ((first == a && second == b) || (first == b && second == a)) expected = p;
      }
      EXPECT_EQ(PairIndexOf(*input, a, b), expected) << a << ", " << b;
    }
  }
}

}  // namespace
}  // namespace gavel::policy
