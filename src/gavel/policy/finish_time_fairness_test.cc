#include "gavel/policy/finish_time_fairness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/decomp/job_decomposition.h"
#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/model.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/policy_input.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

// The bisection stops at a relative gap of 1e-9, but each feasibility LP is decided within
// the simplex's feasibility tolerance (about 1e-7 on the scaled rows), so optima agree to
// about that: these tests allow 1e-6 on rho (values of order 1) and 1e-5 on shares.
constexpr double kRhoTol = 1e-6;
constexpr double kShareTol = 1e-5;

PolicyJob Job(std::uint64_t id, double remaining, double since_start = 0.0, double weight = 1.0,
              int scale_factor = 1) {
  PolicyJob job;
  job.id = JobId(id);
  job.scale_factor = scale_factor;
  job.priority_weight = weight;
  job.steps_remaining = remaining;
  job.time_since_start = Seconds(since_start);
  return job;
}

std::unique_ptr<Policy> Ftf(Variant variant, bool compat = false,
                            std::shared_ptr<lp::Solver> solver = nullptr) {
  PolicyOptions options;
  options.compat_gavel = compat;
  options.lp_solver = std::move(solver);
  return MakeFinishTimeFairness(variant, options);
}

// Everything rho_k needs, computed here from the spec's formulas (first call: no cumulative
// isolated time). `believed` is the throughput matrix the variant plans with.
struct Truth {
  std::vector<double> isolated_time;  // t_iso_k (0 when the job is left out)
  std::vector<double> weight;
  std::vector<std::vector<std::pair<int, double>>> thr;  // job k's (column, steps/s)
  lp::Model base{lp::Sense::kMaximize};
};

Truth BuildTruth(const PolicyInput& input, const Matrix& believed, bool packed, bool weighted) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  Truth truth;
  for (std::size_t i = 0; i < m; ++i) {
    // X_iso[i][j] = c_j / (m s_i), the row divided by max(1, its sum).
    double row = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      row += input.gpu_counts[j] / (static_cast<double>(m) * input.jobs[i].scale_factor);
    }
    double iso = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      iso += believed(i, j) * input.gpu_counts[j] /
             (static_cast<double>(m) * input.jobs[i].scale_factor) / std::max(1.0, row);
    }
    const double remaining = input.jobs[i].steps_remaining;
    truth.isolated_time.push_back(remaining > 0 && iso > 0 ? remaining / iso : 0.0);
    truth.weight.push_back(weighted ? input.jobs[i].priority_weight : 1.0);
  }
  ReferenceLp reference = BuildReferenceLp(input, believed, packed);
  truth.thr = std::move(reference.thr);
  truth.base = std::move(reference.model);
  return truth;
}

// An independent optimum: bisection on r with GLPK over rows written here as
// Σ T (r t_iso - a) / (R w) X >= 1 (right-hand side 1 for scaling).
double GlpkOptimalRho(const PolicyInput& input, const Truth& truth) {
  const std::size_t m = input.num_jobs();
  double lo = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    if (truth.isolated_time[i] <= 0) continue;
    lo = std::max(lo, input.jobs[i].time_since_start.value() / truth.isolated_time[i]);
  }
  auto feasible = [&](double r) {
    lp::Model model = truth.base;
    for (std::size_t i = 0; i < m; ++i) {
      if (truth.isolated_time[i] <= 0) continue;
      const double slack = r * truth.isolated_time[i] - input.jobs[i].time_since_start.value();
      if (slack <= 0) return false;
      std::vector<int> cols;
      std::vector<double> coefs;
      for (auto [c, t] : truth.thr[i]) {
        cols.push_back(c);
        coefs.push_back(t * slack / (input.jobs[i].steps_remaining * truth.weight[i]));
      }
      model.AddRow(1.0, lp::kInfinity, cols, coefs);
    }
    const auto solution = lp::MakeGlpkSolver()->Solve(model);
    EXPECT_TRUE(solution.ok());
    return solution.ok() && solution->outcome == lp::Outcome::kOptimal;
  };
  double hi = std::max(1.0, 2 * lo);
  while (!feasible(hi)) hi *= 2;
  while (hi - lo > 1e-11 * hi) {
    const double mid = 0.5 * (lo + hi);
    (feasible(mid) ? hi : lo) = mid;
  }
  return hi;
}

// max_k rho_k of an allocation, from the spec's formula.
double MaxRho(const PolicyInput& input, const Truth& truth, const PolicyOutput& out) {
  const std::size_t n = input.num_types();
  double worst = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (truth.isolated_time[i] <= 0) continue;
    // Columns were laid out jobs × types, then pairs × types (as in BuildTruth).
    double thr = 0.0;
    for (auto [c, t] : truth.thr[i]) {
      const auto col = static_cast<std::size_t>(c);
      const double x = col < input.num_jobs() * n
                           ? out.allocation(col / n, col % n)
                           : out.pair_allocation((col - input.num_jobs() * n) / n, col % n);
      thr += t * x;
    }
    worst = std::max(worst, (input.jobs[i].time_since_start.value() +
                             input.jobs[i].steps_remaining * truth.weight[i] / thr) /
                                truth.isolated_time[i]);
  }
  return worst;
}

// One job, k80 and v100 with one GPU each, 1 and 4 steps/s, 1000 steps, 100 s since arrival.
// Isolated share X_iso = (1/2, 1/2): iso = 2.5 steps/s, t_iso = 400 s. Best: all v100,
// 4 steps/s: rho = (100 + 250) / 400 = 0.875.
TEST(FinishTimeFairnessTest, HandWorkedSingleJob) {
  const PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {Job(0, 1000, 100)}, {{1, 4}});
  const auto out = Ftf(Variant::kPerf)->Allocate(input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectValidAllocation(input, *out);
  ASSERT_TRUE(out->objective.has_value());
  EXPECT_NEAR(*out->objective, 0.875, 1e-9);
  EXPECT_NEAR(out->allocation(0, 1), 1.0, 1e-9);
  EXPECT_EQ(out->status, AllocationStatus::kOptimal);
}

// One GPU, two jobs of 1 step/s and 100 steps; A arrived 100 s ago, B just now. Isolated:
// half the GPU each, t_iso = 200 s. With shares a and 1 - a:
// rho_A = (100 + 100/a) / 200, rho_B = (100/(1-a)) / 200. Equal at 1 + 1/a = 1/(1-a), i.e.
// a² + a - 1 = 0, a = (√5 - 1)/2 (the golden ratio's inverse), rho = 1/(2(1-a)) = (3+√5)/4.
TEST(FinishTimeFairnessTest, HandWorkedGoldenRatio) {
  const PolicyInput input =
      MakeInput({"v100"}, {1}, {Job(0, 100, 100), Job(1, 100, 0)}, {{1}, {1}});
  for (bool compat : {false, true}) {
    SCOPED_TRACE(compat);
    const auto out = Ftf(Variant::kPerf, compat)->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectValidAllocation(input, *out);
    EXPECT_NEAR(*out->objective, (3 + std::sqrt(5.0)) / 4, kRhoTol);
    EXPECT_NEAR(out->allocation(0, 0), (std::sqrt(5.0) - 1) / 2, kShareTol);
    EXPECT_NEAR(out->allocation(1, 0), 1 - (std::sqrt(5.0) - 1) / 2, kShareTol);
  }
}

// One GPU, two jobs of 1 step/s and 100 steps, A with weight 2. Isolated: t_iso = 200 s each.
// Weighted (default, and the original's packed variant): rho_A = (2 · 100/a) / 200 = 1/a,
// rho_B = 1/(2(1-a)); equal at a = 2/3, rho = 1.5. The original's perf variant ignores the
// weight: a = 1/2, rho = 1.
TEST(FinishTimeFairnessTest, PriorityWeightsDivideThroughput) {
  const PolicyInput input =
      MakeInput({"v100"}, {1}, {Job(0, 100, 0, /*weight=*/2), Job(1, 100)}, {{1}, {1}});
  struct Case {
    Variant variant;
    bool compat;
    double rho;
    double share_a;
  };
  for (const Case& c :
       {Case{Variant::kPerf, false, 1.5, 2.0 / 3}, Case{Variant::kPerf, true, 1, 0.5},
        Case{Variant::kPacked, false, 1.5, 2.0 / 3}, Case{Variant::kPacked, true, 1.5, 2.0 / 3}}) {
    SCOPED_TRACE(static_cast<int>(c.variant) * 10 + c.compat);
    const auto out = Ftf(c.variant, c.compat)->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectValidAllocation(input, *out);
    EXPECT_NEAR(*out->objective, c.rho, kRhoTol);
    EXPECT_NEAR(out->allocation(0, 0), c.share_a, kShareTol);
  }
}

// State across calls, on one GPU type with one GPU (each job 2 steps/s alone).
// Call 1: A alone, 1000 steps, just arrived: iso_A = 2, t_iso = 500, best 2 steps/s: rho = 1.
// Call 2: A (800 left, 300 s since arrival) and B (100 steps, new). A is credited
//   (1000 - 800) / 2 = 100 s of isolated time (the previous call's iso, 2, not this call's).
//   iso = 1 each now (half the GPU): t_iso_A = 100 + 800 = 900, t_iso_B = 100.
//   rho_A = (300 + 800/(2a)) / 900, rho_B = (100/(2b))/100 = 1/(2b), a + b = 1. Equal:
//   (1 - a)(300 + 400/a) = 450 → 6a² + 11a - 8 = 0 → a = (√313 - 11)/12, rho = 1/(2(1-a)).
// Call 3: B alone (50 left, 400 s): credited (100 - 50)/1 = 50; iso_B = 2, t_iso = 75;
//   rho = (400 + 25)/75 = 17/3.
// Call 4: A back alone (700 left, 1000 s). A was not in call 3, so nothing is credited for
//   800 → 700 (the previous call's remaining steps are replaced, not merged): C_A stays 100,
//   t_iso = 100 + 350 = 450, rho = (1000 + 350)/450 = 3.
TEST(FinishTimeFairnessTest, CumulativeIsolatedTimeAcrossCalls) {
  for (bool compat : {false, true}) {
    SCOPED_TRACE(compat);
    auto policy = Ftf(Variant::kPerf, compat);
    const auto first = policy->Allocate(MakeInput({"v100"}, {1}, {Job(0, 1000)}, {{2}}));
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_NEAR(*first->objective, 1.0, 1e-9);

    const PolicyInput second_input =
        MakeInput({"v100"}, {1}, {Job(0, 800, 300), Job(1, 100)}, {{2}, {2}});
    const auto second = policy->Allocate(second_input);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    ExpectValidAllocation(second_input, *second);
    const double a = (std::sqrt(313.0) - 11) / 12;
    EXPECT_NEAR(*second->objective, 1 / (2 * (1 - a)), kRhoTol);
    EXPECT_NEAR(second->allocation(0, 0), a, kShareTol);

    const auto third = policy->Allocate(MakeInput({"v100"}, {1}, {Job(1, 50, 400)}, {{2}}));
    ASSERT_TRUE(third.ok());
    EXPECT_NEAR(*third->objective, 17.0 / 3, kRhoTol);

    const auto fourth = policy->Allocate(MakeInput({"v100"}, {1}, {Job(0, 700, 1000)}, {{2}}));
    ASSERT_TRUE(fourth.ok());
    EXPECT_NEAR(*fourth->objective, 3.0, kRhoTol);

    // An empty call forgets the previous call: A is not credited for 700 → 600.
    ASSERT_TRUE(policy->Allocate(MakeInput({"v100"}, {1}, {}, {})).ok());
    const auto sixth = policy->Allocate(MakeInput({"v100"}, {1}, {Job(0, 600, 1100)}, {{2}}));
    ASSERT_TRUE(sixth.ok());
    // C_A = 100, t_iso = 100 + 300 = 400, rho = (1100 + 300)/400 = 3.5.
    EXPECT_NEAR(*sixth->objective, 3.5, kRhoTol);
  }
}

// A job with nothing left and a job that can run nowhere stay out of the max, though they
// count in the isolated share (m = 3): one GPU, A has 1 step/s and 100 steps, iso_A = 1/3,
// t_iso = 300 s, best alone 1 step/s: rho = 100/300.
TEST(FinishTimeFairnessTest, FinishedAndUnrunnableJobsAreLeftOut) {
  const PolicyInput input =
      MakeInput({"v100"}, {1}, {Job(0, 100), Job(1, 0), Job(2, 100)}, {{1}, {1}, {0}});
  for (bool compat : {false, true}) {
    SCOPED_TRACE(compat);
    const auto out = Ftf(Variant::kPerf, compat)->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectValidAllocation(input, *out);
    EXPECT_NEAR(*out->objective, 1.0 / 3, 1e-9);
  }
}

// A solver that never finds a feasible point: the policy falls back to the isolated
// allocation. Two jobs on k80 × 2 and v100 × 1: X_iso = (2/2, 1/2) / 1.5 = (2/3, 1/3).
class NeverFeasibleSolver final : public lp::Solver {
 public:
  std::string_view name() const override { return "never-feasible"; }
  bool SupportsIntegers() const override { return false; }
  Result<std::unique_ptr<lp::Session>> Load(const lp::Model& model,
                                            const lp::SolveOptions& options) override {
    return std::unique_ptr<lp::Session>(
        std::make_unique<lp::RebuildingSession>(model, options, &Infeasible));
  }

 private:
  static Result<lp::Solution> Infeasible(const lp::Model&, const lp::SolveOptions&) {
    lp::Solution solution;
    solution.outcome = lp::Outcome::kInfeasible;
    return solution;
  }
};

TEST(FinishTimeFairnessTest, FallsBackToIsolatedAllocation) {
  const PolicyInput input =
      MakeInput({"k80", "v100"}, {2, 1}, {Job(0, 100), Job(1, 500)}, {{1, 2}, {1, 3}});
  for (Variant variant : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    SCOPED_TRACE(static_cast<int>(variant));
    const auto out = Ftf(variant, false, std::make_shared<NeverFeasibleSolver>())->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->status, AllocationStatus::kFallback);
    EXPECT_FALSE(out->note.empty());
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(out->allocation(i, 0), 2.0 / 3, 1e-12);
      EXPECT_NEAR(out->allocation(i, 1), 1.0 / 3, 1e-12);
    }
    ExpectValidAllocation(input, *out);
  }
}

// Random tiny instances (2-3 jobs, 2 types, weights, arrival times, a few zero throughputs)
// against the GLPK bisection; the returned allocation reaches the reported rho.
TEST(FinishTimeFairnessTest, MatchesIndependentBisectionOnRandomInstances) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speed(0.5, 8.0);
  std::uniform_real_distribution<double> steps(100.0, 1e5);
  std::uniform_real_distribution<double> since(0.0, 5000.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double weights[] = {1, 2, 5};
  for (int trial = 0; trial < 36; ++trial) {
    SCOPED_TRACE(trial);
    const std::size_t m = 2 + static_cast<std::size_t>(rng() % 2);
    const Variant variant = trial % 3 == 0   ? Variant::kAgnostic
                            : trial % 3 == 1 ? Variant::kPerf
                                             : Variant::kPacked;
    const bool packed = variant == Variant::kPacked;
    const bool compat = trial % 4 >= 2;
    const std::vector<double> counts = {static_cast<double>(1 + rng() % 3),
                                        static_cast<double>(1 + rng() % 3)};
    std::vector<PolicyJob> jobs;
    std::vector<std::vector<double>> rows(m, std::vector<double>(2));
    for (std::size_t i = 0; i < m; ++i) {
      jobs.push_back(Job(i, steps(rng), since(rng), weights[rng() % 3]));
      for (std::size_t j = 0; j < 2; ++j) {
        // The v100 column stays positive so the compat agnostic view is defined everywhere.
        rows[i][j] = (j == 1 || unit(rng) > 0.25) ? speed(rng) : 0.0;
      }
    }
    PolicyInput input = MakeInput({"k80", "v100"}, counts, jobs, rows);
    if (packed) {
      for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
          input.pairs.push_back(JobPair{static_cast<int>(a), static_cast<int>(b)});
        }
      }
      input.pair_throughput_first = Matrix(input.pairs.size(), 2);
      input.pair_throughput_second = Matrix(input.pairs.size(), 2);
      for (std::size_t p = 0; p < input.pairs.size(); ++p) {
        for (std::size_t j = 0; j < 2; ++j) {
          input.pair_throughput_first(p, j) =
              rows[static_cast<std::size_t>(input.pairs[p].first)][j] * unit(rng);
          input.pair_throughput_second(p, j) =
              rows[static_cast<std::size_t>(input.pairs[p].second)][j] * unit(rng);
        }
      }
    }
    // What the variant believes: the cluster-wide average by default, the v100 column under
    // --compat gavel, for the agnostic variant.
    Matrix believed = input.throughput;
    if (variant == Variant::kAgnostic) {
      for (std::size_t i = 0; i < m; ++i) {
        const double average =
            (rows[i][0] * counts[0] + rows[i][1] * counts[1]) / (counts[0] + counts[1]);
        for (std::size_t j = 0; j < 2; ++j) {
          believed(i, j) = compat ? rows[i][1] : (rows[i][j] > 0 ? average : 0.0);
        }
      }
    }
    const bool weighted = packed || !compat;
    const Truth truth = BuildTruth(input, believed, packed, weighted);
    const double expected = GlpkOptimalRho(input, truth);

    const auto out = Ftf(variant, compat)->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectValidAllocation(input, *out);
    EXPECT_EQ(out->status, AllocationStatus::kOptimal);
    EXPECT_NEAR(*out->objective / expected, 1.0, 1e-6);
    EXPECT_LE(MaxRho(input, truth, *out), expected * (1 + 1e-6));
  }
}

// The jobs in the max as PricedRatioLowerBound reads them, from the spec's formulas (Truth,
// unweighted isolated times of a first call): b_k = a_k / t_iso_k, e_k = R_k w_k / t_iso_k.
// The spans point into input.throughput.
std::vector<FinishTimeJob> FinishTimeJobsOf(const PolicyInput& input, const Truth& truth) {
  const std::size_t n = input.num_types();
  std::vector<FinishTimeJob> jobs;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (truth.isolated_time[i] <= 0) continue;
    jobs.push_back(FinishTimeJob{
        input.jobs[i].time_since_start.value() / truth.isolated_time[i],
        input.jobs[i].steps_remaining * truth.weight[i] / truth.isolated_time[i],
        static_cast<double>(input.jobs[i].scale_factor),
        std::span<const double>(input.throughput.data()).subspan(i * n, n)});
  }
  return jobs;
}

// Weak duality: whatever the nonnegative capacity prices, the priced bound never passes the
// optimum (GLPK's bisection, the oracle, itself exact only to GLPK's feasibility tolerance,
// about 1e-7 relative: hence kRhoTol); with the capacity duals of the max-min solve at a ratio
// r below the optimum (what the ratio search feeds it) it also passes r. More jobs than GPUs,
// so that capacity binds.
TEST(FinishTimeFairnessTest, PricedBoundNeverExceedsTheOptimum) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> speed(0.5, 8.0);
  std::uniform_real_distribution<double> steps(100.0, 1e5);
  std::uniform_real_distribution<double> since(0.0, 5000.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::vector<std::string> all_types = {"k80", "p100", "v100"};
  const double weights[] = {1, 2, 5};
  const std::unique_ptr<lp::Solver> clp = lp::MakeClpSolver();
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(trial);
    const std::size_t m = 3 + static_cast<std::size_t>(rng() % 6);
    const std::size_t n = 2 + static_cast<std::size_t>(rng() % 2);
    std::vector<double> counts;
    for (std::size_t j = 0; j < n; ++j) counts.push_back(static_cast<double>(1 + rng() % 2));
    std::vector<PolicyJob> jobs;
    std::vector<std::vector<double>> rows(m, std::vector<double>(n));
    for (std::size_t i = 0; i < m; ++i) {
      jobs.push_back(Job(i, steps(rng), since(rng), weights[rng() % 3], 1 + static_cast<int>(rng() % 2)));
      for (std::size_t j = 0; j < n; ++j) {
        rows[i][j] = (j == 0 || unit(rng) > 0.25) ? speed(rng) : 0.0;
      }
    }
    const PolicyInput input = MakeInput(
        std::vector<std::string>(all_types.begin(), all_types.begin() + static_cast<long>(n)),
        counts, jobs, rows);
    const Truth truth = BuildTruth(input, input.throughput, /*packed=*/false, /*weighted=*/true);
    const double optimum = GlpkOptimalRho(input, truth);
    const std::vector<FinishTimeJob> finish = FinishTimeJobsOf(input, truth);
    double lo = 0.0;
    for (const FinishTimeJob& job : finish) lo = std::max(lo, job.base);
    const double hi = 2.0 * optimum;

    for (int draw = 0; draw < 5; ++draw) {
      std::vector<double> prices;
      for (std::size_t j = 0; j < n; ++j) prices.push_back(unit(rng) < 0.2 ? 0.0 : 3.0 * unit(rng));
      EXPECT_LE(PricedRatioLowerBound(finish, input.gpu_counts, prices, lo, hi),
                optimum * (1 + kRhoTol));
    }

    // The max-min solve at r < r*: the largest τ with thr_k >= τ e_k / (r − b_k) for all k.
    const double r = lo + (optimum - lo) * (0.5 + 0.49 * unit(rng));
    decomp::JobProblem problem;
    problem.capacity = input.gpu_counts;
    problem.t_weight = 1.0;
    problem.gain = Matrix(m, n);
    problem.has_demand.assign(m, 0);
    problem.level.assign(m, 0.0);
    problem.rate.assign(m, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      problem.size.push_back(input.jobs[i].scale_factor);
      for (std::size_t j = 0; j < n; ++j) {
        problem.allowed.push_back(rows[i][j] > 0.0);
        problem.gain(i, j) = rows[i][j];
      }
      if (truth.isolated_time[i] <= 0) continue;
      const double b = input.jobs[i].time_since_start.value() / truth.isolated_time[i];
      problem.has_demand[i] = 1;
      problem.rate[i] = input.jobs[i].steps_remaining * truth.weight[i] /
                        truth.isolated_time[i] / (r - b);
    }
    const auto solution = decomp::SolveJobProblem(problem, *clp);
    ASSERT_TRUE(solution.ok()) << solution.status().ToString();
    ASSERT_EQ(solution->outcome, decomp::JobOutcome::kOptimal);
    ASSERT_LT(solution->t, 1.0);
    const double bound = PricedRatioLowerBound(finish, input.gpu_counts, solution->prices, r, hi);
    EXPECT_GT(bound, r);
    EXPECT_LE(bound, optimum * (1 + kRhoTol));
  }
}

// A cluster at saturation, simulated round by round: jobs arrive faster than 12 GPUs can
// serve them, each round runs at the allocation found, jobs that finish leave, so the queue
// grows to over a hundred jobs that arrived at different times with different work left and
// different isolated time credited (so b_k = a_k / t_iso_k spread widely; the policy keeps
// each job's isolated time between calls). Every round, the decomposition's ratio search
// converges (no note of a fallback to the whole LP) to the ratio of the whole LP's bisection
// (the general path, the oracle, fed the same rounds). Without the priced bound the search ran
// out of its solves on the later rounds and fell back to the whole LP.
TEST(FinishTimeFairnessTest, SaturatedSequencesKeepTheOptimumOfTheWholeLp) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::vector<std::string> types = {"k80", "p100", "v100"};
  const std::vector<double> counts = {4, 4, 4};
  std::vector<PolicyJob> jobs;
  std::vector<std::vector<double>> rows;
  std::uint64_t next_id = 0;
  const auto arrive = [&] {
    const double k80 = 0.5 + 2.0 * unit(rng);
    const double hours_on_k80 = 0.5 + 5.0 * unit(rng);
    jobs.push_back(Job(next_id++, k80 * hours_on_k80 * 3600.0, 0.0, 1.0,
                       unit(rng) < 0.8 ? 1 : (unit(rng) < 0.5 ? 2 : 4)));
    rows.push_back({k80, k80 * (1.0 + 2.0 * unit(rng)), k80 * (1.0 + 4.0 * unit(rng))});
  };
  PolicyOptions general_options;
  general_options.solve_path = SolvePath::kGeneral;
  const std::unique_ptr<Policy> fast = MakeFinishTimeFairness(Variant::kPerf, PolicyOptions{});
  const std::unique_ptr<Policy> general = MakeFinishTimeFairness(Variant::kPerf, general_options);
  constexpr double kRound = 360.0;  // seconds between calls
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE(round);
    for (int i = 0; i < 3; ++i) arrive();
    const PolicyInput input = MakeInput(types, counts, jobs, rows);
    const auto by_search = fast->Allocate(input);
    const auto by_whole_lp = general->Allocate(input);
    ASSERT_TRUE(by_search.ok()) << by_search.status().ToString();
    ASSERT_TRUE(by_whole_lp.ok()) << by_whole_lp.status().ToString();
    EXPECT_EQ(by_search->note, "");
    ExpectValidAllocation(input, *by_search);
    EXPECT_NEAR(*by_search->objective / *by_whole_lp->objective, 1.0, kRhoTol);
    // Every job runs the round at the allocation found; the finished ones leave.
    std::vector<PolicyJob> left;
    std::vector<std::vector<double>> left_rows;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      double thr = 0.0;
      for (std::size_t j = 0; j < types.size(); ++j) thr += rows[i][j] * by_search->allocation(i, j);
      jobs[i].steps_remaining -= thr * kRound;
      jobs[i].time_since_start = Seconds(jobs[i].time_since_start.value() + kRound);
      if (jobs[i].steps_remaining <= 0.0) continue;
      left.push_back(jobs[i]);
      left_rows.push_back(rows[i]);
    }
    jobs = std::move(left);
    rows = std::move(left_rows);
  }
  EXPECT_GT(jobs.size(), 100u);  // (saturated indeed)
}

TEST(FinishTimeFairnessTest, AgnosticCompatNeedsAV100Column) {
  const PolicyInput input = MakeInput({"k80", "p100"}, {1, 1}, {Job(0, 100)}, {{1, 2}});
  EXPECT_FALSE(Ftf(Variant::kAgnostic, /*compat=*/true)->Allocate(input).ok());
  EXPECT_TRUE(Ftf(Variant::kAgnostic)->Allocate(input).ok());
}

TEST(FinishTimeFairnessTest, NoJobsGiveAnEmptyAllocation) {
  const PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, {}, {});
  for (Variant v : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    const auto out = Ftf(v)->Allocate(input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->allocation.rows(), 0u);
  }
}

}  // namespace
}  // namespace gavel::policy
