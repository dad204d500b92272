#include "gavel/policy/max_min_fairness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/model.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/registry.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Building problems.

struct JobDesc {
  std::vector<double> throughput;  // steps/s per type (whole job)
  int scale_factor = 1;
  double weight = 1.0;
};

// Types t0 < t1 < t2 < t3: the columns keep this order.
std::string TypeName(std::size_t j) {
  static const char* const kNames[] = {"t0", "t1", "t2", "t3"};
  return kNames[j];
}

PolicyInput MakeInput(const std::vector<double>& counts, const std::vector<JobDesc>& jobs) {
  ClusterSnapshot snapshot;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    snapshot.gpu_types.push_back(GpuTypeSpec{TypeName(j), static_cast<int>(counts[j]), 1});
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    JobSpec spec;
    spec.id = JobId(i);
    spec.scale_factor = jobs[i].scale_factor;
    spec.priority_weight = jobs[i].weight;
    for (std::size_t j = 0; j < counts.size(); ++j) {
      spec.throughputs[TypeName(j)] = jobs[i].throughput[j];
    }
    snapshot.jobs.push_back(spec);
  }
  auto input = BuildPolicyInput(snapshot, nullptr, {});
  GAVEL_CHECK_MSG(input.ok(), input.status().ToString().c_str());
  return std::move(input).value();
}

struct PairDesc {
  int first = 0;
  int second = 0;
  std::vector<double> first_throughput;
  std::vector<double> second_throughput;
};

// Adds space-sharing pairs (sorted by (first, second) by the caller) to an input without any.
void AddPairs(PolicyInput& input, const std::vector<PairDesc>& pairs) {
  for (const PairDesc& pair : pairs) {
    AddPair(input, pair.first, pair.second, pair.first_throughput, pair.second_throughput);
  }
}

Result<PolicyOutput> Allocate(Variant variant, const PolicyInput& input, bool compat = false) {
  PolicyOptions options;
  options.compat_gavel = compat;
  return MakeMaxMinFairness(variant, options)->Allocate(input);
}

// ---------------------------------------------------------------------------------------------
// An independent formulation, written from docs/policies.md in other variables: Y = s·X, the GPUs a
// job (or pair) holds on average, so capacity is Σ Y <= c_j and each job's time is Σ Y <= s_i. A
// job's normalised throughput is Σ_j B_ij Y_ij / (w_i prop_i) plus its pair terms, where B is what
// the variant believes (agnostic: 1 where the job can run, or everywhere under --compat gavel;
// perf/packed: T) and prop_i = Σ_j T_ij c_j / Σ_t c_t (agnostic: 1). Jobs that can run nowhere are
// left out of the min. Solved by GLPK.

struct Believed {
  Matrix single;  // B_ij
  std::vector<double> prop;
  std::vector<bool> counted;  // part of the min
};

Believed BelievedThroughputs(Variant variant, const PolicyInput& input, bool compat) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  double total = 0.0;
  for (double c : input.gpu_counts) total += c;
  Believed b{Matrix(m, n), std::vector<double>(m, 0.0), std::vector<bool>(m, false)};
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double t = input.throughput(i, j);
      if (variant == Variant::kAgnostic) {
        b.single(i, j) = (compat || t > 0.0) ? 1.0 : 0.0;
      } else {
        b.single(i, j) = t;
        b.prop[i] += t * input.gpu_counts[j] / total;
      }
    }
    if (variant == Variant::kAgnostic) b.prop[i] = 1.0;
    bool runnable = false;
    for (std::size_t j = 0; j < n; ++j) runnable = runnable || b.single(i, j) > 0.0;
    b.counted[i] = runnable && b.prop[i] > 0.0;
  }
  return b;
}

struct Reference {
  double objective = 0.0;
};

Reference SolveIndependently(Variant variant, const PolicyInput& input, bool compat) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  const bool packed = variant == Variant::kPacked;
  const Believed b = BelievedThroughputs(variant, input, compat);
  lp::Model model(lp::Sense::kMaximize);
  std::vector<int> y(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      y[i * n + j] = model.AddColumn(0.0, input.jobs[i].scale_factor);
    }
  }
  const std::size_t num_pairs = packed ? input.pairs.size() : 0;
  std::vector<int> y_pair(num_pairs * n);
  for (std::size_t p = 0; p < num_pairs; ++p) {
    const int sf = input.jobs[static_cast<std::size_t>(input.pairs[p].first)].scale_factor;
    for (std::size_t j = 0; j < n; ++j) y_pair[p * n + j] = model.AddColumn(0.0, sf);
  }
  const int level = model.AddColumn(0.0, lp::kInfinity, 1.0);
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<int> cols;
    for (std::size_t i = 0; i < m; ++i) cols.push_back(y[i * n + j]);
    for (std::size_t p = 0; p < num_pairs; ++p) cols.push_back(y_pair[p * n + j]);
    const std::vector<double> ones(cols.size(), 1.0);
    model.AddRow(-lp::kInfinity, input.gpu_counts[j], cols, ones);
  }
  for (std::size_t i = 0; i < m; ++i) {
    std::vector<int> time_cols;
    std::vector<int> cols{level};
    std::vector<double> coefs{-1.0};
    const double denominator = input.jobs[i].priority_weight * b.prop[i];
    for (std::size_t j = 0; j < n; ++j) {
      time_cols.push_back(y[i * n + j]);
      if (b.counted[i]) {
        cols.push_back(y[i * n + j]);
        coefs.push_back(b.single(i, j) / denominator);
      }
    }
    for (std::size_t p = 0; p < num_pairs; ++p) {
      const JobPair& pair = input.pairs[p];
      const bool is_first = static_cast<std::size_t>(pair.first) == i;
      if (!is_first && static_cast<std::size_t>(pair.second) != i) continue;
      const Matrix& mine = is_first ? input.pair_throughput_first : input.pair_throughput_second;
      for (std::size_t j = 0; j < n; ++j) {
        time_cols.push_back(y_pair[p * n + j]);
        if (b.counted[i]) {
          cols.push_back(y_pair[p * n + j]);
          coefs.push_back(mine(p, j) / denominator);
        }
      }
    }
    const std::vector<double> ones(time_cols.size(), 1.0);
    model.AddRow(-lp::kInfinity, input.jobs[i].scale_factor, time_cols, ones);
    if (b.counted[i]) model.AddRow(0.0, lp::kInfinity, cols, coefs);
  }
  const auto solution = lp::MakeGlpkSolver()->Solve(model);
  GAVEL_CHECK_MSG(solution.ok(), solution.status().ToString().c_str());
  GAVEL_CHECK(solution->outcome == lp::Outcome::kOptimal);
  return Reference{solution->objective};
}

// The normalised throughput each counted job gets under the policy's allocation, as the
// independent formulation measures it; the min over counted jobs.
double AchievedLevel(Variant variant, const PolicyInput& input, const PolicyOutput& output,
                     bool compat) {
  const Believed b = BelievedThroughputs(variant, input, compat);
  double level = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (!b.counted[i]) continue;
    const double s = input.jobs[i].scale_factor;
    double value = 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      value += b.single(i, j) * s * output.allocation(i, j);
    }
    for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
      const JobPair& pair = input.pairs[p];
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        if (static_cast<std::size_t>(pair.first) == i) {
          value += input.pair_throughput_first(p, j) * s * output.pair_allocation(p, j);
        } else if (static_cast<std::size_t>(pair.second) == i) {
          value += input.pair_throughput_second(p, j) * s * output.pair_allocation(p, j);
        }
      }
    }
    level = std::min(level, value / (input.jobs[i].priority_weight * b.prop[i]));
  }
  return level;
}

// Equal within 1e-6 relative (absolute below 1).
bool RelativelyEqual(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(1.0, std::max(std::abs(a), std::abs(b)));
}

// ---------------------------------------------------------------------------------------------
// Random instances: 2-40 jobs, 1-4 types, some throughputs zero, scale factors 1/2/4, weights.

PolicyInput RandomInstance(std::mt19937_64& rng, bool with_pairs, std::size_t max_jobs) {
  std::uniform_int_distribution<int> num_types_dist(1, 4);
  std::uniform_int_distribution<int> count_dist(1, 8);
  std::uniform_int_distribution<std::size_t> num_jobs_dist(2, max_jobs);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::size_t n = static_cast<std::size_t>(num_types_dist(rng));
  std::vector<double> counts(n);
  for (double& c : counts) c = count_dist(rng);
  const double largest = *std::max_element(counts.begin(), counts.end());
  const std::size_t m = num_jobs_dist(rng);
  std::vector<JobDesc> jobs(m);
  for (JobDesc& job : jobs) {
    const double u = unit(rng);
    job.scale_factor = u < 0.6 ? 1 : (u < 0.85 ? 2 : 4);
    if (job.scale_factor > largest) job.scale_factor = 1;
    const double w = unit(rng);
    job.weight = w < 0.6 ? 1.0 : (w < 0.8 ? 2.0 : 0.5 + 4.5 * unit(rng));
    const double speed = 0.5 + 20.0 * unit(rng);
    bool runnable = false;
    for (std::size_t j = 0; j < n; ++j) {
      const double t = unit(rng) < 0.25 ? 0.0 : speed * (0.2 + unit(rng));
      job.throughput.push_back(t);
      runnable = runnable || (t > 0.0 && job.scale_factor <= counts[j]);
    }
    if (!runnable) {  // some type must fit it: the largest one does
      const auto big = std::max_element(counts.begin(), counts.end()) - counts.begin();
      job.throughput[static_cast<std::size_t>(big)] = speed;
    }
  }
  PolicyInput input = MakeInput(counts, jobs);
  if (!with_pairs) return input;
  std::vector<PairDesc> pairs;
  for (std::size_t a = 0; a < m; ++a) {
    for (std::size_t b = a + 1; b < m; ++b) {
      if (jobs[a].scale_factor != jobs[b].scale_factor || unit(rng) < 0.5) continue;
      PairDesc pair{static_cast<int>(a), static_cast<int>(b), {}, {}};
      for (std::size_t j = 0; j < n; ++j) {
        const bool oom = unit(rng) < 0.2;
        pair.first_throughput.push_back(oom ? 0.0
                                            : input.throughput(a, j) * (0.2 + 0.7 * unit(rng)));
        pair.second_throughput.push_back(oom ? 0.0
                                             : input.throughput(b, j) * (0.2 + 0.7 * unit(rng)));
      }
      pairs.push_back(pair);
    }
  }
  AddPairs(input, pairs);
  return input;
}

struct RandomCase {
  Variant variant;
  bool compat;
  const char* name;
};

class MaxMinRandomTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(MaxMinRandomTest, OptimumMatchesAnIndependentGlpkFormulation) {
  const RandomCase& c = GetParam();
  const bool packed = c.variant == Variant::kPacked;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed * 7919 + static_cast<std::uint64_t>(c.variant));
    const PolicyInput input = RandomInstance(rng, packed, packed ? 16 : 40);
    const auto output = Allocate(c.variant, input, c.compat);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    EXPECT_EQ(output->status, AllocationStatus::kOptimal);
    ASSERT_TRUE(output->objective.has_value());
    ExpectValidAllocation(input, *output);
    if (packed) {
      ASSERT_EQ(output->pair_allocation.rows(), input.pairs.size());
    }
    const Reference reference = SolveIndependently(c.variant, input, c.compat);
    EXPECT_PRED2(RelativelyEqual, *output->objective, reference.objective);
    // The allocation delivers the level it claims.
    EXPECT_GE(AchievedLevel(c.variant, input, *output, c.compat),
              *output->objective - 1e-6 * std::max(1.0, *output->objective));
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, MaxMinRandomTest,
                         ::testing::Values(RandomCase{Variant::kAgnostic, false, "agnostic"},
                                           RandomCase{Variant::kAgnostic, true, "agnostic_compat"},
                                           RandomCase{Variant::kPerf, false, "perf"},
                                           RandomCase{Variant::kPerf, true, "perf_compat"},
                                           RandomCase{Variant::kPacked, false, "packed"}),
                         [](const ::testing::TestParamInfo<RandomCase>& param) {
                           return std::string(param.param.name);
                         });

// ---------------------------------------------------------------------------------------------
// Staying put (option stay=ε). Under load the max-min optimum is rarely unique: only the
// minimum is pinned. The plain solve returns a vertex X0 and the original's ECOS path a point
// X1 inside the optimal face; their midpoint P is optimal too and generally neither. Given P as
// the current allocation, stay=0.05 must return P itself. Given a random current allocation
// (not even feasible), it must stay within ε of the optimum GLPK finds for every job, be a
// valid allocation, and be no farther from it than X0 (which the second stage could choose),
// and exactly as far as the nearest allocation at that level (GLPK, the textbook form).

double L1(const Matrix& a, const Matrix& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.rows(); ++i) {
    for (std::size_t j = 0; j < a.cols(); ++j) sum += std::abs(a(i, j) - b(i, j));
  }
  return sum;
}

Result<PolicyOutput> AllocateStaying(Variant variant, const PolicyInput& input, double stay) {
  PolicyOptions options;
  options.params = {{"stay", std::to_string(stay)}};
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                         MakeMaxMinFairnessWithParams(variant, options));
  return policy->Allocate(input);
}

PolicyInput WithCurrent(PolicyInput input, const Matrix& current) {
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    input.jobs[i].current_allocation.assign(input.num_types(), 0.0);
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      input.jobs[i].current_allocation[j] = current(i, j);
    }
  }
  return input;
}

// Over Y = s·X (y[i·n + j]): the capacity rows Σ_i Y <= c_j and the time rows Σ_j Y <= s_i;
// `level_row(i, cols, coefs)` gets each counted job's level, Σ_j B_ij Y_ij / (w_i prop_i), as
// terms to add its rows with.
template <class LevelRow>
void AddRowsOverY(lp::Model& model, const PolicyInput& input, const Believed& b,
                  const std::vector<int>& y, LevelRow level_row) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<int> cols;
    for (std::size_t i = 0; i < m; ++i) cols.push_back(y[i * n + j]);
    model.AddRow(-lp::kInfinity, input.gpu_counts[j], cols, std::vector<double>(m, 1.0));
  }
  for (std::size_t i = 0; i < m; ++i) {
    std::vector<int> cols(y.begin() + static_cast<std::ptrdiff_t>(i * n),
                          y.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
    model.AddRow(-lp::kInfinity, input.jobs[i].scale_factor, cols, std::vector<double>(n, 1.0));
    if (!b.counted[i]) continue;
    std::vector<double> coefs;
    for (std::size_t j = 0; j < n; ++j) {
      coefs.push_back(b.single(i, j) / (input.jobs[i].priority_weight * b.prop[i]));
    }
    level_row(i, cols, coefs);
  }
}

// The least L1 distance from `current` of an allocation (unrunnable cells at 0, as the
// default fixes them) that gives every counted job at least `floor`: the stay stage's problem
// in the plain textbook form, d >= |x − c| as two rows per cell, over y = s·x as
// SolveIndependently writes it, solved by GLPK.
double LeastDistanceIndependently(const PolicyInput& input, const Matrix& current, double floor) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  const Believed b = BelievedThroughputs(Variant::kPerf, input, false);
  lp::Model model(lp::Sense::kMinimize);
  std::vector<int> y(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    const double s = input.jobs[i].scale_factor;
    for (std::size_t j = 0; j < n; ++j) {
      y[i * n + j] = model.AddColumn(0.0, input.throughput(i, j) > 0.0 ? s : 0.0);
      const int d = model.AddColumn(0.0, lp::kInfinity, 1.0);
      const int cols[2] = {d, y[i * n + j]};
      const double minus[2] = {1.0, -1.0 / s};
      const double plus[2] = {1.0, 1.0 / s};
      model.AddRow(-current(i, j), lp::kInfinity, cols, minus);
      model.AddRow(current(i, j), lp::kInfinity, cols, plus);
    }
  }
  AddRowsOverY(model, input, b, y, [&](std::size_t, std::vector<int>& cols, std::vector<double>& coefs) {
    model.AddRow(floor, lp::kInfinity, cols, coefs);
  });
  const auto solution = lp::MakeGlpkSolver()->Solve(model);
  GAVEL_CHECK_MSG(solution.ok(), solution.status().ToString().c_str());
  GAVEL_CHECK(solution->outcome == lp::Outcome::kOptimal);
  return solution->objective;
}

TEST(MaxMinFairnessStayTest, KeepsAnOptimalCurrentAllocationAndStaysWithinEpsilon) {
  constexpr double kStay = 0.05;
  int moved_by_plain_solve = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed * 104729);
    const PolicyInput input = RandomInstance(rng, /*with_pairs=*/false, 20);
    const double optimum = SolveIndependently(Variant::kPerf, input, false).objective;
    const auto x0 = Allocate(Variant::kPerf, input);
    const auto x1 = Allocate(Variant::kPerf, input, /*compat=*/true);
    ASSERT_TRUE(x0.ok() && x1.ok());
    Matrix midpoint(input.num_jobs(), input.num_types());
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        // The default fixes unrunnable cells to 0; the original leaves them free.
        const double x1_ij = input.throughput(i, j) > 0.0 ? x1->allocation(i, j) : 0.0;
        midpoint(i, j) = 0.5 * (x0->allocation(i, j) + x1_ij);
      }
    }
    PolicyOutput as_output;
    as_output.allocation = midpoint;
    as_output.pair_allocation = Matrix(0, input.num_types());
    // ECOS's point is optimal only to its tolerance; the midpoint then is too.
    if (AchievedLevel(Variant::kPerf, input, as_output, false) >= optimum * (1.0 - 1e-6)) {
      if (L1(midpoint, x0->allocation) > 1e-3) ++moved_by_plain_solve;
      const auto kept = AllocateStaying(Variant::kPerf, WithCurrent(input, midpoint), kStay);
      ASSERT_TRUE(kept.ok()) << kept.status().ToString();
      EXPECT_LT(L1(kept->allocation, midpoint), 1e-6);
    }

    Matrix junk(input.num_jobs(), input.num_types());
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (std::size_t i = 0; i < junk.rows(); ++i) {
      for (std::size_t j = 0; j < junk.cols(); ++j) junk(i, j) = unit(rng);
    }
    const auto near = AllocateStaying(Variant::kPerf, WithCurrent(input, junk), kStay);
    ASSERT_TRUE(near.ok()) << near.status().ToString();
    ExpectValidAllocation(input, *near);
    EXPECT_GE(AchievedLevel(Variant::kPerf, input, *near, false),
              (1.0 - kStay) * optimum - 1e-6 * std::max(1.0, optimum));
    EXPECT_LE(L1(near->allocation, junk), L1(x0->allocation, junk) + 1e-6);
    // And no allocation at that level is closer: the least distance, found independently.
    const double least = LeastDistanceIndependently(input, junk, (1.0 - kStay) * optimum);
    EXPECT_NEAR(L1(near->allocation, junk), least, 1e-5 * std::max(1.0, least));
    // Without a current allocation (every job new) the option changes nothing.
    const auto fresh = AllocateStaying(Variant::kPerf, input, kStay);
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(L1(fresh->allocation, x0->allocation), 0.0);
  }
  // The optimum was not unique on most instances: the plain solve would have moved jobs.
  EXPECT_GE(moved_by_plain_solve, 10);
}

TEST(MaxMinFairnessStayTest, OptionIsCheckedByName) {
  EXPECT_TRUE(MakePolicy("max_min_fairness_perf:stay=0.05", {}).ok());
  EXPECT_TRUE(MakePolicy("max_min_fairness:stay=0", {}).ok());
  for (const char* bad : {"max_min_fairness_perf:stay=1", "max_min_fairness_perf:stay=-0.1",
                          "max_min_fairness_perf:stay=x", "max_min_fairness_packed:stay=0.05"}) {
    const auto policy = MakePolicy(bad, {});
    ASSERT_FALSE(policy.ok()) << bad;
    EXPECT_THAT(policy.status().message(), ::testing::HasSubstr("stay")) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// Sharing floor.

Result<PolicyOutput> AllocateWithParams(const PolicyInput& input,
                                        std::vector<std::pair<std::string, std::string>> params,
                                        bool compat = false) {
  PolicyOptions options;
  options.params = std::move(params);
  options.compat_gavel = compat;
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                         MakeMaxMinFairnessByName(Variant::kPerf, options));
  return policy->Allocate(input);
}

// Jobs `ages` seconds old (index order), all alike on one type of `gpus` GPUs.
PolicyInput AgedInput(double gpus, const std::vector<int>& scale_factors,
                      const std::vector<double>& ages) {
  std::vector<JobDesc> jobs;
  for (int s : scale_factors) jobs.push_back(JobDesc{{1.0}, s});
  PolicyInput input = MakeInput({gpus}, jobs);
  for (std::size_t i = 0; i < ages.size(); ++i) input.jobs[i].time_since_start = Seconds(ages[i]);
  return input;
}

// By hand: six one-GPU jobs on two GPUs, aged 100, 600, 500, 200, 400, 300 s. Everyone
// sharing: 1/3 each. Floor 1/2 without a head: the room is 2 / (1/2) = 4 GPUs, the four oldest
// (not the four first) share, 1/2 each, the two youngest get nothing. With the default head of
// 1/2 (1 GPU): the oldest runs its whole time and the next two share the other GPU, 1/2 each
// (guarantees 1 + 2 · 1/2 = 2 GPUs); the other three wait.
TEST(MaxMinFairnessShareFloorTest, TheOldestShareAndTheYoungestWait) {
  const PolicyInput input = AgedInput(2, {1, 1, 1, 1, 1, 1}, {100, 600, 500, 200, 400, 300});
  const auto all = AllocateWithParams(input, {{"share_floor", "0"}});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(all->allocation(i, 0), 1.0 / 3.0, 1e-6);
  const auto no_head = AllocateWithParams(input, {{"head", "0"}});
  ASSERT_TRUE(no_head.ok()) << no_head.status().ToString();
  const double sharing[] = {0.0, 0.5, 0.5, 0.0, 0.5, 0.5};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(no_head->allocation(i, 0), sharing[i], 1e-6);
  // The default of the registry's names, and --compat gavel's (none).
  const auto queued = AllocateWithParams(input, {});
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  const double head[] = {0.0, 1.0, 0.5, 0.0, 0.5, 0.0};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(queued->allocation(i, 0), head[i], 1e-6);
  const auto compat = AllocateWithParams(input, {}, /*compat=*/true);
  ASSERT_TRUE(compat.ok());
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(compat->allocation(i, 0), 1.0 / 3.0, 1e-6);
}

// The head takes the oldest jobs in arrival order and ends at the first that does not fit
// (no skipping ahead). 4 GPUs, floor 1/2, head 1/2 (2 GPUs); jobs oldest first of 1, 2, 1, 1,
// 1, 1, 2 GPUs: 9 > 4 / (1/2), overload. Head: the 1-GPU job; the 2-GPU job does not fit
// (3 > 2). The rest at 1/2 while the guarantees fit in 4 GPUs: the 2-GPU job (1 + 1), the four
// 1-GPU jobs (2.5 ... 4); the youngest waits. By hand: the head's job its whole GPU; max-min
// over GPU-time would give the 2-GPU job 0.3 and the others 0.6 of the 3 GPUs left, so the
// 2-GPU job holds its floor 1/2 (1 GPU) and the four 1-GPU jobs share 2 GPUs, 1/2 each.
TEST(MaxMinFairnessShareFloorTest, TheHeadRunsWholeInArrivalOrder) {
  const PolicyInput input =
      AgedInput(4, {1, 2, 1, 1, 1, 1, 2}, {700, 600, 500, 400, 300, 200, 100});
  const auto output = AllocateWithParams(input, {{"share_floor", "0.5"}, {"head", "0.5"}});
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  const double expected[] = {1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_NEAR(output->allocation(i, 0), expected[i], 1e-6) << i;
  for (const char* bad : {"max_min_fairness_perf:head=1.5", "max_min_fairness_perf:head=-1",
                          "max_min_fairness_packed:head=0.5"}) {
    const auto policy = MakePolicy(bad, {});
    ASSERT_FALSE(policy.ok()) << bad;
    EXPECT_THAT(policy.status().message(), ::testing::HasSubstr("head")) << bad;
  }
}

// Gangs count their GPUs: on 4 GPUs with floor 1 (room 4) the oldest 2-GPU and 1-GPU jobs
// (3 GPUs) share and the next 2-GPU job does not fit.
TEST(MaxMinFairnessShareFloorTest, GangsCountTheirGpus) {
  const PolicyInput input = AgedInput(4, {2, 1, 2, 1}, {400, 300, 200, 100});
  const auto floored = AllocateWithParams(input, {{"share_floor", "1"}});
  ASSERT_TRUE(floored.ok()) << floored.status().ToString();
  EXPECT_GT(floored->allocation(0, 0), 0.0);
  EXPECT_GT(floored->allocation(1, 0), 0.0);
  EXPECT_EQ(floored->allocation(2, 0), 0.0);
  EXPECT_EQ(floored->allocation(3, 0), 0.0);
  for (const char* bad : {"max_min_fairness_perf:share_floor=2",
                          "max_min_fairness_perf:share_floor=-1",
                          "max_min_fairness_packed:share_floor=0.5"}) {
    const auto policy = MakePolicy(bad, {});
    ASSERT_FALSE(policy.ok()) << bad;
    EXPECT_THAT(policy.status().message(), ::testing::HasSubstr("share_floor")) << bad;
  }
}

// The floor holds for gangs. By hand: one type of 8 GPUs, f = 1/2 (room 16), the oldest job a
// gang of 8 beside eight one-GPU jobs (16 GPUs: everyone shares). Max-min fairness levels
// GPU-time: 8·x_gang = x_one, 8·x_gang + 8·x_one <= 8, so x_gang = 1/9 (an eighth of the
// others' share). With the floor the gang holds 1/2 of its time (4 GPUs) and the one-GPU jobs
// share the other 4: 1/2 each, the level t = 1/2. On both solve paths; and with `stay`, from
// the floorless allocation as the current one, the gang keeps (1 − ε) of its floor.
TEST(MaxMinFairnessShareFloorTest, AGangGetsItsFloorBesideOneGpuJobs) {
  const PolicyInput input =
      AgedInput(8, {8, 1, 1, 1, 1, 1, 1, 1, 1}, {900, 800, 700, 600, 500, 400, 300, 200, 100});
  const auto plain = AllocateWithParams(input, {{"share_floor", "0"}});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_NEAR(plain->allocation(0, 0), 1.0 / 9.0, 1e-6);
  for (SolvePath path : {SolvePath::kFast, SolvePath::kGeneral}) {
    SCOPED_TRACE(path == SolvePath::kFast ? "fast path" : "general path");
    PolicyOptions options;
    options.params = {{"share_floor", "0.5"}};
    options.solve_path = path;
    const auto policy = MakeMaxMinFairnessWithParams(Variant::kPerf, options);
    ASSERT_TRUE(policy.ok());
    const auto floored = (*policy)->Allocate(input);
    ASSERT_TRUE(floored.ok()) << floored.status().ToString();
    for (std::size_t i = 0; i < 9; ++i) EXPECT_NEAR(floored->allocation(i, 0), 0.5, 1e-6) << i;
    ASSERT_TRUE(floored->objective.has_value());
    EXPECT_NEAR(*floored->objective, 0.5, 1e-6);
  }
  const auto staying = AllocateWithParams(WithCurrent(input, plain->allocation),
                                          {{"share_floor", "0.5"}, {"stay", "0.05"}});
  ASSERT_TRUE(staying.ok()) << staying.status().ToString();
  EXPECT_GE(staying->allocation(0, 0), 0.95 * 0.5 - 1e-9);
  ExpectValidAllocation(input, *staying);
}

// Random instances where everyone shares (f at most the GPUs over the jobs' GPUs): the level
// and the allocation against GLPK on the whole problem written independently, maximise t with
// both rows for every counted job, level_i >= t and level_i >= F_i, F_i being the job's level
// when it gets f of its time spread over the types in proportion to their GPUs.
TEST(MaxMinFairnessShareFloorTest, FloorsAndLevelMatchAnIndependentGlpkFormulation) {
  int binding = 0;
  for (Variant variant : {Variant::kPerf, Variant::kAgnostic}) {
    for (SolvePath path : {SolvePath::kFast, SolvePath::kGeneral}) {
      for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed) +
                     (variant == Variant::kPerf ? " perf" : " agnostic") +
                     (path == SolvePath::kFast ? " fast" : " general"));
        std::mt19937_64 rng(seed * 6151);
        const PolicyInput input = RandomInstance(rng, /*with_pairs=*/false, 24);
        const std::size_t m = input.num_jobs();
        const std::size_t n = input.num_types();
        double gpus = 0.0;
        for (double c : input.gpu_counts) gpus += c;
        double demand = 0.0;
        for (const PolicyJob& job : input.jobs) demand += job.scale_factor;
        std::uniform_real_distribution<double> unit(0.3, 1.0);
        // As the option's text carries it (six decimals), rounded down to stay feasible.
        const double f = std::floor(unit(rng) * std::min(1.0, gpus / demand) * 1e6) / 1e6;

        const Believed b = BelievedThroughputs(variant, input, false);
        std::vector<double> floor(m, 0.0);
        for (std::size_t i = 0; i < m; ++i) {
          if (!b.counted[i]) continue;
          for (std::size_t j = 0; j < n; ++j) floor[i] += f * b.single(i, j) * input.gpu_counts[j] / gpus;
          floor[i] *= input.jobs[i].scale_factor / (input.jobs[i].priority_weight * b.prop[i]);
        }
        // GLPK over Y = s·X: capacity Σ_i Y <= c_j, time Σ_j Y <= s_i, level_i = Σ_j B Y / (w prop).
        lp::Model model(lp::Sense::kMaximize);
        std::vector<int> y(m * n);
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t j = 0; j < n; ++j) {
            y[i * n + j] = model.AddColumn(0.0, b.single(i, j) > 0.0 ? input.jobs[i].scale_factor : 0.0);
          }
        }
        const int level = model.AddColumn(0.0, lp::kInfinity, 1.0);
        AddRowsOverY(model, input, b, y,
                     [&](std::size_t i, std::vector<int>& cols, std::vector<double>& coefs) {
                       model.AddRow(floor[i], lp::kInfinity, cols, coefs);
                       cols.push_back(level);
                       coefs.push_back(-1.0);
                       model.AddRow(0.0, lp::kInfinity, cols, coefs);
                     });
        const auto reference = lp::MakeGlpkSolver()->Solve(model);
        ASSERT_TRUE(reference.ok());
        ASSERT_EQ(reference->outcome, lp::Outcome::kOptimal);

        PolicyOptions options;
        options.params = {{"share_floor", std::to_string(f)}};
        options.solve_path = path;
        const auto policy = MakeMaxMinFairnessWithParams(variant, options);
        ASSERT_TRUE(policy.ok());
        const auto output = (*policy)->Allocate(input);
        ASSERT_TRUE(output.ok()) << output.status().ToString();
        ExpectValidAllocation(input, *output);
        ASSERT_TRUE(output->objective.has_value());
        EXPECT_PRED2(RelativelyEqual, *output->objective, reference->objective);
        bool any_above = false;
        for (std::size_t i = 0; i < m; ++i) {
          if (!b.counted[i]) continue;
          double value = 0.0;
          for (std::size_t j = 0; j < n; ++j) {
            value += b.single(i, j) * input.jobs[i].scale_factor * output->allocation(i, j);
          }
          value /= input.jobs[i].priority_weight * b.prop[i];
          const double wanted = std::max(floor[i], reference->objective);
          EXPECT_GE(value, wanted - 1e-6 * std::max(1.0, wanted)) << "job " << i;
          any_above = any_above || floor[i] > reference->objective * (1.0 + 1e-6);
        }
        binding += any_above;
      }
    }
  }
  // Most instances have a job whose floor is above the max-min level (else nothing is tested).
  EXPECT_GE(binding, 80);
}

// ---------------------------------------------------------------------------------------------
// Brute force: 2 jobs × 2 types, every allocation on a grid of step h. Rounding the true
// optimum X* down to the grid keeps it feasible (all constraints are <= with non-negative
// coefficients) and costs job i at most h · Σ_j coef_ij, so
//   grid best <= optimum <= grid best + h · max_i Σ_j coef_ij.

double GridSearchMaxMin(const PolicyInput& input, const Matrix& coef, double step) {
  const double c0 = input.gpu_counts[0];
  const double c1 = input.gpu_counts[1];
  const double s0 = input.jobs[0].scale_factor;
  const double s1 = input.jobs[1].scale_factor;
  const int steps = static_cast<int>(std::lround(1.0 / step));
  double best = 0.0;
  for (int a = 0; a <= steps; ++a) {
    const double x00 = a * step;
    for (int b = 0; a + b <= steps; ++b) {
      const double x01 = b * step;
      const double job0 = coef(0, 0) * x00 + coef(0, 1) * x01;
      if (job0 <= best) continue;
      for (int c = 0; c <= steps; ++c) {
        const double x10 = c * step;
        if (s0 * x00 + s1 * x10 > c0 + 1e-12) break;
        for (int d = 0; c + d <= steps; ++d) {
          const double x11 = d * step;
          if (s0 * x01 + s1 * x11 > c1 + 1e-12) break;
          best = std::max(best, std::min(job0, coef(1, 0) * x10 + coef(1, 1) * x11));
        }
      }
    }
  }
  return best;
}

TEST(MaxMinFairnessTest, TinyInstancesMatchAGridSearch) {
  constexpr double kStep = 0.025;
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::vector<double> counts{1.0 + static_cast<double>(trial % 2),
                               1.0 + static_cast<double>((trial / 2) % 2)};
    std::vector<JobDesc> jobs(2);
    for (JobDesc& job : jobs) {
      // t1 always runs the job, so it must fit there.
      job.scale_factor = unit(rng) < 0.3 && counts[1] >= 2 ? 2 : 1;
      job.weight = unit(rng) < 0.5 ? 1.0 : 2.0;
      job.throughput = {unit(rng) < 0.2 ? 0.0 : 1.0 + 9.0 * unit(rng), 1.0 + 9.0 * unit(rng)};
    }
    const PolicyInput input = MakeInput(counts, jobs);
    for (Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
      SCOPED_TRACE(variant == Variant::kAgnostic ? "agnostic" : "perf");
      // coef_ij = B_ij s_i / (w_i prop_i): what X_ij adds to job i's normalised throughput.
      const Believed b = BelievedThroughputs(variant, input, false);
      ASSERT_TRUE(b.counted[0] && b.counted[1]);
      Matrix coef(2, 2);
      double worst_row = 0.0;
      for (std::size_t i = 0; i < 2; ++i) {
        for (std::size_t j = 0; j < 2; ++j) {
          coef(i, j) = b.single(i, j) * input.jobs[i].scale_factor /
                       (input.jobs[i].priority_weight * b.prop[i]);
        }
        worst_row = std::max(worst_row, coef(i, 0) + coef(i, 1));
      }
      const double grid_best = GridSearchMaxMin(input, coef, kStep);
      const auto output = Allocate(variant, input);
      ASSERT_TRUE(output.ok()) << output.status().ToString();
      ASSERT_TRUE(output->objective.has_value());
      EXPECT_GE(*output->objective, grid_best - 1e-9);
      EXPECT_LE(*output->objective, grid_best + kStep * worst_row + 1e-9);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-worked cases.

double ObjectiveOf(const PolicyOutput& output) {
  if (!output.objective) {
    ADD_FAILURE() << "an optimum without an objective";
    return std::numeric_limits<double>::quiet_NaN();
  }
  return *output.objective;
}

// Columns are types sorted by name: t0 = "k80-like", t1 = "v100-like"; one GPU each.
// Job A: 1 step/s on t0, 4 on t1 (4× speed-up). Job B: 2 on t0, 1 on t1 (prefers t0).
// prop_A = (1 + 4)/2 = 2.5, prop_B = (2 + 1)/2 = 1.5.
// perf: N_A = (x_A0 + 4 x_A1)/2.5, N_B = (2 x_B0 + x_B1)/1.5. N_B <= (x_B0 + x_B1 + x_B0)/1.5
//   <= 2/1.5 = 4/3, with equality only if x_B0 = 1, x_B1 = 0. Then capacity leaves x_A0 = 0,
//   and N_A = 4 x_A1 / 2.5 >= 4/3 needs x_A1 >= 5/6 (feasible). Optimum 4/3: each job on
//   the type it is relatively best at.
// agnostic: maximise min(x_A0 + x_A1, x_B0 + x_B1) with two GPUs for two jobs: optimum 1 with
//   both rows full, the split across types left open; e.g. the even split gives
//   N_B = (1 + 0.5)/1.5 = 1 < 4/3.
TEST(MaxMinFairnessTest, HeterogeneityAwareSendsEachJobWhereItIsRelativelyFast) {
  const PolicyInput input = MakeInput({1, 1}, {{{1.0, 4.0}, 1, 1.0}, {{2.0, 1.0}, 1, 1.0}});
  const auto perf = Allocate(Variant::kPerf, input);
  ASSERT_TRUE(perf.ok()) << perf.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*perf), 4.0 / 3.0, 1e-7);
  EXPECT_NEAR(perf->allocation(1, 0), 1.0, 1e-7);
  EXPECT_NEAR(perf->allocation(1, 1), 0.0, 1e-7);
  EXPECT_NEAR(perf->allocation(0, 0), 0.0, 1e-7);
  EXPECT_GE(perf->allocation(0, 1), 5.0 / 6.0 - 1e-7);

  const auto agnostic = Allocate(Variant::kAgnostic, input);
  ASSERT_TRUE(agnostic.ok()) << agnostic.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*agnostic), 1.0, 1e-7);
  EXPECT_NEAR(agnostic->allocation.RowSum(0), 1.0, 1e-7);
  EXPECT_NEAR(agnostic->allocation.RowSum(1), 1.0, 1e-7);
}

// One v100, weights 1 and 3: maximise min(x_A / 1, x_B / 3) s.t. x_A + x_B <= 1
// → x_B = 3 x_A, 4 x_A = 1: x_A = 0.25, x_B = 0.75, level 0.25 (unique).
// With one type prop_i = T_i, so perf's coefficient T s/(w T) = s/w: the same answer.
TEST(MaxMinFairnessTest, WeightsShareTimeInProportion) {
  const PolicyInput input = MakeInput({1}, {{{5.0}, 1, 1.0}, {{2.0}, 1, 3.0}});
  for (Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
    const auto output = Allocate(variant, input);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    EXPECT_NEAR(ObjectiveOf(*output), 0.25, 1e-7);
    EXPECT_NEAR(output->allocation(0, 0), 0.25, 1e-7);
    EXPECT_NEAR(output->allocation(1, 0), 0.75, 1e-7);
  }
}

// Two v100s; A needs 2 GPUs, B needs 1: maximise min(2 x_A, x_B) s.t. 2 x_A + x_B <= 2,
// x <= 1. Level t needs x_B >= t, x_A >= t/2, so 2t <= 2: t = 1 with x_B = 1 and then
// 2 x_A <= 1 forces x_A = 0.5 (unique). A job on s GPUs gets 1/s of the time, not s times
// the GPUs.
TEST(MaxMinFairnessTest, ScaleFactorsEqualiseGpuTimeNotWallTime) {
  const PolicyInput input = MakeInput({2}, {{{8.0}, 2, 1.0}, {{3.0}, 1, 1.0}});
  for (Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
    const auto output = Allocate(variant, input);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    EXPECT_NEAR(ObjectiveOf(*output), 1.0, 1e-7);
    EXPECT_NEAR(output->allocation(0, 0), 0.5, 1e-7);
    EXPECT_NEAR(output->allocation(1, 0), 1.0, 1e-7);
  }
}

// One v100; A and B run at 2 steps/s alone, 1.5 each when sharing. prop = 2 each.
// Singles x_A, x_B and pair time p: N_A = (2 x_A + 1.5 p)/2, N_B likewise;
// capacity x_A + x_B + p <= 1. Both >= 0.75 ⇔ 2 x_A + 1.5 p >= 1.5 and 2 x_B + 1.5 p >= 1.5;
// adding: 2(x_A + x_B) + 3p >= 3 with x_A + x_B <= 1 − p gives p >= 1. So the optimum is
// sharing all the time, level 0.75 (unique), against 0.5 for time slicing without pairs.
// If sharing halves them to 0.8 each, N = (1 − p + 0.8 p)/2 on the symmetric line: p = 0,
// level 0.5.
TEST(MaxMinFairnessTest, PackingSharesAGpuWhenCoLocationPays) {
  PolicyInput input = MakeInput({1}, {{{2.0}, 1, 1.0}, {{2.0}, 1, 1.0}});
  AddPairs(input, {{0, 1, {1.5}, {1.5}}});
  const auto packed = Allocate(Variant::kPacked, input);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*packed), 0.75, 1e-7);
  ASSERT_EQ(packed->pair_allocation.rows(), 1u);
  EXPECT_NEAR(packed->pair_allocation(0, 0), 1.0, 1e-7);
  EXPECT_NEAR(packed->allocation(0, 0), 0.0, 1e-7);
  EXPECT_NEAR(packed->allocation(1, 0), 0.0, 1e-7);

  const auto perf = Allocate(Variant::kPerf, input);
  ASSERT_TRUE(perf.ok()) << perf.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*perf), 0.5, 1e-7);
  EXPECT_EQ(perf->pair_allocation.rows(), 0u);

  PolicyInput slowed = MakeInput({1}, {{{2.0}, 1, 1.0}, {{2.0}, 1, 1.0}});
  AddPairs(slowed, {{0, 1, {0.8}, {0.8}}});
  const auto unprofitable = Allocate(Variant::kPacked, slowed);
  ASSERT_TRUE(unprofitable.ok()) << unprofitable.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*unprofitable), 0.5, 1e-7);
  EXPECT_NEAR(unprofitable->pair_allocation(0, 0), 0.0, 1e-7);
}

TEST(MaxMinFairnessTest, NoJobsGiveAnEmptyAllocation) {
  const PolicyInput input = MakeInput({2, 3}, {});
  for (Variant variant : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    const auto output = Allocate(variant, input);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    EXPECT_EQ(output->allocation.rows(), 0u);
  }
}

// One v100; A runs at 2 steps/s, B cannot run anywhere (0). B has no share to be fair
// about, so A gets the whole GPU: agnostic level (1/1)·1 = 1; perf prop_A = 2, level
// 2·1/(1·2) = 1. A job that cannot run must not drag everyone's level to 0.
TEST(MaxMinFairnessTest, AJobThatCanRunNowhereIsLeftOutOfTheMin) {
  const PolicyInput input = MakeInput({1}, {{{2.0}, 1, 1.0}, {{0.0}, 1, 1.0}});
  for (Variant variant : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    SCOPED_TRACE(static_cast<int>(variant));
    const auto output = Allocate(variant, input);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    ASSERT_TRUE(output->objective.has_value());
    EXPECT_NEAR(ObjectiveOf(*output), 1.0, 1e-7);
    EXPECT_NEAR(output->allocation(0, 0), 1.0, 1e-7);
    EXPECT_NEAR(output->allocation(1, 0), 0.0, 1e-7);
  }
}

// ---------------------------------------------------------------------------------------------
// --compat gavel against the corrected default.

// Under compat LPs are solved to a central point by barrier without crossover, accurate to
// about 1e-8, rather than to a vertex.
constexpr double kCentralTolerance = 1e-6;

// One k80 (t0) and one v100 (t1); both jobs run only on t1. Default: they split t1,
// level 0.5, t0 idle. The original sets T ≡ 1 everywhere, so it sees two GPUs for two jobs
// and reaches level 1 — every GPU busy, so t0's column sums to 1, time the jobs cannot use.
TEST(MaxMinFairnessTest, CompatAgnosticBelievesEveryJobRunsEverywhere) {
  const PolicyInput input = MakeInput({1, 1}, {{{0.0, 3.0}, 1, 1.0}, {{0.0, 5.0}, 1, 1.0}});
  const auto fixed = Allocate(Variant::kAgnostic, input, /*compat=*/false);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*fixed), 0.5, 1e-7);
  EXPECT_NEAR(fixed->allocation(0, 1), 0.5, 1e-7);
  EXPECT_NEAR(fixed->allocation(1, 1), 0.5, 1e-7);
  EXPECT_EQ(fixed->allocation(0, 0), 0.0);
  EXPECT_EQ(fixed->allocation(1, 0), 0.0);

  const auto compat = Allocate(Variant::kAgnostic, input, /*compat=*/true);
  ASSERT_TRUE(compat.ok()) << compat.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*compat), 1.0, kCentralTolerance);
  EXPECT_NEAR(compat->allocation(0, 0) + compat->allocation(1, 0), 1.0, kCentralTolerance);
  EXPECT_NEAR(compat->allocation.RowSum(0), 1.0, kCentralTolerance);
  EXPECT_NEAR(compat->allocation.RowSum(1), 1.0, kCentralTolerance);
}

// Under compat a job that cannot run at all is still a job with T ≡ 1 (docs/policies.md): with
// one GPU, A and B split it, level 0.5.
TEST(MaxMinFairnessTest, CompatAgnosticCountsAJobThatCanRunNowhere) {
  const PolicyInput input = MakeInput({1}, {{{2.0}, 1, 1.0}, {{0.0}, 1, 1.0}});
  const auto compat = Allocate(Variant::kAgnostic, input, /*compat=*/true);
  ASSERT_TRUE(compat.ok()) << compat.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*compat), 0.5, kCentralTolerance);
  EXPECT_NEAR(compat->allocation(0, 0), 0.5, kCentralTolerance);
  EXPECT_NEAR(compat->allocation(1, 0), 0.5, kCentralTolerance);
}

// The original's packed per-job constraint reshapes the concatenated relevant rows into
// equal chunks. A and B (1 GPU) share a pair, C (2 GPUs) has none: 2 + 2 + 1 rows × 2 types
// = 10 entries for 3 jobs, which the original cannot reshape (it crashes); compat refuses,
// the corrected default solves it.
TEST(MaxMinFairnessTest, CompatPackedRefusesMixedScaleFactorsLikeTheOriginalsReshape) {
  PolicyInput input =
      MakeInput({2, 2}, {{{2.0, 3.0}, 1, 1.0}, {{1.0, 4.0}, 1, 1.0}, {{5.0, 6.0}, 2, 1.0}});
  AddPairs(input, {{0, 1, {1.5, 2.0}, {0.8, 3.0}}});
  const auto compat = Allocate(Variant::kPacked, input, /*compat=*/true);
  ASSERT_FALSE(compat.ok());
  EXPECT_EQ(compat.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(compat.status().message(), HasSubstr("compat"));

  const auto fixed = Allocate(Variant::kPacked, input, /*compat=*/false);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  ExpectValidAllocation(input, *fixed);
  EXPECT_PRED2(RelativelyEqual, ObjectiveOf(*fixed),
               SolveIndependently(Variant::kPacked, input, false).objective);
}

// When every job has the same number of pairs the reshape groups correctly, so compat and
// the default agree (the shared-GPU case above, level 0.75; and three 1-GPU jobs with all
// three pairs, checked against the independent formulation).
TEST(MaxMinFairnessTest, CompatPackedAgreesWhenEveryJobHasAsManyPairs) {
  PolicyInput two = MakeInput({1}, {{{2.0}, 1, 1.0}, {{2.0}, 1, 1.0}});
  AddPairs(two, {{0, 1, {1.5}, {1.5}}});
  const auto compat_two = Allocate(Variant::kPacked, two, /*compat=*/true);
  ASSERT_TRUE(compat_two.ok()) << compat_two.status().ToString();
  EXPECT_NEAR(ObjectiveOf(*compat_two), 0.75, kCentralTolerance);

  PolicyInput three =
      MakeInput({2, 1}, {{{2.0, 3.0}, 1, 1.0}, {{1.0, 4.0}, 1, 2.0}, {{5.0, 6.0}, 1, 1.0}});
  AddPairs(three, {{0, 1, {1.5, 2.0}, {0.8, 3.0}},
                   {0, 2, {1.0, 2.5}, {4.0, 3.0}},
                   {1, 2, {0.9, 3.5}, {3.0, 5.0}}});
  const auto compat_three = Allocate(Variant::kPacked, three, /*compat=*/true);
  ASSERT_TRUE(compat_three.ok()) << compat_three.status().ToString();
  const auto fixed_three = Allocate(Variant::kPacked, three, /*compat=*/false);
  ASSERT_TRUE(fixed_three.ok()) << fixed_three.status().ToString();
  const double reference = SolveIndependently(Variant::kPacked, three, false).objective;
  EXPECT_PRED2(RelativelyEqual, ObjectiveOf(*compat_three), reference);
  EXPECT_PRED2(RelativelyEqual, ObjectiveOf(*fixed_three), reference);
}

}  // namespace
}  // namespace gavel::policy
