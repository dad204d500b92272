// The space-sharing ("packed") LP policies on the fast solve path (column generation over the
// pair columns, lp/column_generation.h) against the general path (the whole LP handed to
// Clp): the same status and optimal objective on random snapshots, and valid allocations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/common.h"
#include "gavel/policy/packed_classes.h"
#include "gavel/policy/pair_pricing.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/policy_test_support.h"
#include "gavel/policy/registry.h"

namespace gavel::policy {
namespace {

// k80/p100/v100 with 1-6 GPUs each, 4-20 jobs of table types with scale factors 1 and 2,
// priorities, remaining steps, SLOs for about half, entities for water filling.
ClusterSnapshot RandomSnapshot(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> num_jobs(4, 20);
  ClusterSnapshot snapshot = RandomTableCluster(rng, /*max_gpus_per_type=*/6);
  const int m = num_jobs(rng);
  for (int i = 0; i < m; ++i) {
    const int scale_factor = unit(rng) < 0.75 ? 1 : 2;
    const JobId id(static_cast<std::uint64_t>(i));
    snapshot.jobs.push_back(RandomTableJob(rng, id, scale_factor));
  }
  return snapshot;
}

PolicyInput Build(const PolicyInfo& info, const ClusterSnapshot& snapshot) {
  auto input = BuildPolicyInput(snapshot, &ShippedTable(),
                                RequirementsOf(info.capabilities, /*compat_gavel=*/false));
  GAVEL_CHECK_MSG(input.ok(), input.status().ToString().c_str());
  return std::move(input).value();
}

Result<PolicyOutput> Allocate(const std::string& policy, const PolicyInput& input,
                              SolvePath path, std::shared_ptr<lp::Solver> lp_solver = nullptr) {
  PolicyOptions options;
  options.seed = 42;
  options.solve_path = path;
  options.lp_solver = std::move(lp_solver);
  GAVEL_ASSIGN_OR_RETURN(auto made, MakePolicy(policy, options));
  return made->Allocate(input);
}

// The packed policies that solve LPs (fifo_packed and gandiva are rule-based). All mark their
// pairs lazy on the fast path (docs/policies.md); finish_time_fairness_packed there runs its
// ratio search instead of the general path's bisection, and the comparison below guards
// against a difference.
std::vector<std::string> PackedLpPolicies() {
  return {"max_min_fairness_packed", "max_min_fairness_water_filling_packed",
          "finish_time_fairness_packed", "min_total_duration_packed",
          "max_sum_throughput_normalized_by_cost_packed_SLOs"};
}

class PackedFastPathTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PackedFastPathTest, SameObjectiveAsTheWholeLpOnRandomSnapshots) {
  const PolicyInfo& info = **FindPolicy(GetParam());
  ASSERT_TRUE(info.capabilities.packing);
  int with_pairs = 0;
  for (int instance = 0; instance < 12; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(500 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, RandomSnapshot(rng));
    if (!input.pairs.empty()) ++with_pairs;
    const auto fast = Allocate(GetParam(), input, SolvePath::kFast);
    const auto general = Allocate(GetParam(), input, SolvePath::kGeneral);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    ASSERT_TRUE(general.ok()) << general.status().ToString();
    ExpectValidAllocation(input, *fast);
    EXPECT_EQ(fast->note.find("fast path failed"), std::string::npos) << fast->note;
    EXPECT_EQ(AllocationStatusName(fast->status), std::string(AllocationStatusName(general->status)));
    ASSERT_EQ(fast->objective.has_value(), general->objective.has_value());
    if (!general->objective.has_value()) continue;
    EXPECT_LE(std::abs(*fast->objective - *general->objective),
              1e-6 * std::max(1.0, std::abs(*general->objective)))
        << "fast " << *fast->objective << " general " << *general->objective;
  }
  EXPECT_GE(with_pairs, 10);
}

INSTANTIATE_TEST_SUITE_P(PackedLpPolicies, PackedFastPathTest,
                         ::testing::ValuesIn(PackedLpPolicies()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// Water filling reports only its first LP's optimum; the whole leximin allocation is unique
// in its normalised throughputs (every job ends frozen at its level, and a frozen job's
// level is the most it can get while the others keep theirs), so each job's NET_i must agree
// between the paths, not just the minimum.
TEST(PackedFastPathTest, WaterFillingReachesTheSameLevelsAsTheWholeLp) {
  const std::string policy = "max_min_fairness_water_filling_packed";
  const PolicyInfo& info = **FindPolicy(policy);
  for (int instance = 0; instance < 12; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(900 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, RandomSnapshot(rng));
    const auto fast = Allocate(policy, input, SolvePath::kFast);
    const auto general = Allocate(policy, input, SolvePath::kGeneral);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    ASSERT_TRUE(general.ok()) << general.status().ToString();
    const std::vector<double> prop = ProportionalThroughputs(input, input.throughput);
    double top = 0.0;
    std::vector<double> fast_levels(input.num_jobs(), 0.0);
    std::vector<double> general_levels(input.num_jobs(), 0.0);
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (prop[i] <= 0.0) continue;
      fast_levels[i] = ThroughputOf(input, *fast, i) / prop[i];
      general_levels[i] = ThroughputOf(input, *general, i) / prop[i];
      top = std::max(top, general_levels[i]);
    }
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      EXPECT_NEAR(fast_levels[i], general_levels[i], 1e-5 * std::max(1.0, top)) << "job " << i;
    }
  }
}

// Counts the columns of the models the policy hands to the solver (on the fast path, the
// restricted models column generation loads: every column that is not lazy, and its elastic
// columns, fixed at 0 until a phase one opens them).
class CountingSolver final : public lp::Solver {
 public:
  std::string_view name() const override { return inner_->name(); }
  bool SupportsIntegers() const override { return inner_->SupportsIntegers(); }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    largest_model_ = std::max(largest_model_, model.num_columns());
    const auto open = std::count_if(model.columns().begin(), model.columns().end(),
                                    [](const lp::Column& c) { return c.lower != 0.0 || c.upper != 0.0; });
    largest_open_ = std::max(largest_open_, static_cast<std::size_t>(open));
    return inner_->Load(model, options);
  }
  int largest_model() const { return largest_model_; }
  // The most columns not fixed at 0 in one model (leaves out the elastic columns).
  std::size_t largest_open() const { return largest_open_; }

 private:
  std::unique_ptr<lp::Solver> inner_ = lp::MakeClpSolver();
  int largest_model_ = 0;
  std::size_t largest_open_ = 0;
};

// The cells where a job can run: the columns not fixed at 0 of a model over the jobs.
std::size_t RunnableCells(const PolicyInput& input) {
  std::size_t cells = 0;
  for (const double t : input.throughput.data()) cells += t > 0.0 ? 1 : 0;
  return cells;
}

// A solve over `classes` (k classes, Q class pairs) loads models of at most (k + Q)·n + `extra`
// columns not fixed at 0, while one over the jobs has a column for every cell where a job can
// run. Checks the bound and returns whether it tells the two paths apart on this input.
bool ExpectModelsOverClasses(const PolicyInput& input, const JobClasses& classes,
                             const CountingSolver& counter, std::size_t extra) {
  const std::size_t class_columns =
      (classes.size() + classes.pairs.size()) * input.num_types() + extra;
  EXPECT_LE(counter.largest_open(), class_columns);
  return class_columns < RunnableCells(input) + extra;
}

// Every member of a class gets the same throughput (the spread-back allocation).
void ExpectMembersAlike(const PolicyInput& input, const JobClasses& classes,
                        const PolicyOutput& output) {
  for (const std::vector<std::size_t>& members : classes.members) {
    const double first = ThroughputOf(input, output, members.front());
    for (const std::size_t i : members) {
      EXPECT_NEAR(ThroughputOf(input, output, i), first, 1e-9 * (1.0 + first)) << "job " << i;
    }
  }
}

// 6-25 jobs of 1-4 table models (scale factors 1 and 2) on a random cluster. `copies`: each
// job is an exact copy of its model's job (interchangeable jobs); otherwise a random job
// (remaining steps, age, weight, deadline, entity) given the model and its scale factor.
ClusterSnapshot FewModelsSnapshot(std::mt19937_64& rng, bool copies) {
  ClusterSnapshot snapshot = RandomTableCluster(rng, /*max_gpus_per_type=*/6);
  const int templates = 1 + static_cast<int>(rng() % 4);
  std::vector<JobSpec> kinds;
  for (int t = 0; t < templates; ++t) {
    kinds.push_back(RandomTableJob(rng, JobId(0), rng() % 4 == 0 ? 2 : 1));
  }
  const int m = 6 + static_cast<int>(rng() % 20);
  for (int i = 0; i < m; ++i) {
    const JobId id(static_cast<std::uint64_t>(i));
    if (copies) {
      snapshot.jobs.push_back(kinds[rng() % kinds.size()]);
      snapshot.jobs.back().id = id;
      continue;
    }
    JobSpec job = RandomTableJob(rng, id, 1);
    const JobSpec& kind = kinds[rng() % kinds.size()];
    job.job_type = kind.job_type;
    job.scale_factor = kind.scale_factor;
    snapshot.jobs.push_back(std::move(job));
  }
  return snapshot;
}

// Many copies of a few jobs (as when jobs come from a table of models): max-min fairness
// solves over classes of interchangeable jobs (packed_classes.h). Its optimum must be the
// whole LP's (Clp and GLPK), and the spread-back allocation valid, with every member of a
// class at the same normalised throughput. The path taken is checked by the models the solver
// sees: over classes at most (k + Q)·n + 1 columns not fixed at 0 (k classes, Q class pairs,
// the level), while over jobs every cell where a job can run has its column.
TEST(PackedFastPathTest, MaxMinFairnessOverJobClassesMatchesTheWholeLp) {
  const std::string policy = "max_min_fairness_packed";
  const PolicyInfo& info = **FindPolicy(policy);
  int by_classes = 0;
  int telling = 0;  // instances where the column bound tells the class path from the jobs'
  for (int instance = 0; instance < 16; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(1300 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, FewModelsSnapshot(rng, /*copies=*/true));
    const std::optional<JobClasses> classes = FindInterchangeableJobs(input, input.throughput);
    const auto counter = std::make_shared<CountingSolver>();
    const auto fast = Allocate(policy, input, SolvePath::kFast, counter);
    if (classes.has_value()) {
      ++by_classes;
      if (ExpectModelsOverClasses(input, *classes, *counter, /*extra=*/1)) ++telling;
    }
    const auto general = Allocate(policy, input, SolvePath::kGeneral);
    const auto glpk = Allocate(policy, input, SolvePath::kGeneral, lp::MakeGlpkSolver());
    ASSERT_TRUE(fast.ok() && general.ok() && glpk.ok());
    ExpectValidAllocation(input, *fast);
    ASSERT_TRUE(fast->objective.has_value() && general->objective.has_value());
    const double tolerance = 1e-6 * std::max(1.0, std::abs(*general->objective));
    EXPECT_NEAR(*fast->objective, *general->objective, tolerance);
    EXPECT_NEAR(*fast->objective, *glpk->objective, tolerance);
    if (!classes.has_value()) continue;
    ExpectMembersAlike(input, *classes, *fast);
  }
  EXPECT_GE(by_classes, 12);
  EXPECT_GE(telling, 12);
}

// Finish-time fairness and cost with SLOs with many copies of a few jobs (all just arrived,
// so alike in their finish-time ratio and SLO demand too): they solve over classes of alike
// jobs, exact by symmetry. Against the whole LP (finish-time fairness: its bisection; Clp and
// GLPK): the same status and optimum, a valid allocation with every member of a class at the
// same throughput, and for finish-time fairness the same value of its secondary objective
// Σ_k thr_k / thr_max_k (unique, though the allocation need not be). The path is checked by
// the columns the solver sees, as for max-min fairness above.
class AlikeJobsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AlikeJobsTest, SameOptimumAsTheWholeLpOverClasses) {
  const std::string policy = GetParam();
  const bool ftf = policy == "finish_time_fairness_packed";
  const PolicyInfo& info = **FindPolicy(policy);
  int by_classes = 0;
  int telling = 0;
  int fallbacks = 0;
  for (int instance = 0; instance < 16; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(3300 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, FewModelsSnapshot(rng, /*copies=*/true));
    // (Without pairs, e.g. one job of scale factor 2, there is nothing to solve over classes.)
    const std::optional<JobClasses> pair_classes = FindPairClasses(input, input.throughput);
    const std::optional<JobClasses> classes =
        pair_classes.has_value() ? FindInterchangeableJobs(input, input.throughput) : std::nullopt;
    const auto counter = std::make_shared<CountingSolver>();
    const auto fast = Allocate(policy, input, SolvePath::kFast, counter);
    if (classes.has_value()) {
      ++by_classes;
      if (ExpectModelsOverClasses(input, *classes, *counter, /*extra=*/1)) ++telling;
    }
    const auto general = Allocate(policy, input, SolvePath::kGeneral);
    const auto glpk = Allocate(policy, input, SolvePath::kGeneral, lp::MakeGlpkSolver());
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    ASSERT_TRUE(general.ok() && glpk.ok());
    ExpectValidAllocation(input, *fast);
    EXPECT_EQ(fast->status, general->status);
    if (general->status == AllocationStatus::kFallback) ++fallbacks;
    ASSERT_TRUE(fast->objective.has_value() && general->objective.has_value() &&
                glpk->objective.has_value());
    const double tolerance = 1e-6 * std::max(1.0, std::abs(*general->objective));
    EXPECT_NEAR(*fast->objective, *general->objective, tolerance);
    EXPECT_NEAR(*fast->objective, *glpk->objective, tolerance);
    if (!classes.has_value()) continue;
    ExpectMembersAlike(input, *classes, *fast);
    if (!ftf) continue;
    const std::vector<double> most =
        MaxThroughputsAloneByClasses(input, input.throughput, *pair_classes);
    double fast_secondary = 0.0;
    double general_secondary = 0.0;
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      if (most[i] <= 0.0) continue;
      fast_secondary += ThroughputOf(input, *fast, i) / most[i];
      general_secondary += ThroughputOf(input, *general, i) / most[i];
    }
    EXPECT_NEAR(fast_secondary, general_secondary, 1e-5 * std::max(1.0, general_secondary));
  }
  EXPECT_GE(by_classes, 12);
  EXPECT_GE(telling, 8);
  if (!ftf) {
    EXPECT_GE(fallbacks, 1);  // SLOs proved unmeetable over classes, as over every pair
  }
}

INSTANTIATE_TEST_SUITE_P(ClassPolicies, AlikeJobsTest,
                         ::testing::Values("finish_time_fairness_packed",
                                           "max_sum_throughput_normalized_by_cost_packed_SLOs"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// Water filling's fast and general answers agree: same status and first optimum, and every
// job at the same normalised level (the leximin allocation is unique in them).
void ExpectSameWaterFilling(const PolicyInput& input, const Result<PolicyOutput>& fast,
                            const Result<PolicyOutput>& general) {
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  ASSERT_TRUE(general.ok()) << general.status().ToString();
  ExpectValidAllocation(input, *fast);
  EXPECT_EQ(fast->status, general->status);
  ASSERT_EQ(fast->objective.has_value(), general->objective.has_value());
  if (general->objective.has_value()) {
    EXPECT_NEAR(*fast->objective, *general->objective,
                1e-6 * std::max(1.0, std::abs(*general->objective)));
  }
  const std::vector<double> prop = ProportionalThroughputs(input, input.throughput);
  double top = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (prop[i] > 0.0) top = std::max(top, ThroughputOf(input, *general, i) / prop[i]);
  }
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (prop[i] <= 0.0) continue;
    EXPECT_NEAR(ThroughputOf(input, *fast, i) / prop[i],
                ThroughputOf(input, *general, i) / prop[i], 1e-5 * std::max(1.0, top))
        << "job " << i;
  }
}

// Water filling with many copies of a few jobs (entities included): it fills over classes
// of interchangeable jobs, and every job must end at the whole LP's level (Clp). The path is
// checked as above: over classes the models have at most (k + Q)·n columns not fixed at 0,
// one for t and one per entity clock.
TEST(PackedFastPathTest, WaterFillingOverJobClassesReachesTheWholeLpLevels) {
  const std::string policy = "max_min_fairness_water_filling_packed";
  const PolicyInfo& info = **FindPolicy(policy);
  int by_classes = 0;
  int telling = 0;  // instances where the column bound tells the class path from the jobs'
  for (int instance = 0; instance < 12; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(1700 + static_cast<std::uint64_t>(instance));
    ClusterSnapshot snapshot = RandomTableCluster(rng, /*max_gpus_per_type=*/6);
    std::vector<JobSpec> kinds;
    for (int t = 0; t < 1 + static_cast<int>(rng() % 4); ++t) {
      kinds.push_back(RandomTableJob(rng, JobId(0), rng() % 4 == 0 ? 2 : 1));
    }
    const int m = 8 + static_cast<int>(rng() % 20);
    for (int i = 0; i < m; ++i) {
      snapshot.jobs.push_back(kinds[rng() % kinds.size()]);
      snapshot.jobs.back().id = JobId(static_cast<std::uint64_t>(i));
    }
    const PolicyInput input = Build(info, snapshot);
    const std::optional<JobClasses> classes =
        FindInterchangeableJobs(input, input.throughput, /*by_entity=*/true);
    const auto counter = std::make_shared<CountingSolver>();
    const auto fast = Allocate(policy, input, SolvePath::kFast, counter);
    if (classes.has_value()) {
      ++by_classes;
      if (ExpectModelsOverClasses(input, *classes, *counter, 1 + input.entities.size())) ++telling;
    }
    const auto general = Allocate(policy, input, SolvePath::kGeneral);
    ExpectSameWaterFilling(input, fast, general);
  }
  EXPECT_GE(by_classes, 8);
  EXPECT_GE(telling, 8);
}

// Water filling over classes whose copies differ in weight (1, 2 or 4) and entity, as in the
// benchmark's varied family: many classes, most frozen one by one at their caps, which the
// fast path freezes several to an LP (water_filling.cc, TryCapFreezes). Every job must end at
// the whole LP's level (the general path: one LP per iteration over the jobs, no batching).
TEST(PackedFastPathTest, WaterFillingWithVariedWeightsReachesTheWholeLpLevels) {
  const std::string policy = "max_min_fairness_water_filling_packed";
  const PolicyInfo& info = **FindPolicy(policy);
  int by_classes = 0;
  for (int instance = 0; instance < 10; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(2300 + static_cast<std::uint64_t>(instance));
    ClusterSnapshot snapshot = RandomTableCluster(rng, /*max_gpus_per_type=*/12);
    std::vector<JobSpec> kinds;
    for (int t = 0; t < 1 + static_cast<int>(rng() % 3); ++t) {
      kinds.push_back(RandomTableJob(rng, JobId(0), rng() % 5 == 0 ? 2 : 1));
    }
    const int m = 30 + static_cast<int>(rng() % 40);
    const char* const entities[] = {"team-a", "team-b", ""};
    for (int i = 0; i < m; ++i) {
      snapshot.jobs.push_back(kinds[rng() % kinds.size()]);
      snapshot.jobs.back().id = JobId(static_cast<std::uint64_t>(i));
      snapshot.jobs.back().priority_weight = static_cast<double>(1 << (rng() % 3));
      snapshot.jobs.back().entity = entities[rng() % 3];
    }
    const PolicyInput input = Build(info, snapshot);
    if (FindInterchangeableJobs(input, input.throughput, /*by_entity=*/true).has_value()) {
      ++by_classes;
    }
    const auto fast = Allocate(policy, input, SolvePath::kFast);
    const auto general = Allocate(policy, input, SolvePath::kGeneral);
    ExpectSameWaterFilling(input, fast, general);
  }
  EXPECT_GE(by_classes, 7);
}

// SpreadPairTime gives every member its share of a class pair's time, within a class too:
// 5 of a and 7 of b (north-west corner between them, rings of 5 and 7 within), and 2 of a
// and 3 of b (within a, the ring of two members, one job pair).
class SpreadPairTimeTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(SpreadPairTimeTest, GivesEveryMemberItsShare) {
  const auto [count_a, count_b] = GetParam();
  const PolicyInfo& info = **FindPolicy("max_min_fairness_packed");
  std::mt19937_64 rng(4);
  ClusterSnapshot snapshot = RandomTableCluster(rng, 4);
  const JobSpec a = RandomTableJob(rng, JobId(0), 1);
  JobSpec b = RandomTableJob(rng, JobId(0), 1);
  while (b.job_type == a.job_type) b = RandomTableJob(rng, JobId(0), 1);
  for (int i = 0; i < count_a + count_b; ++i) {
    snapshot.jobs.push_back(i < count_a ? a : b);
    snapshot.jobs.back().id = JobId(static_cast<std::uint64_t>(i));
    snapshot.jobs.back().priority_weight = 1.0;
  }
  const PolicyInput input = Build(info, snapshot);
  const std::optional<JobClasses> classes = FindInterchangeableJobs(input, input.throughput);
  ASSERT_TRUE(classes.has_value());
  ASSERT_EQ(classes->size(), 2u);
  ASSERT_EQ(classes->members[classes->class_of_job[0]].size(), static_cast<std::size_t>(count_a));
  for (std::size_t q = 0; q < classes->pairs.size(); ++q) {
    const JobClasses::ClassPair& pair = classes->pairs[q];
    Matrix spread(input.pairs.size(), input.num_types());
    SpreadPairTime(input, *classes, q, 1, 0.9, spread);
    std::vector<double> time(input.num_jobs(), 0.0);
    for (std::size_t p = 0; p < input.pairs.size(); ++p) {
      EXPECT_EQ(spread(p, 0), 0.0);
      time[static_cast<std::size_t>(input.pairs[p].first)] += spread(p, 1);
      time[static_cast<std::size_t>(input.pairs[p].second)] += spread(p, 1);
    }
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      const std::size_t c = classes->class_of_job[i];
      const double size = static_cast<double>(classes->members[c].size());
      const double expected = c == pair.a && c == pair.b ? 2.0 * 0.9 / size
                              : c == pair.a || c == pair.b ? 0.9 / size
                                                           : 0.0;
      EXPECT_NEAR(time[i], expected, 1e-12) << "class pair " << q << " job " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ClassSizes, SpreadPairTimeTest,
                         ::testing::Values(std::pair<int, int>(5, 7), std::pair<int, int>(2, 3)));

// At least 20 random jobs (distinct: not classes of interchangeable jobs), with hundreds of
// pair columns.
PolicyInput TwentyJobInput(const PolicyInfo& info) {
  std::mt19937_64 rng(77);
  ClusterSnapshot snapshot = RandomSnapshot(rng);
  while (snapshot.jobs.size() < 20) {
    snapshot.jobs.push_back(RandomTableJob(rng, JobId(snapshot.jobs.size()), 1));
  }
  return Build(info, snapshot);
}

TEST(PackedFastPathTest, TheInnerSolverSeesOnlySomePairColumns) {
  const PolicyInfo& info = **FindPolicy("max_min_fairness_packed");
  const PolicyInput input = TwentyJobInput(info);
  // The pair path, not the one over classes of interchangeable jobs.
  ASSERT_FALSE(FindInterchangeableJobs(input, input.throughput).has_value());
  const std::size_t pair_columns = input.pairs.size() * input.num_types();
  ASSERT_GE(pair_columns, 300u);

  const auto fast_counter = std::make_shared<CountingSolver>();
  const auto fast = Allocate("max_min_fairness_packed", input, SolvePath::kFast, fast_counter);
  const auto general_counter = std::make_shared<CountingSolver>();
  const auto general =
      Allocate("max_min_fairness_packed", input, SolvePath::kGeneral, general_counter);
  ASSERT_TRUE(fast.ok() && general.ok());
  EXPECT_GE(static_cast<std::size_t>(general_counter->largest_model()), pair_columns);
  EXPECT_LT(static_cast<std::size_t>(fast_counter->largest_model()), pair_columns / 2);
  EXPECT_NEAR(*fast->objective, *general->objective, 1e-6 * std::abs(*general->objective));
}

// Many jobs of a few models that differ in remaining steps, time since start, weight and
// deadline (as in a trace): not interchangeable, but their co-located throughputs depend only
// on the models, so finish-time fairness, makespan and cost with SLOs price their pairs per
// pair of classes (pair_pricing.h) instead of building them. Each must reach the whole LP's
// optimum (Clp and GLPK) and status, with a valid allocation.
class PairPricingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PairPricingTest, SameOptimumAsTheWholeLpForJobsOfAFewModels) {
  const PolicyInfo& info = **FindPolicy(GetParam());
  int priced = 0;
  int fallbacks = 0;
  for (int instance = 0; instance < 16; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(2100 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, FewModelsSnapshot(rng, /*copies=*/false));
    if (FindPairClasses(input, input.throughput).has_value()) ++priced;
    const auto fast = Allocate(GetParam(), input, SolvePath::kFast);
    const auto general = Allocate(GetParam(), input, SolvePath::kGeneral);
    const auto glpk = Allocate(GetParam(), input, SolvePath::kGeneral, lp::MakeGlpkSolver());
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    ASSERT_TRUE(general.ok() && glpk.ok());
    ExpectValidAllocation(input, *fast);
    EXPECT_EQ(fast->note.find("fast path failed"), std::string::npos) << fast->note;
    EXPECT_EQ(AllocationStatusName(fast->status), std::string(AllocationStatusName(general->status)));
    if (general->status == AllocationStatus::kFallback) ++fallbacks;
    ASSERT_TRUE(fast->objective.has_value() && general->objective.has_value() &&
                glpk->objective.has_value());
    const double tolerance = 1e-6 * std::max(1.0, std::abs(*general->objective));
    EXPECT_NEAR(*fast->objective, *general->objective, tolerance);
    EXPECT_NEAR(*fast->objective, *glpk->objective, tolerance);
  }
  EXPECT_GE(priced, 12);
  if (GetParam().ends_with("_SLOs")) {
    EXPECT_GE(fallbacks, 1);  // phase one proved some infeasible over every pair
  }
}

INSTANTIATE_TEST_SUITE_P(PricedPolicies, PairPricingTest,
                         ::testing::Values("finish_time_fairness_packed",
                                           "min_total_duration_packed",
                                           "max_sum_throughput_normalized_by_cost_packed_SLOs"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// Clp whose answers fall short by a feasibility tolerance: every column with a finite upper
// bound (the jobs' time columns; τ and the pair columns have none) comes back 10⁻⁷ (relative)
// lower than Clp's value, so an LP that meets its rows exactly reads back as missing them by
// about what a simplex tolerance allows.
class ShortSolver final : public lp::Solver {
 public:
  std::string_view name() const override { return "clp-short"; }
  bool SupportsIntegers() const override { return false; }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> inner, inner_->Load(model, options));
    auto session = std::make_unique<Session>(std::move(inner));
    for (const lp::Column& c : model.columns()) session->bounded.push_back(c.upper < lp::kInfinity);
    return std::unique_ptr<lp::Session>(std::move(session));
  }

 private:
  struct Session final : lp::Session {
    explicit Session(std::unique_ptr<lp::Session> s) : inner(std::move(s)) {}
    Result<lp::Solution> Solve() override {
      GAVEL_ASSIGN_OR_RETURN(lp::Solution solution, inner->Solve());
      for (std::size_t j = 0; j < solution.values.size() && j < bounded.size(); ++j) {
        if (bounded[j]) solution.values[j] *= 1.0 - 1e-7;
      }
      return solution;
    }
    void SetObjective(int column, double c) override { inner->SetObjective(column, c); }
    void SetColumnBounds(int column, double lo, double hi) override {
      bounded[static_cast<std::size_t>(column)] = hi < lp::kInfinity;
      inner->SetColumnBounds(column, lo, hi);
    }
    void SetRowBounds(int row, double lo, double hi) override { inner->SetRowBounds(row, lo, hi); }
    int AddColumn(double lower, double upper, double objective, std::span<const int> rows,
                  std::span<const double> coefficients) override {
      bounded.push_back(upper < lp::kInfinity);
      return inner->AddColumn(lower, upper, objective, rows, coefficients);
    }
    int AddRow(double lower, double upper, std::span<const int> columns,
               std::span<const double> coefficients) override {
      return inner->AddRow(lower, upper, columns, coefficients);
    }
    int AddColumns(const lp::ColumnBatch& batch) override {
      for (const double upper : batch.upper) bounded.push_back(upper < lp::kInfinity);
      return inner->AddColumns(batch);
    }
    std::unique_ptr<lp::Session> inner;
    std::vector<bool> bounded;
  };
  std::unique_ptr<lp::Solver> inner_ = lp::MakeClpSolver();
};

// The ratio search stops at a ratio an LP proves feasible (τ >= 1) and reports it, though
// the allocation read back misses it by the LP's tolerance (ShortSolver): it must neither
// give up for the bisection (as it did on 2,048 varied jobs, where Clp's own tolerance was
// enough) nor report a ratio off the whole LP's (GLPK) by more than that tolerance.
TEST(PairPricingTest, FinishTimeFairnessAcceptsARatioMetWithinTheLpTolerance) {
  const PolicyInfo& info = **FindPolicy("finish_time_fairness_packed");
  int priced = 0;
  for (int instance = 0; instance < 16; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(2100 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, FewModelsSnapshot(rng, /*copies=*/false));
    if (FindPairClasses(input, input.throughput).has_value()) ++priced;
    const auto fast = Allocate(std::string(info.name), input, SolvePath::kFast,
                               std::make_shared<ShortSolver>());
    const auto glpk = Allocate(std::string(info.name), input, SolvePath::kGeneral, lp::MakeGlpkSolver());
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    ASSERT_TRUE(glpk.ok()) << glpk.status().ToString();
    EXPECT_EQ(fast->note.find("fast path failed"), std::string::npos) << fast->note;
    ExpectValidAllocation(input, *fast);
    ASSERT_TRUE(fast->objective.has_value() && glpk->objective.has_value());
    EXPECT_NEAR(*fast->objective, *glpk->objective, 1e-6 * std::max(1.0, *glpk->objective));
  }
  EXPECT_GE(priced, 12);
}

// Clp whose sessions count Session::SetStartPoint calls and pass the point on, or drop it
// (the default no-op of backends without warm starts).
class StartPointSolver final : public lp::Solver {
 public:
  explicit StartPointSolver(bool forward) : forward_(forward) {}
  std::string_view name() const override { return forward_ ? "clp-start" : "clp-no-start"; }
  bool SupportsIntegers() const override { return false; }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<lp::Session> inner, inner_->Load(model, options));
    return std::unique_ptr<lp::Session>(std::make_unique<Session>(std::move(inner), this));
  }
  int start_points() const { return start_points_; }

 private:
  struct Session final : ForwardingSession {
    Session(std::unique_ptr<lp::Session> s, StartPointSolver* o)
        : ForwardingSession(std::move(s)), owner(o) {}
    void SetStartPoint(std::span<const double> values) override {
      ++owner->start_points_;
      if (owner->forward_) ForwardingSession::SetStartPoint(values);
    }
    StartPointSolver* owner;
  };
  bool forward_;
  int start_points_ = 0;
  std::unique_ptr<lp::Solver> inner_ = lp::MakeClpSolver();
};

// Finish-time fairness starts its first ratio LP from the jobs-only optimum
// (lp::Session::SetStartPoint): with and without it (the point dropped), the ratio is the
// same and equals the whole LP's (GLPK), on jobs of a few models that differ (pairs priced)
// and on distinct random jobs (pairs lazy in the whole model).
TEST(PairPricingTest, FinishTimeFairnessStartPointKeepsTheOptimum) {
  const PolicyInfo& info = **FindPolicy("finish_time_fairness_packed");
  const std::string name(info.name);
  const auto with_start = std::make_shared<StartPointSolver>(/*forward=*/true);
  int compared = 0;
  for (int instance = 0; instance < 20; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(3100 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = instance % 4 == 3 ? TwentyJobInput(info)
                                                : Build(info, FewModelsSnapshot(rng, /*copies=*/false));
    const int before = with_start->start_points();
    const auto started = Allocate(name, input, SolvePath::kFast, with_start);
    const auto unstarted =
        Allocate(name, input, SolvePath::kFast, std::make_shared<StartPointSolver>(/*forward=*/false));
    const auto glpk = Allocate(name, input, SolvePath::kGeneral, lp::MakeGlpkSolver());
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_TRUE(unstarted.ok() && glpk.ok());
    EXPECT_EQ(started->note.find("fast path failed"), std::string::npos) << started->note;
    ExpectValidAllocation(input, *started);
    ASSERT_TRUE(started->objective.has_value() && unstarted->objective.has_value() &&
                glpk->objective.has_value());
    const double tolerance = 1e-6 * std::max(1.0, std::abs(*glpk->objective));
    EXPECT_NEAR(*started->objective, *unstarted->objective, tolerance);
    EXPECT_NEAR(*started->objective, *glpk->objective, tolerance);
    if (with_start->start_points() > before) ++compared;
  }
  EXPECT_GE(compared, 15);  // the start point was given (17 of 20 take that path)
}

// The separability the pricing rests on, against brute force: for random duals and
// coefficients, the first column the oracle offers is the pair column (over every job pair of
// the input, read from its pair matrices) with the largest reduced cost, and it offers none
// exactly when no pair column improves.
TEST(PairPricingTest, OffersTheBestPairColumnOfAllOrNone) {
  const PolicyInfo& info = **FindPolicy("min_total_duration_packed");
  int offered = 0;
  int none = 0;
  for (int instance = 0; instance < 40; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(3100 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(info, FewModelsSnapshot(rng, /*copies=*/false));
    const std::optional<JobClasses> classes = FindPairClasses(input, input.throughput);
    if (!classes.has_value()) continue;
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    // Rows: capacity 0..n-1, time n..n+m-1, a throughput row per job after that.
    std::vector<int> capacity_rows(n);
    std::vector<int> time_rows(m);
    for (std::size_t j = 0; j < n; ++j) capacity_rows[j] = static_cast<int>(j);
    for (std::size_t k = 0; k < m; ++k) time_rows[k] = static_cast<int>(n + k);
    PairOracle oracle(input, *classes, capacity_rows, time_rows, lp::Sense::kMaximize);
    std::vector<double> y(n + 2 * m);
    // Duals of a maximisation: <= rows nonnegative, >= rows nonpositive. Throughput rows are
    // scaled by 1/(the largest co-located steps/s), so each pair's gain from them is at most
    // 0.1 per member: with time duals of up to 3 most instances have no improving column.
    double largest = 0.0;
    for (const double t : input.pair_throughput_first.data()) largest = std::max(largest, t);
    for (const double t : input.pair_throughput_second.data()) largest = std::max(largest, t);
    const double size = instance % 2 == 0 ? 0.05 : 3.0;
    for (std::size_t i = 0; i < n + m; ++i) y[i] = size * unit(rng);
    std::vector<double> row_scale(m), job_objective(m), type_objective(n);
    for (std::size_t k = 0; k < m; ++k) {
      y[n + m + k] = -0.1 * unit(rng);
      row_scale[k] = unit(rng) < 0.8 ? unit(rng) / largest : 0.0;
      job_objective[k] = 0.01 * unit(rng) / largest;
      oracle.SetThroughputRow(k, row_scale[k] > 0.0 ? static_cast<int>(n + m + k) : -1,
                              row_scale[k]);
      oracle.SetJobObjective(k, job_objective[k]);
    }
    for (std::size_t j = 0; j < n; ++j) {
      type_objective[j] = 0.01 * unit(rng) / largest;
      oracle.SetTypeObjective(j, type_objective[j]);
    }
    double best = -lp::kInfinity;
    for (std::size_t p = 0; p < input.pairs.size(); ++p) {
      const auto a = static_cast<std::size_t>(input.pairs[p].first);
      const auto b = static_cast<std::size_t>(input.pairs[p].second);
      for (std::size_t j = 0; j < n; ++j) {
        const double ta = input.pair_throughput_first(p, j);
        const double tb = input.pair_throughput_second(p, j);
        if (ta <= 0.0 && tb <= 0.0) continue;
        const double objective =
            type_objective[j] * (ta + tb) + job_objective[a] * ta + job_objective[b] * tb;
        double activity = input.jobs[a].scale_factor * y[j] + y[n + a] + y[n + b];
        if (row_scale[a] > 0.0) activity += y[n + m + a] * row_scale[a] * ta;
        if (row_scale[b] > 0.0) activity += y[n + m + b] * row_scale[b] * tb;
        best = std::max(best, objective - activity);
      }
    }
    lp::ColumnBatch batch;
    oracle.Price(y, /*phase1=*/false, 1000, batch);
    if (best <= 1e-7) {
      EXPECT_EQ(batch.size(), 0u) << "best " << best;
      ++none;
      continue;
    }
    ASSERT_GT(batch.size(), 0u) << "best " << best;
    ++offered;
    double activity = 0.0;
    for (int e = batch.starts[0]; e < batch.starts[1]; ++e) {
      activity += y[static_cast<std::size_t>(batch.rows[static_cast<std::size_t>(e)])] *
                  batch.coefficients[static_cast<std::size_t>(e)];
    }
    EXPECT_NEAR(batch.objective[0] - activity, best, 1e-9 * (1.0 + std::abs(best)));
  }
  EXPECT_GE(offered, 8);
  EXPECT_GE(none, 4);
}

// Refuses its first Load (finish-time fairness's ratio search), then loads into Clp, counting
// columns like CountingSolver.
class FailFirstLoadSolver final : public lp::Solver {
 public:
  std::string_view name() const override { return counter_.name(); }
  bool SupportsIntegers() const override { return counter_.SupportsIntegers(); }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    if (!failed_) {
      failed_ = true;
      return Status::Internal("refused on purpose");
    }
    return counter_.Load(model, options);
  }
  int largest_model() const { return counter_.largest_model(); }

 private:
  CountingSolver counter_;
  bool failed_ = false;
};

// When the ratio search fails, finish-time fairness falls back to its bisection on a model
// rebuilt with the pairs not lazy (lazy, each infeasible bisection LP would run a phase one
// of column generation): the inner solver then gets every pair column, and the answer is the
// general path's.
TEST(PackedFastPathTest, FinishTimeFairnessFallsBackToABisectionOverEveryPair) {
  const std::string policy = "finish_time_fairness_packed";
  const PolicyInput input = TwentyJobInput(**FindPolicy(policy));
  const std::size_t pair_columns = input.pairs.size() * input.num_types();
  ASSERT_GE(pair_columns, 300u);
  const auto solver = std::make_shared<FailFirstLoadSolver>();
  const auto fast = Allocate(policy, input, SolvePath::kFast, solver);
  const auto general = Allocate(policy, input, SolvePath::kGeneral);
  ASSERT_TRUE(fast.ok() && general.ok());
  EXPECT_NE(fast->note.find("refused on purpose"), std::string::npos) << fast->note;
  EXPECT_GE(static_cast<std::size_t>(solver->largest_model()), pair_columns);
  ExpectValidAllocation(input, *fast);
  ASSERT_TRUE(fast->objective.has_value() && general->objective.has_value());
  EXPECT_NEAR(*fast->objective, *general->objective, 1e-6 * std::abs(*general->objective));
}

}  // namespace
}  // namespace gavel::policy
