#include "gavel/policy/max_sum_throughput.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/model.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/policy_test_support.h"
#include "gavel/policy/registry.h"

namespace gavel::policy {
namespace {

PolicyJob Job(std::uint64_t id, double remaining = 0.0, std::optional<double> slo = std::nullopt,
              int scale_factor = 1) {
  PolicyJob job;
  job.id = JobId(id);
  job.scale_factor = scale_factor;
  job.steps_remaining = remaining;
  if (slo.has_value()) job.slo_time_left = Seconds(*slo);
  return job;
}

Result<PolicyOutput> SumThroughput(const MaxSumThroughputOptions& variant, const PolicyInput& input,
                                   bool compat = false) {
  PolicyOptions options;
  options.compat_gavel = compat;
  return MakeMaxSumThroughput(variant, options)->Allocate(input);
}

// Σ over jobs and types of steps/s per dollar (cost 1 when none), from the raw matrices.
double ObjectiveOf(const PolicyInput& input, const PolicyOutput& out,
                   const std::vector<double>& costs) {
  double total = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      total += input.throughput(i, j) / costs[j] * out.allocation(i, j);
    }
  }
  for (std::size_t p = 0; p < out.pair_allocation.rows(); ++p) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      total += (input.pair_throughput_first(p, j) + input.pair_throughput_second(p, j)) / costs[j] *
               out.pair_allocation(p, j);
    }
  }
  return total;
}

// The same problem written here from scratch and solved by GLPK: the optimum with the SLO
// rows, or without them when those make it infeasible (second = true then).
std::pair<double, bool> GlpkOptimum(const PolicyInput& input, const std::vector<double>& costs,
                                    bool packed, bool slos) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  ReferenceLp reference = BuildReferenceLp(input, input.throughput, packed);
  lp::Model& model = reference.model;
  const std::vector<std::vector<std::pair<int, double>>>& thr = reference.thr;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      model.SetObjective(static_cast<int>(i * n + j), input.throughput(i, j) / costs[j]);
    }
  }
  for (std::size_t p = 0; packed && p < input.pairs.size(); ++p) {
    for (std::size_t j = 0; j < n; ++j) {
      const double both = input.pair_throughput_first(p, j) + input.pair_throughput_second(p, j);
      model.SetObjective(static_cast<int>(m * n + p * n + j), both / costs[j]);
    }
  }
  const auto without = lp::MakeGlpkSolver()->Solve(model);
  EXPECT_TRUE(without.ok() && without->outcome == lp::Outcome::kOptimal);
  if (!slos) return {without->objective, false};
  for (std::size_t i = 0; i < m; ++i) {
    const auto& slo = input.jobs[i].slo_time_left;
    if (!slo.has_value() || slo->value() <= 0) continue;
    std::vector<int> cols;
    std::vector<double> coefs;
    for (auto [c, t] : thr[i]) {
      cols.push_back(c);
      coefs.push_back(t);
    }
    model.AddRow(input.jobs[i].steps_remaining / slo->value(), lp::kInfinity, cols, coefs);
  }
  const auto with = lp::MakeGlpkSolver()->Solve(model);
  EXPECT_TRUE(with.ok());
  if (with->outcome == lp::Outcome::kOptimal) return {with->objective, false};
  return {without->objective, true};
}

// Random instances, every variant, against GLPK: the optimum agrees to 1e-6 (relative), the
// allocation reaches it, SLO rows hold when the answer is not a fallback.
TEST(MaxSumThroughputTest, MatchesIndependentLpOnRandomInstances) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> speed(0.2, 20.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_real_distribution<double> price(0.1, 3.0);
  int fallbacks = 0;
  int met = 0;
  for (int trial = 0; trial < 160; ++trial) {
    SCOPED_TRACE(trial);
    const MaxSumThroughputOptions variant{trial % 2 == 0, trial % 4 >= 2, trial % 8 >= 4};
    const bool compat = trial % 16 >= 8;
    const std::size_t m = 1 + static_cast<std::size_t>(rng() % 6);
    const std::size_t n = 1 + static_cast<std::size_t>(rng() % 3);
    std::vector<std::string> types = {"k80", "p100", "v100"};
    types.resize(n);
    std::vector<double> counts;
    for (std::size_t j = 0; j < n; ++j) counts.push_back(static_cast<double>(1 + rng() % 4));
    const int packed_scale = 1 + static_cast<int>(rng() % 2);
    std::vector<PolicyJob> jobs;
    std::vector<std::vector<double>> rows(m, std::vector<double>(n));
    for (std::size_t i = 0; i < m; ++i) {
      const int sf = variant.packed ? packed_scale : 1 + static_cast<int>(rng() % 2);
      std::optional<double> slo;
      if (unit(rng) < 0.5) slo = unit(rng) < 0.1 ? -100.0 : 1000.0 + 1e4 * unit(rng);
      jobs.push_back(Job(i, 1e3 + 1e5 * unit(rng), slo, sf));
      for (std::size_t j = 0; j < n; ++j) {
        rows[i][j] = (sf <= counts[j] && unit(rng) > 0.2) ? speed(rng) : 0.0;
      }
    }
    PolicyInput input = MakeInput(types, counts, jobs, rows);
    if (variant.packed) {
      for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
          input.pairs.push_back(JobPair{static_cast<int>(a), static_cast<int>(b)});
        }
      }
      input.pair_throughput_first = Matrix(input.pairs.size(), n);
      input.pair_throughput_second = Matrix(input.pairs.size(), n);
      for (std::size_t p = 0; p < input.pairs.size(); ++p) {
        for (std::size_t j = 0; j < n; ++j) {
          input.pair_throughput_first(p, j) =
              rows[static_cast<std::size_t>(input.pairs[p].first)][j] * unit(rng);
          input.pair_throughput_second(p, j) =
              rows[static_cast<std::size_t>(input.pairs[p].second)][j] * unit(rng);
        }
      }
    }
    std::vector<double> costs(n, 1.0);
    if (variant.per_cost) {
      for (std::size_t j = 0; j < n; ++j) costs[j] = price(rng);
      input.instance_costs = costs;
    }
    const auto [expected, fallback] = GlpkOptimum(input, costs, variant.packed, variant.slos);

    const auto out = SumThroughput(variant, input, compat);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectValidAllocation(input, *out);
    ASSERT_TRUE(out->objective.has_value());
    EXPECT_NEAR(*out->objective, expected, 1e-6 * std::max(1.0, expected));
    EXPECT_NEAR(ObjectiveOf(input, *out, costs), expected, 1e-6 * std::max(1.0, expected));
    EXPECT_EQ(out->status, fallback ? AllocationStatus::kFallback : AllocationStatus::kOptimal);
    fallbacks += fallback ? 1 : 0;
    if (!variant.slos || fallback) continue;
    for (std::size_t i = 0; i < m; ++i) {
      const auto& slo = input.jobs[i].slo_time_left;
      if (!slo.has_value() || slo->value() <= 0) continue;
      ++met;
      EXPECT_GE(ThroughputOf(input, *out, i),
                input.jobs[i].steps_remaining / slo->value() * (1 - 1e-6));
    }
  }
  // Both paths were exercised.
  EXPECT_GT(fallbacks, 3);
  EXPECT_GT(met, 10);
}

// One GPU; A runs 10 steps/s, B 1 step/s. Without SLOs A gets the GPU: 10 steps/s.
// B must do 100 steps in 200 s, so b >= 0.5: the best is a = b = 0.5, 5 + 0.5 = 5.5.
// With 100 steps in 50 s B would need 2 steps/s > 1: impossible, so the SLOs are dropped and
// A gets the GPU again (status fallback).
TEST(MaxSumThroughputTest, HandWorkedSlos) {
  const MaxSumThroughputOptions with_slos{true, true, false};
  PolicyInput input = MakeInput({"v100"}, {1}, {Job(0, 1e6), Job(1, 100, 200.0)}, {{10}, {1}});
  input.instance_costs = {1.0};
  // Under --compat gavel the answer is an interior-point (central) solution, accurate to
  // about 1e-8.
  constexpr double kTol = 1e-6;
  for (bool compat : {false, true}) {
    SCOPED_TRACE(compat);
    const auto plain = SumThroughput({false, false, false}, input, compat);
    ASSERT_TRUE(plain.ok());
    EXPECT_NEAR(*plain->objective, 10.0, kTol);
    EXPECT_NEAR(plain->allocation(0, 0), 1.0, 1e-6);

    const auto met = SumThroughput(with_slos, input, compat);
    ASSERT_TRUE(met.ok()) << met.status().ToString();
    EXPECT_EQ(met->status, AllocationStatus::kOptimal);
    EXPECT_NEAR(*met->objective, 5.5, kTol);
    EXPECT_NEAR(met->allocation(1, 0), 0.5, 1e-6);
    ExpectValidAllocation(input, *met);

    PolicyInput tight = input;
    tight.jobs[1].slo_time_left = Seconds(50.0);
    const auto missed = SumThroughput(with_slos, tight, compat);
    ASSERT_TRUE(missed.ok()) << missed.status().ToString();
    EXPECT_EQ(missed->status, AllocationStatus::kFallback);
    EXPECT_FALSE(missed->note.empty());
    EXPECT_NEAR(*missed->objective, 10.0, kTol);
    EXPECT_NEAR(missed->allocation(0, 0), 1.0, 1e-6);

    // A deadline already passed binds nothing (as the original's negative right-hand side).
    PolicyInput passed = input;
    passed.jobs[1].slo_time_left = Seconds(-10.0);
    const auto late = SumThroughput(with_slos, passed, compat);
    ASSERT_TRUE(late.ok());
    EXPECT_EQ(late->status, AllocationStatus::kOptimal);
    EXPECT_NEAR(*late->objective, 10.0, kTol);
  }
}

// One job, k80 1 step/s at $0.20/h and v100 3 steps/s at $0.90/h, one GPU each. By
// throughput v100 wins (3 > 1); per dollar k80 wins (1/0.2 = 5 > 3/0.9 = 3.33).
TEST(MaxSumThroughputTest, CostChangesTheChosenType) {
  PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {Job(0)}, {{1, 3}});
  input.instance_costs = {0.2, 0.9};
  const auto fastest = SumThroughput({false, false, false}, input);
  ASSERT_TRUE(fastest.ok());
  EXPECT_NEAR(fastest->allocation(0, 1), 1.0, 1e-9);
  EXPECT_NEAR(*fastest->objective, 3.0, 1e-9);
  const auto cheapest = SumThroughput({true, false, false}, input);
  ASSERT_TRUE(cheapest.ok());
  EXPECT_NEAR(cheapest->allocation(0, 0), 1.0, 1e-9);
  EXPECT_NEAR(*cheapest->objective, 5.0, 1e-9);
}

// Two jobs sharing one GPU: alone 1 step/s each, together 0.7 and 0.6. Packing runs both:
// 1.3 > 1 step/s in total.
TEST(MaxSumThroughputTest, HandWorkedPacking) {
  PolicyInput input = MakeInput({"v100"}, {1}, {Job(0), Job(1)}, {{1}, {1}});
  input.pairs = {JobPair{0, 1}};
  input.pair_throughput_first = Matrix(1, 1, 0.7);
  input.pair_throughput_second = Matrix(1, 1, 0.6);
  const auto packed = SumThroughput({false, false, true}, input);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  ExpectValidAllocation(input, *packed);
  EXPECT_NEAR(*packed->objective, 1.3, 1e-9);
  EXPECT_NEAR(packed->pair_allocation(0, 0), 1.0, 1e-9);
  const auto alone = SumThroughput({false, false, false}, input);
  ASSERT_TRUE(alone.ok());
  EXPECT_NEAR(*alone->objective, 1.0, 1e-9);
  EXPECT_EQ(alone->pair_allocation.rows(), 0u);
}

TEST(MaxSumThroughputTest, PerCostNeedsPositivePrices) {
  PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {Job(0)}, {{1, 3}});
  EXPECT_FALSE(SumThroughput({true, false, false}, input).ok());
  input.instance_costs = {0.2, 0.0};
  EXPECT_FALSE(SumThroughput({true, false, false}, input).ok());
  input.instance_costs = {0.2, 0.5};
  EXPECT_TRUE(SumThroughput({true, false, false}, input).ok());
}

TEST(MaxSumThroughputTest, RegistryNamesTheVariants) {
  PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {Job(0, 100, 10.0)}, {{1, 3}});
  input.instance_costs = {0.2, 0.9};
  // Names and the hand-worked optimum each gives (the SLO, 10 steps/s, cannot be met).
  const std::pair<const char*, double> cases[] = {
      {"max_sum_throughput_perf", 3.0},
      {"max_sum_throughput_normalized_by_cost_perf", 5.0},
      {"max_sum_throughput_normalized_by_cost_perf_SLOs", 5.0},
      {"max_sum_throughput_normalized_by_cost_packed_SLOs", 5.0}};
  for (const auto& [name, objective] : cases) {
    SCOPED_TRACE(name);
    auto policy = MakePolicy(name, PolicyOptions{});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    const auto out = (*policy)->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_NEAR(*out->objective, objective, 1e-9);
  }
}

TEST(MaxSumThroughputTest, NoJobsGiveAnEmptyAllocation) {
  const PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {}, {});
  const auto out = SumThroughput({false, false, false}, input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->allocation.rows(), 0u);
}

}  // namespace
}  // namespace gavel::policy
