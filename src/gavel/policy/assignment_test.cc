#include "gavel/policy/assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace gavel::policy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Matrix FromRows(const std::vector<std::vector<double>>& rows) {
  Matrix m(rows.size(), rows.empty() ? 0 : rows[0].size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < rows[r].size(); ++c) m(r, c) = rows[r][c];
  }
  return m;
}

// The least total cost over every injective map from the shorter side into the longer one,
// by exhaustive enumeration (independent of the solver).
double BruteForceMinCost(const Matrix& cost) {
  const bool wide = cost.rows() <= cost.cols();
  const std::size_t small = wide ? cost.rows() : cost.cols();
  const std::size_t large = wide ? cost.cols() : cost.rows();
  std::vector<bool> used(large, false);
  double best = kInf;
  std::function<void(std::size_t, double)> extend = [&](std::size_t k, double sum) {
    if (k == small) {
      best = std::min(best, sum);
      return;
    }
    for (std::size_t l = 0; l < large; ++l) {
      if (used[l]) continue;
      used[l] = true;
      extend(k + 1, sum + (wide ? cost(k, l) : cost(l, k)));
      used[l] = false;
    }
  };
  extend(0, 0.0);
  return best;
}

// Checks that the answer is a valid assignment and returns its cost.
double CheckedCost(const Matrix& cost, const LinearAssignment& a) {
  const std::size_t expected = std::min(cost.rows(), cost.cols());
  EXPECT_EQ(a.rows.size(), expected);
  EXPECT_EQ(a.cols.size(), expected);
  EXPECT_TRUE(std::is_sorted(a.rows.begin(), a.rows.end()));
  EXPECT_EQ(std::set<std::size_t>(a.rows.begin(), a.rows.end()).size(), a.rows.size());
  EXPECT_EQ(std::set<std::size_t>(a.cols.begin(), a.cols.end()).size(), a.cols.size());
  double total = 0.0;
  for (std::size_t k = 0; k < a.rows.size(); ++k) {
    EXPECT_LT(a.rows[k], cost.rows());
    EXPECT_LT(a.cols[k], cost.cols());
    total += cost(a.rows[k], a.cols[k]);
  }
  return total;
}

TEST(AssignmentTest, EmptyMatrixGivesEmptyAssignment) {
  const auto none = SolveLinearSumAssignment(Matrix(0, 3));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->rows.empty());
  const auto none2 = SolveLinearSumAssignment(Matrix(4, 0));
  ASSERT_TRUE(none2.ok());
  EXPECT_TRUE(none2->cols.empty());
}

// SciPy's documented example. Of the six permutations of [[4,1,3],[2,0,5],[3,2,2]] the costs
// are 0→0,1→1,2→2: 6; 0→0,1→2,2→1: 11; 0→1,1→0,2→2: 5; 0→1,1→2,2→0: 9; 0→2,1→0,2→1: 7;
// 0→2,1→1,2→0: 6. The unique optimum is cols [1, 0, 2] with cost 5.
TEST(AssignmentTest, SquareHandWorkedExample) {
  const Matrix cost = FromRows({{4, 1, 3}, {2, 0, 5}, {3, 2, 2}});
  const auto a = SolveLinearSumAssignment(cost);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rows, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(a->cols, (std::vector<std::size_t>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(CheckedCost(cost, *a), 5.0);
}

// Tall 3×2: choose two rows. Candidates: {r0c0 1 + r1c1 1} = 2, {r2c0 0 + r1c1 1} = 1,
// {r0c1 5 + ...} >= 5, {r1c0 2 + r0c1 5 / r2c1 9} >= 7, {r2c0 0 + r0c1 5} = 5. The optimum 1 uses
// rows 1 and 2; rows come back ascending: (1, 1), (2, 0).
TEST(AssignmentTest, TallMatrixIsSolvedTransposed) {
  const Matrix cost = FromRows({{1, 5}, {2, 1}, {0, 9}});
  const auto a = SolveLinearSumAssignment(cost);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rows, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(a->cols, (std::vector<std::size_t>{1, 0}));
}

// SciPy guarantees (issue #11602) that a constant matrix gives the identity: columns are
// scanned from the last to the first and an equal-cost free column replaces the current
// best, so the first column wins for row 0, the second for row 1, and so on. This is the
// tie-breaking AlloX relies on to match the original.
TEST(AssignmentTest, ConstantMatrixGivesIdentity) {
  const auto square = SolveLinearSumAssignment(Matrix(4, 4, 7.0));
  ASSERT_TRUE(square.ok());
  EXPECT_EQ(square->cols, (std::vector<std::size_t>{0, 1, 2, 3}));
  const auto wide = SolveLinearSumAssignment(Matrix(2, 5, 1.0));
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->cols, (std::vector<std::size_t>{0, 1}));
}

// Row 0 is indifferent between columns 0 and 1 (cost 1 each); row 1 costs 0 on column 1 and 5
// on column 0. Row 0 first takes column 0 (the earliest of the equal free columns); row 1
// then takes column 1 directly. Optimum 1 + 0 = 1.
TEST(AssignmentTest, EqualCostsPreferTheEarlierFreeColumn) {
  const Matrix cost = FromRows({{1, 1, 3}, {5, 0, 3}});
  const auto a = SolveLinearSumAssignment(cost);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->cols, (std::vector<std::size_t>{0, 1}));
}

TEST(AssignmentTest, ForbiddenCellsAreAvoided) {
  // Row 0 may only use column 1, so row 1 must take column 0 despite its cost.
  const Matrix cost = FromRows({{kInf, 3}, {100, 1}});
  const auto a = SolveLinearSumAssignment(cost);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->cols, (std::vector<std::size_t>{1, 0}));
}

TEST(AssignmentTest, InfeasibleAndInvalidMatricesAreErrors) {
  const auto infeasible = SolveLinearSumAssignment(FromRows({{kInf, kInf}, {1, 2}}));
  ASSERT_FALSE(infeasible.ok());
  EXPECT_EQ(infeasible.status().code(), StatusCode::kFailedPrecondition);
  const auto nan =
      SolveLinearSumAssignment(FromRows({{1, std::numeric_limits<double>::quiet_NaN()}, {1, 2}}));
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.status().code(), StatusCode::kInvalidArgument);
  const auto minus_inf = SolveLinearSumAssignment(FromRows({{1, -kInf}, {1, 2}}));
  ASSERT_FALSE(minus_inf.ok());
  EXPECT_EQ(minus_inf.status().code(), StatusCode::kInvalidArgument);
}

// Optimal cost equals brute force on random rectangular matrices of every shape up to 6×6,
// with real-valued costs, small integer costs (many ties) and negative costs.
TEST(AssignmentTest, MatchesBruteForceOnRandomMatrices) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> real(-50.0, 100.0);
  std::uniform_int_distribution<int> small_int(0, 3);
  int checked = 0;
  for (std::size_t rows = 1; rows <= 6; ++rows) {
    for (std::size_t cols = 1; cols <= 6; ++cols) {
      for (int trial = 0; trial < 12; ++trial) {
        Matrix cost(rows, cols);
        for (double& c : cost.data()) {
          c = trial % 2 == 0 ? real(rng) : static_cast<double>(small_int(rng));
        }
        const auto a = SolveLinearSumAssignment(cost);
        ASSERT_TRUE(a.ok());
        EXPECT_NEAR(CheckedCost(cost, *a), BruteForceMinCost(cost), 1e-9)
            << rows << "x" << cols << " trial " << trial;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 6 * 12);
}

// AlloX's shape: m jobs × (m·n) slots where slot k·n+g costs (k+1)·p[i][g] + d[i]. Brute
// force over injective maps on small instances.
TEST(AssignmentTest, MatchesBruteForceOnAlloxShapedMatrices) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> processing(1.0, 20.0);
  std::uniform_real_distribution<double> delay(0.0, 10.0);
  for (std::size_t m = 1; m <= 3; ++m) {
    for (std::size_t n = 1; n <= 3; ++n) {
      for (int trial = 0; trial < 5; ++trial) {
        Matrix cost(m, m * n);
        for (std::size_t i = 0; i < m; ++i) {
          const double d = delay(rng);
          std::vector<double> p(n);
          for (double& x : p) x = processing(rng);
          for (std::size_t k = 0; k < m; ++k) {
            for (std::size_t g = 0; g < n; ++g) {
              cost(i, k * n + g) = static_cast<double>(k + 1) * p[g] + d;
            }
          }
        }
        const auto a = SolveLinearSumAssignment(cost);
        ASSERT_TRUE(a.ok());
        EXPECT_NEAR(CheckedCost(cost, *a), BruteForceMinCost(cost), 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace gavel::policy

namespace gavel::policy {
namespace {

// The dense AlloX matrix of a queue problem: one column per (GPU, position), slot k·G + g
// costing (k + 1)·p[r][type of g].
Matrix DenseQueueCost(const Matrix& processing, const std::vector<std::size_t>& gpus) {
  std::vector<std::size_t> gpu_type;
  for (std::size_t t = 0; t < gpus.size(); ++t) gpu_type.insert(gpu_type.end(), gpus[t], t);
  const std::size_t rows = processing.rows();
  const std::size_t g_count = gpu_type.size();
  Matrix cost(rows, rows * g_count);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < rows; ++k) {
      for (std::size_t g = 0; g < g_count; ++g) {
        cost(r, k * g_count + g) = static_cast<double>(k + 1) * processing(r, gpu_type[g]);
      }
    }
  }
  return cost;
}

// Checks that no (type, position) holds more rows than the type has GPUs; returns the cost.
double CheckedQueueCost(const Matrix& processing, const std::vector<std::size_t>& gpus,
                        const std::vector<QueuePlacement>& placed) {
  EXPECT_EQ(placed.size(), processing.rows());
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> load;
  double total = 0.0;
  for (std::size_t r = 0; r < placed.size(); ++r) {
    EXPECT_LT(placed[r].type, gpus.size());
    ++load[{placed[r].type, placed[r].position}];
    total += static_cast<double>(placed[r].position + 1) * processing(r, placed[r].type);
  }
  for (const auto& [slot, count] : load) EXPECT_LE(count, gpus[slot.first]);
  return total;
}

Matrix RandomProcessing(std::mt19937& rng, std::size_t rows, std::size_t types, bool ties) {
  std::uniform_real_distribution<double> real(0.0, 20.0);
  std::uniform_int_distribution<int> small_int(0, 3);
  Matrix p(rows, types);
  for (double& x : p.data()) x = ties ? static_cast<double>(small_int(rng)) : real(rng);
  return p;
}

// Brute force over every injective map of rows into (GPU, position) slots (the dense matrix)
// on tiny instances, with real costs, small integer costs (ties) and zero costs.
TEST(QueueAssignmentTest, MatchesBruteForceOnTinyInstances) {
  std::mt19937 rng(99);
  int checked = 0;
  for (std::size_t rows = 1; rows <= 4; ++rows) {
    for (const std::vector<std::size_t>& gpus :
         std::vector<std::vector<std::size_t>>{{1}, {2}, {1, 1}, {0, 2}, {2, 1}, {1, 0, 1}}) {
      for (int trial = 0; trial < 6; ++trial) {
        const Matrix p = RandomProcessing(rng, rows, gpus.size(), trial % 2 == 1);
        const auto placed = SolveQueueAssignment(p, gpus);
        ASSERT_TRUE(placed.ok()) << placed.status().ToString();
        EXPECT_NEAR(CheckedQueueCost(p, gpus, *placed),
                    BruteForceMinCost(DenseQueueCost(p, gpus)), 1e-9)
            << rows << " rows, trial " << trial;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 6 * 6);
}

// Medium instances against the dense shortest-augmenting-path solver (a different algorithm
// on the ungrouped matrix): up to 40 rows on up to 9 GPUs of 3 types.
TEST(QueueAssignmentTest, MatchesDenseAssignmentOnMediumInstances) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t rows = 5 + rng() % 36;
    std::vector<std::size_t> gpus(3);
    for (std::size_t& g : gpus) g = rng() % 4;
    if (gpus[0] + gpus[1] + gpus[2] == 0) gpus[1] = 1;
    const Matrix p = RandomProcessing(rng, rows, 3, trial % 3 == 0);
    const auto placed = SolveQueueAssignment(p, gpus);
    ASSERT_TRUE(placed.ok()) << placed.status().ToString();
    const auto dense = SolveLinearSumAssignment(DenseQueueCost(p, gpus));
    ASSERT_TRUE(dense.ok());
    const double expected = CheckedCost(DenseQueueCost(p, gpus), *dense);
    EXPECT_NEAR(CheckedQueueCost(p, gpus, *placed), expected, 1e-9 * (1.0 + expected))
        << "trial " << trial;
  }
}

TEST(QueueAssignmentTest, BadInputIsAnError) {
  const std::vector<std::size_t> one = {1};
  EXPECT_TRUE(SolveQueueAssignment(Matrix(0, 1), one).ok());
  EXPECT_EQ(SolveQueueAssignment(Matrix(2, 1, 1.0), std::vector<std::size_t>{0}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(SolveQueueAssignment(Matrix(2, 1, -1.0), one).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SolveQueueAssignment(Matrix(2, 1, kInf), one).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SolveQueueAssignment(Matrix(2, 2, 1.0), one).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gavel::policy
