#include "gavel/decomp/job_decomposition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/model.h"

namespace gavel::decomp {
namespace {

// The same problem as one general LP (the independent check): columns x[i][j], then t.
lp::Model AsGeneralLp(const JobProblem& p) {
  const std::size_t n = p.num_jobs();
  const std::size_t k = p.num_types();
  lp::Model model(lp::Sense::kMaximize);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < k; ++j) {
      const double upper = p.allowed[i * k + j] ? lp::kInfinity : 0.0;
      model.AddColumn(0.0, upper, p.profit.rows() ? p.profit(i, j) : 0.0);
    }
  }
  const int t = model.AddColumn(0.0, p.t_upper, p.t_weight);
  std::vector<int> cols;
  std::vector<double> coefs;
  for (std::size_t j = 0; j < k; ++j) {
    cols.clear();
    coefs.clear();
    for (std::size_t i = 0; i < n; ++i) {
      cols.push_back(static_cast<int>(i * k + j));
      coefs.push_back(p.size[i]);
    }
    model.AddRow(-lp::kInfinity, p.capacity[j], cols, coefs);
  }
  for (std::size_t i = 0; i < n; ++i) {
    cols.clear();
    coefs.clear();
    for (std::size_t j = 0; j < k; ++j) {
      cols.push_back(static_cast<int>(i * k + j));
      coefs.push_back(1.0);
    }
    model.AddRow(-lp::kInfinity, 1.0, cols, coefs);
    if (p.has_demand.empty() || !p.has_demand[i]) continue;
    for (std::size_t j = 0; j < k; ++j) coefs[j] = p.gain(i, j);
    cols.push_back(t);
    coefs.push_back(-p.rate[i]);
    model.AddRow(p.level[i], lp::kInfinity, cols, coefs);
  }
  return model;
}

// Checks x and t against every constraint of the problem and returns the objective they give.
double CheckFeasibleAndValue(const JobProblem& p, const JobSolution& s, double tol) {
  const std::size_t n = p.num_jobs();
  const std::size_t k = p.num_types();
  double value = p.t_weight * s.t;
  EXPECT_GE(s.t, -tol);
  EXPECT_LE(s.t, p.t_upper + tol);
  std::vector<double> usage(k, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    double total = 0.0, got = 0.0;
    for (std::size_t j = 0; j < k; ++j) {
      const double x = s.x(i, j);
      EXPECT_GE(x, -tol) << "job " << i << " type " << j;
      if (!p.allowed[i * k + j]) {
        EXPECT_EQ(x, 0.0) << "job " << i << " type " << j;
      }
      total += x;
      usage[j] += p.size[i] * x;
      if (p.profit.rows()) value += p.profit(i, j) * x;
      if (!p.has_demand.empty() && p.has_demand[i]) got += p.gain(i, j) * x;
    }
    EXPECT_LE(total, 1.0 + tol) << "job " << i;
    if (!p.has_demand.empty() && p.has_demand[i]) {
      const double need = p.level[i] + p.rate[i] * s.t;
      EXPECT_GE(got, need - tol * std::max(1.0, std::abs(need))) << "job " << i;
    }
  }
  for (std::size_t j = 0; j < k; ++j) {
    EXPECT_LE(usage[j], p.capacity[j] + tol * std::max(1.0, p.capacity[j])) << "type " << j;
  }
  return value;
}

enum class Shape { kMaxMin, kLevels, kThroughput, kThroughputWithDemands, kMixed, kMakespan };

JobProblem RandomProblem(std::mt19937_64& rng, Shape shape, std::size_t n, std::size_t k) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  JobProblem p;
  for (std::size_t j = 0; j < k; ++j) p.capacity.push_back(std::floor(1.0 + unit(rng) * n / 2.0));
  p.allowed.assign(n * k, 1);
  p.gain = Matrix(n, k, 0.0);
  p.has_demand.assign(n, 0);
  p.level.assign(n, 0.0);
  p.rate.assign(n, 0.0);
  // A few job "models" so that many jobs tie, as real job mixes do.
  const std::size_t models = 1 + n / 3;
  Matrix model_gain(models, k);
  for (std::size_t m = 0; m < models; ++m) {
    for (std::size_t j = 0; j < k; ++j) model_gain(m, j) = 0.1 + unit(rng) * 10.0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    p.size.push_back(unit(rng) < 0.2 ? 2.0 : 1.0);
    const std::size_t m = std::min(models - 1, static_cast<std::size_t>(unit(rng) * models));
    for (std::size_t j = 0; j < k; ++j) {
      if (unit(rng) < 0.15) {
        p.allowed[i * k + j] = 0;
      } else {
        p.gain(i, j) = model_gain(m, j);
      }
    }
  }
  auto max_gain = [&](std::size_t i) {
    double best = 0.0;
    for (std::size_t j = 0; j < k; ++j) {
      if (p.allowed[i * k + j]) best = std::max(best, p.gain(i, j));
    }
    return best;
  };
  switch (shape) {
    case Shape::kMaxMin:
      p.t_weight = 1.0;
      for (std::size_t i = 0; i < n; ++i) {
        if (max_gain(i) > 0.0) {
          p.has_demand[i] = 1;
          p.rate[i] = 1.0;
        }
      }
      break;
    case Shape::kLevels:  // water filling: small levels (met by an equal share), rates
      p.t_weight = 1.0;
      for (std::size_t i = 0; i < n; ++i) {
        if (max_gain(i) <= 0.0) continue;
        p.has_demand[i] = 1;
        p.level[i] = unit(rng) * 0.05 * max_gain(i);
        p.rate[i] = unit(rng) < 0.2 ? 0.0 : 0.5 + unit(rng);
      }
      break;
    case Shape::kThroughput:
    case Shape::kThroughputWithDemands:
      p.profit = Matrix(n, k, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < k; ++j) {
          if (p.allowed[i * k + j]) p.profit(i, j) = p.gain(i, j) * (0.5 + unit(rng));
        }
        if (shape == Shape::kThroughputWithDemands && unit(rng) < 0.3 && max_gain(i) > 0.0) {
          p.has_demand[i] = 1;
          p.level[i] = unit(rng) * 0.1 * max_gain(i);
        }
      }
      break;
    case Shape::kMakespan:  // min_total_duration: rates R_i / (thr_max_i L), one per job
      // Jobs of a model share their gains (one envelope per pricing) but not their rates:
      // the decomposition prices the model's choices once for all of them.
      p.t_weight = 1.0;
      for (std::size_t i = 0; i < n; ++i) {
        if (max_gain(i) <= 0.0) continue;
        p.has_demand[i] = 1;
        p.rate[i] = 0.01 + unit(rng);
      }
      break;
    case Shape::kMixed:  // profit and a rising demand together
      p.t_weight = 0.5 + unit(rng);
      p.t_upper = 5.0;
      p.profit = Matrix(n, k, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < k; ++j) {
          if (p.allowed[i * k + j]) p.profit(i, j) = unit(rng) - 0.3;
        }
        if (max_gain(i) > 0.0 && unit(rng) < 0.5) {
          p.has_demand[i] = 1;
          p.rate[i] = unit(rng) * 0.2;
        }
      }
      break;
  }
  return p;
}

class JobDecompositionTest : public ::testing::Test {
 protected:
  std::unique_ptr<lp::Solver> clp_ = lp::MakeClpSolver();
  std::unique_ptr<lp::Solver> glpk_ = lp::MakeGlpkSolver();

  // Adds 1 to *optima when both reached an optimum and it was compared.
  void ExpectMatchesGeneralLp(const JobProblem& p, const std::string& what, int* optima) {
    SCOPED_TRACE(what);
    auto general = glpk_->Solve(AsGeneralLp(p));
    ASSERT_TRUE(general.ok()) << general.status().ToString();
    auto fast = SolveJobProblem(p, *clp_);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    if (general->outcome == lp::Outcome::kInfeasible) {
      EXPECT_EQ(fast->outcome, JobOutcome::kInfeasible);
      return;
    }
    if (general->outcome == lp::Outcome::kUnbounded) {
      EXPECT_EQ(fast->outcome, JobOutcome::kUnbounded);
      return;
    }
    ASSERT_EQ(general->outcome, lp::Outcome::kOptimal);
    ASSERT_EQ(fast->outcome, JobOutcome::kOptimal);
    const double scale = std::max(1.0, std::abs(general->objective));
    EXPECT_NEAR(fast->objective, general->objective, 1e-7 * scale);
    EXPECT_NEAR(CheckFeasibleAndValue(p, *fast, 1e-9), general->objective, 1e-7 * scale);
    ++*optima;
  }
};

TEST_F(JobDecompositionTest, MatchesTheGeneralLpOnRandomInstances) {
  std::mt19937_64 rng(20261122);
  int optima = 0;  // cases that reached an optimum (the others are infeasible or unbounded)
  for (Shape shape : {Shape::kMaxMin, Shape::kLevels, Shape::kThroughput,
                      Shape::kThroughputWithDemands, Shape::kMixed, Shape::kMakespan}) {
    for (std::size_t n : {1, 2, 3, 5, 8, 20, 60}) {
      for (std::size_t k : {1, 2, 3, 5}) {
        for (int rep = 0; rep < 3; ++rep) {
          const JobProblem p = RandomProblem(rng, shape, n, k);
          ExpectMatchesGeneralLp(p, "shape " + std::to_string(static_cast<int>(shape)) + " n " +
                                        std::to_string(n) + " k " + std::to_string(k) +
                                        " rep " + std::to_string(rep),
                                 &optima);
        }
      }
    }
  }
  // Most of the 504 cases must compare optima, or the test says little.
  EXPECT_GE(optima, 420);
}

TEST_F(JobDecompositionTest, HandWorkedMaxMin) {
  // Two jobs, one GPU of each of two types. Job 0 runs at 1 on A and 3 on B, job 1 at 1 and
  // 2. Job 0 gives b of B to job 1 and takes 1 − b of A: job 0 gets (1 − b) + 3b, job 1
  // gets b + 2(1 − b); equal at b = 1/3, t = 5/3 (both full, both GPUs busy).
  JobProblem p;
  p.capacity = {1.0, 1.0};
  p.size = {1.0, 1.0};
  p.allowed.assign(4, 1);
  p.gain = Matrix(2, 2);
  p.gain(0, 0) = 1.0;
  p.gain(0, 1) = 3.0;
  p.gain(1, 0) = 1.0;
  p.gain(1, 1) = 2.0;
  p.has_demand = {1, 1};
  p.level = {0.0, 0.0};
  p.rate = {1.0, 1.0};
  p.t_weight = 1.0;
  auto s = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->outcome, JobOutcome::kOptimal);
  EXPECT_NEAR(s->objective, 5.0 / 3.0, 1e-12);
  EXPECT_NEAR(s->t, 5.0 / 3.0, 1e-12);
  EXPECT_NEAR(CheckFeasibleAndValue(p, *s, 1e-12), 5.0 / 3.0, 1e-12);
  // Both jobs are bottlenecked: neither can get more without the other getting less.
  EXPECT_GT(s->marginal_cost[0], 0.0);
  EXPECT_GT(s->marginal_cost[1], 0.0);
}

TEST_F(JobDecompositionTest, TypesThatTieShareTheJobsTimeEvenly) {
  // Three jobs, three types of two GPUs each that every job runs at the same speed: any
  // split is optimal (t = 1); ties are spread evenly, as a central optimum would.
  JobProblem p;
  p.capacity = {2.0, 2.0, 2.0};
  p.size = {1.0, 1.0, 1.0};
  p.allowed.assign(9, 1);
  p.gain = Matrix(3, 3, 1.0);
  p.has_demand = {1, 1, 1};
  p.level = {0.0, 0.0, 0.0};
  p.rate = {1.0, 1.0, 1.0};
  p.t_weight = 1.0;
  auto s = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->outcome, JobOutcome::kOptimal);
  EXPECT_NEAR(s->t, 1.0, 1e-12);
  for (double x : s->x.data()) EXPECT_NEAR(x, 1.0 / 3.0, 1e-12);
}

TEST_F(JobDecompositionTest, DemandsNoAllocationMeetsAreInfeasible) {
  // One GPU, two jobs each needing 0.6 of it.
  JobProblem p;
  p.capacity = {1.0};
  p.size = {1.0, 1.0};
  p.allowed = {1, 1};
  p.gain = Matrix(2, 1, 1.0);
  p.profit = Matrix(2, 1, 1.0);
  p.has_demand = {1, 1};
  p.level = {0.6, 0.6};
  p.rate = {0.0, 0.0};
  auto s = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->outcome, JobOutcome::kInfeasible);
  // 0.5 each fits (found by the first phase, then optimal with the whole GPU used).
  p.level = {0.5, 0.4};
  s = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->outcome, JobOutcome::kOptimal);
  EXPECT_NEAR(s->objective, 1.0, 1e-9);
  EXPECT_GE(s->x(0, 0), 0.5 - 1e-12);
  EXPECT_GE(s->x(1, 0), 0.4 - 1e-12);
}

TEST_F(JobDecompositionTest, AJobThatCannotReachItsLevelIsInfeasible) {
  JobProblem p;
  p.capacity = {4.0};
  p.size = {1.0};
  p.allowed = {1};
  p.gain = Matrix(1, 1, 2.0);
  p.has_demand = {1};
  p.level = {2.5};  // all of its time gives 2
  p.rate = {0.0};
  auto s = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->outcome, JobOutcome::kInfeasible);
}

TEST_F(JobDecompositionTest, TWithNoRisingDemandIsUnbounded) {
  JobProblem p;
  p.capacity = {1.0};
  p.size = {1.0};
  p.allowed = {1};
  p.t_weight = 1.0;
  auto s = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->outcome, JobOutcome::kUnbounded);
}

TEST_F(JobDecompositionTest, StartsFromAGivenPoint) {
  std::mt19937_64 rng(7);
  JobProblem p = RandomProblem(rng, Shape::kMaxMin, 40, 3);
  auto cold = SolveJobProblem(p, *clp_);
  ASSERT_TRUE(cold.ok());
  ASSERT_EQ(cold->outcome, JobOutcome::kOptimal);
  // Started from the optimum itself, the first master already has the optimal value.
  JobSolveOptions options;
  options.start_points.push_back(cold->x);
  auto warm = SolveJobProblem(p, *clp_, options);
  ASSERT_TRUE(warm.ok());
  ASSERT_EQ(warm->outcome, JobOutcome::kOptimal);
  EXPECT_NEAR(warm->objective, cold->objective, 1e-9 * std::max(1.0, cold->objective));
  // It still needs a few iterations to price out the other columns (the one-column master's
  // prices are not unique), but fewer than from the idle point.
  EXPECT_LT(warm->iterations, cold->iterations);
}

TEST_F(JobDecompositionTest, RefusesMalformedProblems) {
  JobProblem p;
  p.capacity = {1.0};
  p.size = {1.0};
  p.allowed = {1, 1};  // not n × k
  EXPECT_FALSE(SolveJobProblem(p, *clp_).ok());
  p.allowed = {1};
  p.size = {0.0};
  EXPECT_FALSE(SolveJobProblem(p, *clp_).ok());
  p.size = {1.0};
  p.has_demand = {1};
  p.level = {0.0};
  p.rate = {-1.0};
  p.gain = Matrix(1, 1, 1.0);
  EXPECT_FALSE(SolveJobProblem(p, *clp_).ok());
}

}  // namespace
}  // namespace gavel::decomp
