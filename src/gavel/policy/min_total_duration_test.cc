#include "gavel/policy/min_total_duration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/model.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

constexpr double kTol = 1e-7;

PolicyJob Job(std::uint64_t id, double remaining, int scale_factor = 1) {
  PolicyJob job;
  job.id = JobId(id);
  job.scale_factor = scale_factor;
  job.steps_remaining = remaining;
  return job;
}

bool CanRun(const PolicyInput& input, std::size_t i, bool packed) {
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    if (input.throughput(i, j) > 0.0) return true;
  }
  if (!packed) return false;
  for (std::size_t p = 0; p < input.pairs.size(); ++p) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (static_cast<std::size_t>(input.pairs[p].first) == i &&
          input.pair_throughput_first(p, j) > 0.0) {
        return true;
      }
      if (static_cast<std::size_t>(input.pairs[p].second) == i &&
          input.pair_throughput_second(p, j) > 0.0) {
        return true;
      }
    }
  }
  return false;
}

// The makespan an allocation actually achieves: max over jobs with work of R_i / thr_i(X).
double AchievedMakespan(const PolicyInput& input, const PolicyOutput& out, bool packed) {
  double makespan = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (input.jobs[i].steps_remaining <= 0.0 || !CanRun(input, i, packed)) continue;
    makespan = std::max(makespan, input.jobs[i].steps_remaining / ThroughputOf(input, out, i));
  }
  return makespan;
}

// An independent makespan: bisection on M over feasibility LPs built here from scratch
// (not through common.h) and solved by GLPK. Row i, scaled so its right-hand side is 1:
// Σ (M T / R_i) X >= 1.
double GlpkMakespan(const PolicyInput& input, const Matrix& believed, bool packed) {
  const std::size_t m = input.num_jobs();
  const ReferenceLp reference = BuildReferenceLp(input, believed, packed);
  const std::vector<std::vector<std::pair<int, double>>>& thr = reference.thr;
  auto feasible = [&](double makespan) {
    lp::Model model = reference.model;
    for (std::size_t i = 0; i < m; ++i) {
      const double remaining = input.jobs[i].steps_remaining;
      bool runs = false;
      for (auto [c, t] : thr[i]) runs = runs || t > 0.0;
      if (remaining <= 0.0 || !runs) continue;
      std::vector<int> cols;
      std::vector<double> coefs;
      for (auto [c, t] : thr[i]) {
        cols.push_back(c);
        coefs.push_back(makespan * t / remaining);
      }
      model.AddRow(1.0, lp::kInfinity, cols, coefs);
    }
    const auto solution = lp::MakeGlpkSolver()->Solve(model);
    EXPECT_TRUE(solution.ok());
    return solution.ok() && solution->outcome == lp::Outcome::kOptimal;
  };
  double lo = 1e-3;
  double hi = 1e12;
  EXPECT_TRUE(feasible(hi));
  while (hi / lo > 1.0 + 1e-10) {
    const double mid = std::sqrt(lo * hi);
    (feasible(mid) ? hi : lo) = mid;
  }
  return hi;
}

Result<PolicyOutput> Makespan(Variant variant, const PolicyInput& input, bool compat = false) {
  PolicyOptions options;
  options.compat_gavel = compat;
  return MakeMinTotalDuration(variant, options)->Allocate(input);
}

// Two jobs, k80 and v100 with one GPU each. A: 1 and 4 steps/s, 400 steps; B: 1 and 2 steps/s,
// 200 steps. B should take k80 time (its v100 speed-up 2 is smaller than A's 4), but B's own
// time limit (Σ_j X_Bj <= 1) caps it at 1 step/s on k80 alone, so it needs some v100 too.
// With every GPU and both jobs busy (a1 + b1 = a2 + b2 = a1 + a2 = b1 + b2 = 1, b2 = β):
// thr_A = β + 4(1 - β), thr_B = (1 - β) + 2β. Equal finish times: 400 / (4 - 3β) = 200 / (1 + β)
// → 400 + 400β = 800 - 600β → β = 0.4 → M = 200 / 1.4 = 1000/7 ≈ 142.857 s.
// Optimality (LP duality): multipliers u_A = 1/1000, u_B = 3/1000 on the throughput rows
// (400 u_A + 200 u_B = 1), p_k80 = 1/1000, p_v100 = 4/1000 on capacity, q_A = 0, q_B = 2/1000
// on time are nonnegative, cover each column (a1: u_A <= p_k80 + q_A, a2: 4u_A <= p_v100 + q_A,
// b1: u_B <= p_k80 + q_B, b2: 2u_B <= p_v100 + q_B, all with equality) and sum to 7/1000, so
// 1/M <= 7/1000.
TEST(MinTotalDurationTest, HandWorkedHeterogeneousMakespan) {
  const PolicyInput input =
      MakeInput({"k80", "v100"}, {1, 1}, {Job(0, 400), Job(1, 200)}, {{1, 4}, {1, 2}});
  const auto out = Makespan(Variant::kPerf, input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectValidAllocation(input, *out);
  ASSERT_TRUE(out->objective.has_value());
  EXPECT_NEAR(*out->objective, 1000.0 / 7.0, 1e-6);
  EXPECT_EQ(out->status, AllocationStatus::kOptimal);
  EXPECT_NEAR(out->allocation(1, 1), 0.4, 1e-6);
  EXPECT_NEAR(out->allocation(0, 1), 0.6, 1e-6);
  EXPECT_NEAR(AchievedMakespan(input, *out, false), 1000.0 / 7.0, 1e-6);

  // The original's search stops once 1.05 · (an infeasible M) >= (a feasible M).
  const auto compat = Makespan(Variant::kPerf, input, /*compat=*/true);
  ASSERT_TRUE(compat.ok()) << compat.status().ToString();
  ExpectValidAllocation(input, *compat);
  EXPECT_GE(*compat->objective, 1000.0 / 7.0 * (1 - kTol));
  EXPECT_LE(*compat->objective, 1.05 * 1000.0 / 7.0);
  EXPECT_LE(AchievedMakespan(input, *compat, false), *compat->objective * (1 + 1e-6));
}

// Two jobs sharing one GPU: alone 1 step/s each, together 0.8 each, 100 steps each. Without
// sharing the GPU gives 1 step/s in total: M = 200. Sharing all the time gives each 0.8:
// M = 125. Optimal: thr_A + thr_B = x_A + x_B + 1.6 x_p <= 1.6 (x_A + x_B + x_p) <= 1.6 by
// capacity, so 200 / M <= 1.6.
TEST(MinTotalDurationTest, HandWorkedPackedMakespan) {
  PolicyInput input = MakeInput({"v100"}, {1}, {Job(0, 100), Job(1, 100)}, {{1}, {1}});
  input.pairs = {JobPair{0, 1}};
  input.pair_throughput_first = Matrix(1, 1, 0.8);
  input.pair_throughput_second = Matrix(1, 1, 0.8);
  const auto perf = Makespan(Variant::kPerf, input);
  ASSERT_TRUE(perf.ok()) << perf.status().ToString();
  EXPECT_NEAR(*perf->objective, 200.0, 1e-6);
  EXPECT_EQ(perf->pair_allocation.rows(), 0u);
  for (bool compat : {false, true}) {
    SCOPED_TRACE(compat);
    const auto packed = Makespan(Variant::kPacked, input, compat);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    ExpectValidAllocation(input, *packed);
    ASSERT_EQ(packed->pair_allocation.rows(), 1u);
    EXPECT_GE(*packed->objective, 125.0 * (1 - kTol));
    EXPECT_LE(*packed->objective, 125.0 * (compat ? 1.05 : 1 + 1e-6));
    EXPECT_LE(AchievedMakespan(input, *packed, true), *packed->objective * (1 + 1e-6));
  }
}

// Random tiny instances against the GLPK bisection, perf and packed; the compat bisection
// lands within 5% above the optimum (or in [100, 105] when the optimum is below the
// original's floor of 100 s).
TEST(MinTotalDurationTest, MatchesIndependentBisectionOnRandomInstances) {
  std::mt19937 rng(20240601);
  std::uniform_real_distribution<double> speed(0.5, 10.0);
  std::uniform_real_distribution<double> steps(50.0, 1e5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(trial);
    const std::size_t m = 2 + static_cast<std::size_t>(rng() % 3);
    const std::size_t n = 2 + static_cast<std::size_t>(rng() % 2);
    const bool packed = trial % 2 == 1;
    std::vector<std::string> types = {"k80", "p100", "v100"};
    types.resize(n);
    std::vector<double> counts;
    for (std::size_t j = 0; j < n; ++j) counts.push_back(static_cast<double>(1 + rng() % 3));
    std::vector<PolicyJob> jobs;
    std::vector<std::vector<double>> rows(m, std::vector<double>(n));
    // Packed instances keep one scale factor (the scheduler only pairs equal ones).
    const int packed_scale = 1 + static_cast<int>(rng() % 2);
    for (std::size_t i = 0; i < m; ++i) {
      const int sf = packed ? packed_scale : 1 + static_cast<int>(rng() % 2);
      jobs.push_back(Job(i, unit(rng) < 0.1 ? 0.0 : steps(rng), sf));
      for (std::size_t j = 0; j < n; ++j) {
        const bool fits = sf <= counts[j];
        rows[i][j] = (fits && unit(rng) > 0.2) ? speed(rng) : 0.0;
      }
    }
    PolicyInput input = MakeInput(types, counts, jobs, rows);
    if (packed) {
      std::vector<std::vector<double>> first, second;
      for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
          input.pairs.push_back(JobPair{static_cast<int>(a), static_cast<int>(b)});
          first.emplace_back();
          second.emplace_back();
          for (std::size_t j = 0; j < n; ++j) {
            first.back().push_back(rows[a][j] * unit(rng));
            second.back().push_back(rows[b][j] * unit(rng));
          }
        }
      }
      input.pair_throughput_first = Matrix(input.pairs.size(), n);
      input.pair_throughput_second = Matrix(input.pairs.size(), n);
      for (std::size_t p = 0; p < input.pairs.size(); ++p) {
        for (std::size_t j = 0; j < n; ++j) {
          input.pair_throughput_first(p, j) = first[p][j];
          input.pair_throughput_second(p, j) = second[p][j];
        }
      }
    }
    bool any_work = false;
    for (std::size_t i = 0; i < m; ++i) {
      any_work = any_work || (jobs[i].steps_remaining > 0 && CanRun(input, i, packed));
    }
    if (!any_work) continue;
    const Variant variant = packed ? Variant::kPacked : Variant::kPerf;
    const double truth = GlpkMakespan(input, input.throughput, packed);

    const auto exact = Makespan(variant, input);
    ASSERT_TRUE(exact.ok()) << exact.status().ToString();
    ExpectValidAllocation(input, *exact);
    EXPECT_NEAR(*exact->objective / truth, 1.0, 1e-6);
    EXPECT_NEAR(AchievedMakespan(input, *exact, packed) / truth, 1.0, 1e-6);

    const auto compat = Makespan(variant, input, /*compat=*/true);
    ASSERT_TRUE(compat.ok()) << compat.status().ToString();
    ExpectValidAllocation(input, *compat);
    const double floor = std::max(truth, 100.0);
    EXPECT_GE(*compat->objective, floor * (1 - 1e-6));
    EXPECT_LE(*compat->objective, 1.05 * floor * (1 + 1e-6));
    EXPECT_LE(AchievedMakespan(input, *compat, packed), *compat->objective * (1 + 1e-6));
  }
}

// The original's search widens its bracket tenfold while nothing in it is feasible: a
// makespan of 5e7 s (one job, 1 step/s, 5e7 steps) needs the brackets [1e6, 1e7] and
// [1e7, 1e8].
TEST(MinTotalDurationTest, CompatSearchWidensBeyondItsFirstBracket) {
  const PolicyInput input = MakeInput({"v100"}, {1}, {Job(0, 5e7)}, {{1}});
  const auto compat = Makespan(Variant::kPerf, input, /*compat=*/true);
  ASSERT_TRUE(compat.ok()) << compat.status().ToString();
  EXPECT_GE(*compat->objective, 5e7 * (1 - kTol));
  EXPECT_LE(*compat->objective, 1.05 * 5e7);
  const auto exact = Makespan(Variant::kPerf, input);
  ASSERT_TRUE(exact.ok());
  EXPECT_NEAR(*exact->objective, 5e7, 5e7 * 1e-9);
  EXPECT_NEAR(exact->allocation(0, 0), 1.0, 1e-9);
}

// One job, k80 1 step/s and v100 3 steps/s, one GPU each, 600 steps. Aware: all on v100,
// M = 200. Agnostic (default) believes the cluster-wide average (1·1 + 3·1) / 2 = 2 steps/s
// on either type, so M = 300 by its beliefs; under --compat gavel the v100 column, 3 on
// both, so M = 200 (within the search's 5%). With no v100 the compat variant errs.
TEST(MinTotalDurationTest, AgnosticBelievesTheAverageOrTheV100Column) {
  const PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {Job(0, 600)}, {{1, 3}});
  const auto perf = Makespan(Variant::kPerf, input);
  ASSERT_TRUE(perf.ok());
  EXPECT_NEAR(*perf->objective, 200.0, 1e-6);
  const auto agnostic = Makespan(Variant::kAgnostic, input);
  ASSERT_TRUE(agnostic.ok()) << agnostic.status().ToString();
  ExpectValidAllocation(input, *agnostic);
  EXPECT_NEAR(*agnostic->objective, 300.0, 1e-6);
  EXPECT_NEAR(agnostic->allocation.RowSum(0), 1.0, 1e-6);
  const auto compat = Makespan(Variant::kAgnostic, input, /*compat=*/true);
  ASSERT_TRUE(compat.ok()) << compat.status().ToString();
  EXPECT_GE(*compat->objective, 200.0 * (1 - kTol));
  EXPECT_LE(*compat->objective, 210.0);

  const PolicyInput no_v100 = MakeInput({"k80", "p100"}, {1, 1}, {Job(0, 600)}, {{1, 3}});
  EXPECT_FALSE(Makespan(Variant::kAgnostic, no_v100, /*compat=*/true).ok());
  EXPECT_TRUE(Makespan(Variant::kAgnostic, no_v100).ok());
}

// Agnostic against the GLPK bisection on the average-throughput matrix built here.
TEST(MinTotalDurationTest, AgnosticMatchesIndependentBisection) {
  const PolicyInput input =
      MakeInput({"k80", "p100", "v100"}, {2, 1, 3}, {Job(0, 4000), Job(1, 9000), Job(2, 1500)},
                {{1, 2, 5}, {0.5, 0, 4}, {2, 3, 3}});
  Matrix average(3, 3);
  for (std::size_t i = 0; i < 3; ++i) {
    double value = 0.0;
    for (std::size_t j = 0; j < 3; ++j) value += input.throughput(i, j) * input.gpu_counts[j] / 6.0;
    for (std::size_t j = 0; j < 3; ++j) average(i, j) = input.throughput(i, j) > 0 ? value : 0.0;
  }
  const auto agnostic = Makespan(Variant::kAgnostic, input);
  ASSERT_TRUE(agnostic.ok()) << agnostic.status().ToString();
  ExpectValidAllocation(input, *agnostic);
  EXPECT_NEAR(*agnostic->objective / GlpkMakespan(input, average, false), 1.0, 1e-6);
}

// A job that can run nowhere (the original's search would never end) and a job with nothing
// left do not enter the makespan: one GPU, the only job with work runs 2 steps/s for 1000
// steps, M = 500.
TEST(MinTotalDurationTest, JobsWithoutWorkOrWithoutGpusAreLeftOut) {
  const PolicyInput input =
      MakeInput({"v100"}, {2}, {Job(0, 1000), Job(1, 1e9), Job(2, 0)}, {{2}, {0}, {5}});
  for (bool compat : {false, true}) {
    SCOPED_TRACE(compat);
    const auto out = Makespan(Variant::kPerf, input, compat);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectValidAllocation(input, *out);
    EXPECT_GE(*out->objective, 500.0 * (1 - kTol));
    EXPECT_LE(*out->objective, 500.0 * (compat ? 1.05 : 1 + 1e-6));
  }
  const PolicyInput idle = MakeInput({"v100"}, {2}, {Job(0, 0), Job(1, 10)}, {{2}, {0}});
  const auto out = Makespan(Variant::kPerf, idle);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out->objective, 0.0);
  ExpectValidAllocation(idle, *out);
}

TEST(MinTotalDurationTest, NoJobsGiveAnEmptyAllocation) {
  const PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {}, {});
  for (Variant v : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    const auto out = Makespan(v, input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->allocation.rows(), 0u);
  }
}

}  // namespace
}  // namespace gavel::policy
