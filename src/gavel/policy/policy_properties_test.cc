// Properties every policy in the registry must have, on random snapshots built from the
// shipped throughput table, in both the corrected default and --compat gavel:
//   * every allocation entry is in [0, 1];
//   * capacity: Σ_i s_i X_ij + Σ_p s_p X_pj <= c_j (except fifo under compat: the original's
//     FIFO over-subscribes, docs/differences.md P12);
//   * time: Σ_j X_ij + Σ_{p ∋ i} Σ_j X_pj <= 1 for every job;
//   * by default, no time on a type where the job (or both members of a pair) cannot run;
//   * the same input gives the same output with fresh policies;
//   * the status and objective agree (an optimum has an objective when some job can run, a
//     heuristic none, a fallback a note);
//   * bad inputs (no jobs, a type with no GPUs, a job that can run nowhere, a job larger than
//     every type) give a clean error or an allocation with the properties above.
// A policy that answers Unimplemented fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gavel/core/bounds.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/policy_test_support.h"
#include "gavel/policy/registry.h"

namespace gavel::policy {
namespace {

constexpr double kSlack = 1e-6;

bool AnyJobCanRun(const PolicyInput& input) {
  for (double t : input.throughput.data()) {
    if (t > 0.0) return true;
  }
  return false;
}

struct Case {
  std::string policy;
  bool compat = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.policy << (c.compat ? " --compat gavel" : "");
}

std::string CaseName(const ::testing::TestParamInfo<Case>& param) {
  return param.param.policy + (param.param.compat ? "_compat" : "");
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const PolicyInfo& info : AllPolicies()) {
    cases.push_back(Case{std::string(info.name), false});
    cases.push_back(Case{std::string(info.name), true});
  }
  return cases;
}

class PolicyPropertiesTest : public ::testing::TestWithParam<Case> {
 protected:
  const PolicyInfo& info() const { return **FindPolicy(GetParam().policy); }
  bool compat() const { return GetParam().compat; }
  bool single_gpu_only() const { return info().name == "allox"; }

  // As `gavel allocate` builds it.
  InputRequirements Requirements() const { return RequirementsOf(info().capabilities, compat()); }

  Result<PolicyOutput> Allocate(const PolicyInput& input) const {
    PolicyOptions options;
    options.compat_gavel = compat();
    options.seed = 42;
    GAVEL_ASSIGN_OR_RETURN(auto policy, MakePolicy(GetParam().policy, options));
    return policy->Allocate(input);
  }

  // A random snapshot: k80/p100/v100 with 1-8 GPUs each, 2-8 jobs of table types with scale
  // factors 1/2/4 (1 only for AlloX; one per snapshot for packing policies under compat,
  // where the original's per-job constraint is only right when all jobs share one), every
  // optional field given, about half the jobs with an SLO.
  ClusterSnapshot RandomSnapshot(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<int> num_jobs(2, 8);
    ClusterSnapshot snapshot = RandomTableCluster(rng, /*max_gpus_per_type=*/8);
    const auto pick_scale_factor = [&] {
      if (single_gpu_only()) return 1;
      const double u = unit(rng);
      return u < 0.6 ? 1 : (u < 0.85 ? 2 : 4);
    };
    const bool one_scale_factor = info().capabilities.packing && compat();
    const int shared_scale_factor = pick_scale_factor();
    const int m = num_jobs(rng);
    for (int i = 0; i < m; ++i) {
      const JobId id(static_cast<std::uint64_t>(3 * i + static_cast<int>(unit(rng) * 3)));
      const int scale_factor = one_scale_factor ? shared_scale_factor : pick_scale_factor();
      snapshot.jobs.push_back(RandomTableJob(rng, id, scale_factor));
    }
    return snapshot;
  }

  // Every property of an allocation listed at the top of this file.
  void ExpectValid(const PolicyInput& input, const PolicyOutput& output) const {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    ASSERT_EQ(output.allocation.rows(), m);
    ASSERT_EQ(output.allocation.cols(), n);
    if (info().capabilities.packing) {
      ASSERT_EQ(output.pair_allocation.rows(), input.pairs.size());
      ASSERT_EQ(output.pair_allocation.cols(), n);
    } else {
      ASSERT_EQ(output.pair_allocation.rows(), 0u);
    }
    std::vector<double> used(n, 0.0);
    std::vector<double> time(m, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const double x = output.allocation(i, j);
        ASSERT_TRUE(std::isfinite(x)) << "job " << i << " type " << j;
        EXPECT_GE(x, 0.0) << "job " << i << " type " << j;
        EXPECT_LE(x, 1.0) << "job " << i << " type " << j;
        used[j] += input.jobs[i].scale_factor * x;
        time[i] += x;
        if (!compat() && input.throughput(i, j) <= 0.0) {
          EXPECT_LE(x, kSlack) << "job " << i << " gets time on " << input.gpu_types[j]
                               << " where it cannot run";
        }
      }
    }
    for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
      const JobPair& pair = input.pairs[p];
      const auto first = static_cast<std::size_t>(pair.first);
      const auto second = static_cast<std::size_t>(pair.second);
      for (std::size_t j = 0; j < n; ++j) {
        const double x = output.pair_allocation(p, j);
        ASSERT_TRUE(std::isfinite(x)) << "pair " << p << " type " << j;
        EXPECT_GE(x, 0.0) << "pair " << p << " type " << j;
        EXPECT_LE(x, 1.0) << "pair " << p << " type " << j;
        used[j] += input.jobs[first].scale_factor * x;
        time[first] += x;
        time[second] += x;
        if (!compat() && input.pair_throughput_first(p, j) <= 0.0 &&
            input.pair_throughput_second(p, j) <= 0.0) {
          EXPECT_LE(x, kSlack) << "pair " << p << " gets time on " << input.gpu_types[j]
                               << " where it cannot run";
        }
      }
    }
    // The original's FIFO can over-subscribe (its stale loop variable) and its proportional
    // share ignores scale factors (docs/differences.md); by default both respect capacity.
    const bool may_oversubscribe =
        compat() && (info().name == "fifo" || info().name == "proportional");
    for (std::size_t j = 0; j < n && !may_oversubscribe; ++j) {
      EXPECT_LE(used[j], input.gpu_counts[j] + kSlack) << "capacity of " << input.gpu_types[j];
    }
    for (std::size_t i = 0; i < m; ++i) EXPECT_LE(time[i], 1.0 + kSlack) << "time of job " << i;

    switch (output.status) {
      case AllocationStatus::kOptimal:
        // With no job that can run there is nothing to optimise, so no objective either.
        if (!AnyJobCanRun(input)) break;
        ASSERT_TRUE(output.objective.has_value()) << "an optimum without an objective";
        EXPECT_TRUE(std::isfinite(*output.objective));
        break;
      case AllocationStatus::kHeuristic:
        EXPECT_FALSE(output.objective.has_value()) << "a heuristic with an objective";
        break;
      case AllocationStatus::kFallback:
        EXPECT_FALSE(output.note.empty()) << "a fallback that does not say why";
        break;
    }
  }

  // Bad input: a clean error, or a valid allocation.
  void ExpectCleanErrorOrValid(const PolicyInput& input) const {
    const auto output = Allocate(input);
    if (output.ok()) {
      ExpectValid(input, *output);
      return;
    }
    const StatusCode code = output.status().code();
    EXPECT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kFailedPrecondition ||
                code == StatusCode::kNotFound)
        << output.status().ToString();
    EXPECT_FALSE(output.status().message().empty());
  }

  PolicyInput Build(const ClusterSnapshot& snapshot) const {
    auto input = BuildPolicyInput(snapshot, &ShippedTable(), Requirements());
    GAVEL_CHECK_MSG(input.ok(), input.status().ToString().c_str());
    return std::move(input).value();
  }
};

void ExpectSameMatrix(const Matrix& a, const Matrix& b) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  EXPECT_EQ(a.data(), b.data());
}

TEST_P(PolicyPropertiesTest, RandomSnapshotsGiveValidDeterministicAllocations) {
  constexpr int kInstances = 16;
  for (int instance = 0; instance < kInstances; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(RandomSnapshot(rng));
    const auto output = Allocate(input);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    ExpectValid(input, *output);

    const auto again = Allocate(input);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    ExpectSameMatrix(output->allocation, again->allocation);
    ExpectSameMatrix(output->pair_allocation, again->pair_allocation);
    EXPECT_EQ(output->status, again->status);
    EXPECT_EQ(output->objective, again->objective);
    EXPECT_EQ(output->note, again->note);
  }
}

// The registry's capability rows against the policies themselves: a policy declared not to
// need remaining steps (or prices) gets none in real use (0, or an empty list), so withholding
// them must not change its allocation. A wrong row fails here, not on a user's cluster.
TEST_P(PolicyPropertiesTest, WhatAPolicyDeclaresItDoesNotNeedDoesNotChangeItsAllocation) {
  const PolicyCapabilities& declared = info().capabilities;
  if (declared.needs_steps_remaining && declared.needs_instance_costs) GTEST_SKIP();
  for (int instance = 0; instance < 8; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    std::mt19937_64 rng(2000 + static_cast<std::uint64_t>(instance));
    const PolicyInput input = Build(RandomSnapshot(rng));
    PolicyInput withheld = input;
    if (!declared.needs_steps_remaining) {
      for (PolicyJob& job : withheld.jobs) job.steps_remaining = 0.0;
    }
    if (!declared.needs_instance_costs) withheld.instance_costs.clear();
    const auto given = Allocate(input);
    const auto without = Allocate(withheld);
    ASSERT_TRUE(given.ok()) << given.status().ToString();
    ASSERT_TRUE(without.ok()) << without.status().ToString();
    ExpectSameMatrix(given->allocation, without->allocation);
    ExpectSameMatrix(given->pair_allocation, without->pair_allocation);
  }
}

TEST_P(PolicyPropertiesTest, NoJobs) {
  std::mt19937_64 rng(1);
  ClusterSnapshot snapshot = RandomSnapshot(rng);
  snapshot.jobs.clear();
  ExpectCleanErrorOrValid(Build(snapshot));
}

TEST_P(PolicyPropertiesTest, ATypeWithNoGpusIsDropped) {
  std::mt19937_64 rng(2);
  ClusterSnapshot random = RandomSnapshot(rng);
  nlohmann::json j;
  j["cluster"] = {{"k80", 0}, {"p100", 3}, {"v100", 2}};
  j["instance_costs"] = {{"k80", 0.5}, {"p100", 1.5}, {"v100", 2.5}};
  j["jobs"] = nlohmann::json::array();
  for (const JobSpec& job : random.jobs) {
    nlohmann::json spec = {{"id", job.id.value()},
                           {"job_type", job.job_type},
                           {"scale_factor", std::min(job.scale_factor, 2)},
                           {"steps_remaining", *job.steps_remaining},
                           {"time_since_start", job.time_since_start.value()}};
    if (job.slo_time_left) spec["slo"] = job.slo_time_left->value();
    j["jobs"].push_back(spec);
  }
  if (single_gpu_only() || (info().capabilities.packing && compat())) {
    for (auto& spec : j["jobs"]) spec["scale_factor"] = 1;
  }
  auto snapshot = ParseSnapshot(j.dump(), "zero_type.json");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  const PolicyInput input = Build(*snapshot);
  ASSERT_EQ(input.gpu_types, (std::vector<std::string>{"p100", "v100"}));
  ExpectCleanErrorOrValid(input);
}

TEST_P(PolicyPropertiesTest, AJobThatCanRunNowhere) {
  std::mt19937_64 rng(3);
  ClusterSnapshot snapshot = RandomSnapshot(rng);
  snapshot.jobs[1].throughputs = {{"k80", 0.0}, {"p100", 0.0}, {"v100", 0.0}};
  const PolicyInput input = Build(snapshot);
  for (std::size_t j = 0; j < input.num_types(); ++j) ASSERT_EQ(input.throughput(1, j), 0.0);
  ExpectCleanErrorOrValid(input);
}

TEST_P(PolicyPropertiesTest, AJobLargerThanEveryType) {
  std::mt19937_64 rng(4);
  ClusterSnapshot snapshot = RandomSnapshot(rng);
  for (GpuTypeSpec& type : snapshot.gpu_types) type.count = 2;
  for (JobSpec& job : snapshot.jobs) {
    if (job.scale_factor > 2) job.job_type = ModelsWithScaleFactor(job.scale_factor = 2).at(0);
  }
  snapshot.jobs[0].scale_factor = 4;
  snapshot.jobs[0].job_type = "LM (batch size 20)";
  const PolicyInput input = Build(snapshot);
  for (std::size_t j = 0; j < input.num_types(); ++j) ASSERT_EQ(input.throughput(0, j), 0.0);
  ExpectCleanErrorOrValid(input);
}

TEST_P(PolicyPropertiesTest, NothingCanRunAnywhere) {
  std::mt19937_64 rng(5);
  ClusterSnapshot snapshot = RandomSnapshot(rng);
  for (JobSpec& job : snapshot.jobs) job.throughputs = {{"k80", 0}, {"p100", 0}, {"v100", 0}};
  ExpectCleanErrorOrValid(Build(snapshot));
}

// Throughputs at the ends of their documented bounds (core/bounds.h: 1e-4 to 1e5 steps/s)
// still give a valid allocation that gives GPUs to someone. Regression: one job's throughput
// of 1e308 once made every allocation all-zero while the solver reported "optimal"; the
// bounds now refuse that, and the values they let in must keep the LPs meaningful.
TEST_P(PolicyPropertiesTest, ThroughputsAtTheBoundsGiveSensibleAllocations) {
  std::mt19937_64 rng(7);
  ClusterSnapshot snapshot = RandomTableCluster(rng, /*max_gpus_per_type=*/4);
  const double extremes[][3] = {{bounds::kMaxThroughput, bounds::kMinPositiveThroughput, 0.0},
                                {bounds::kMinPositiveThroughput, bounds::kMinPositiveThroughput,
                                 bounds::kMinPositiveThroughput},
                                {bounds::kMaxThroughput, bounds::kMaxThroughput, 1.0}};
  for (std::uint64_t i = 0; i < 5; ++i) {
    JobSpec job = RandomTableJob(rng, JobId(i), 1);
    if (i < 3) {
      job.throughputs = {{"v100", extremes[i][0]}, {"p100", extremes[i][1]},
                         {"k80", extremes[i][2]}};
    }
    job.steps_remaining = i == 1 ? bounds::kMaxSteps : 1000.0;
    snapshot.jobs.push_back(job);
  }
  const PolicyInput input = Build(snapshot);
  const auto output = Allocate(input);
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  ExpectValid(input, *output);
  double total = 0.0;
  for (double x : output->allocation.data()) total += x;
  for (double x : output->pair_allocation.data()) total += x;
  EXPECT_GT(total, 0.1) << "no job gets any GPU time";
}

// Max-min fairness over normalised throughput does not depend on a job's units: scaling one
// job's throughputs by any factor that keeps them in bounds leaves the fair share (the
// objective) unchanged. An independent check that the LP is scaled per job row, whatever the
// magnitudes.
TEST(PolicyScalingTest, MaxMinFairnessIsInvariantToEachJobsThroughputUnits) {
  ClusterSnapshot snapshot;
  snapshot.gpu_types = {GpuTypeSpec{"k80", 3, 1}, GpuTypeSpec{"p100", 2, 1},
                        GpuTypeSpec{"v100", 2, 1}};
  const double base[][3] = {{1.0, 1.6, 2.0}, {1.2, 1.3, 1.9}, {1.0, 2.0, 2.5}, {1.5, 1.5, 1.6}};
  const double scale[] = {bounds::kMaxThroughput / 2.5, bounds::kMinPositiveThroughput, 1.0,
                          300.0};
  for (const char* name : {"max_min_fairness_perf", "max_min_fairness"}) {
    SCOPED_TRACE(name);
    std::optional<double> objectives[2];
    for (int scaled = 0; scaled < 2; ++scaled) {
      ClusterSnapshot s = snapshot;
      for (std::uint64_t i = 0; i < 4; ++i) {
        JobSpec job;
        job.id = JobId(i);
        job.job_type = "ResNet-18 (batch size 64)";
        const double f = scaled == 1 ? scale[i] : 1.0;
        job.throughputs = {{"k80", base[i][0] * f}, {"p100", base[i][1] * f},
                           {"v100", base[i][2] * f}};
        s.jobs.push_back(job);
      }
      auto input = BuildPolicyInput(s, &ShippedTable(), InputRequirements{});
      ASSERT_TRUE(input.ok()) << input.status().ToString();
      auto policy = MakePolicy(name, PolicyOptions{});
      ASSERT_TRUE(policy.ok());
      auto output = (*policy)->Allocate(*input);
      ASSERT_TRUE(output.ok()) << output.status().ToString();
      objectives[scaled] = output->objective;
    }
    ASSERT_TRUE(objectives[0].has_value() && objectives[1].has_value());
    EXPECT_GT(*objectives[0], 0.0);
    EXPECT_NEAR(*objectives[1], *objectives[0], 1e-6 * *objectives[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, PolicyPropertiesTest, ::testing::ValuesIn(AllCases()), CaseName);

TEST(PolicyRegistryTest, NamesAreUniqueAndFindable) {
  std::set<std::string_view> names;
  for (const PolicyInfo& info : AllPolicies()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    const auto found = FindPolicy(info.name);
    ASSERT_TRUE(found.ok()) << info.name;
    EXPECT_EQ((*found)->name, info.name);
    ASSERT_NE(info.make, nullptr) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
  }
  // The original's CLI names (its scheduler/utils.py, get_policy) are all there.
  for (const char* name : {"allox",
                           "fifo",
                           "fifo_perf",
                           "fifo_packed",
                           "finish_time_fairness",
                           "finish_time_fairness_perf",
                           "finish_time_fairness_packed",
                           "gandiva",
                           "isolated",
                           "max_min_fairness",
                           "max_min_fairness_perf",
                           "max_min_fairness_packed",
                           "max_min_fairness_water_filling",
                           "max_min_fairness_water_filling_perf",
                           "max_min_fairness_water_filling_packed",
                           "max_sum_throughput_perf",
                           "max_sum_throughput_normalized_by_cost_perf",
                           "max_sum_throughput_normalized_by_cost_perf_SLOs",
                           "max_sum_throughput_normalized_by_cost_packed_SLOs",
                           "min_total_duration",
                           "min_total_duration_perf",
                           "min_total_duration_packed"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }
  EXPECT_EQ(FindPolicy("no_such_policy").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(FindPolicy("allox_alpha=0.5").ok());
  EXPECT_FALSE(MakePolicy("allox_alpha=-1", {}).ok());
  EXPECT_FALSE(MakePolicy("allox_alpha=abc", {}).ok());
}

}  // namespace
}  // namespace gavel::policy
