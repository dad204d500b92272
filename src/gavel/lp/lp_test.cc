#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/solver.h"

namespace gavel::lp {
namespace {

// maximise 3x + 2y  s.t.  x + y <= 4,  x + 3y <= 6,  x <= 3  →  x = 3, y = 1, objective 11.
Model SmallLp() {
  Model model(Sense::kMaximize);
  const int x = model.AddColumn(0.0, 3.0, 3.0);
  const int y = model.AddColumn(0.0, kInfinity, 2.0);
  const int c1[] = {x, y};
  const double a1[] = {1.0, 1.0};
  model.AddRow(-kInfinity, 4.0, c1, a1);
  const double a2[] = {1.0, 3.0};
  model.AddRow(-kInfinity, 6.0, c1, a2);
  return model;
}

std::vector<std::shared_ptr<Solver>> AllSolvers() {
  return {MakeClpSolver(), MakeCbcSolver(), MakeGlpkSolver()};
}

TEST(LpTest, EverySolverFindsTheHandWorkedOptimum) {
  for (const auto& solver : AllSolvers()) {
    SCOPED_TRACE(std::string(solver->name()));
    const auto solution = solver->Solve(SmallLp());
    ASSERT_TRUE(solution.ok()) << solution.status().ToString();
    ASSERT_EQ(solution->outcome, Outcome::kOptimal);
    EXPECT_NEAR(solution->objective, 11.0, 1e-9);
    EXPECT_NEAR(solution->values[0], 3.0, 1e-9);
    EXPECT_NEAR(solution->values[1], 1.0, 1e-9);
  }
}

TEST(LpTest, InfeasibleIsAnOutcomeNotAnError) {
  for (const auto& solver : AllSolvers()) {
    SCOPED_TRACE(std::string(solver->name()));
    Model model = SmallLp();
    const int cols[] = {0, 1};
    const double ones[] = {1.0, 1.0};
    model.AddRow(5.0, kInfinity, cols, ones);  // contradicts x + y <= 4
    const auto solution = solver->Solve(model);
    ASSERT_TRUE(solution.ok()) << solution.status().ToString();
    EXPECT_EQ(solution->outcome, Outcome::kInfeasible);
  }
}

TEST(LpTest, UnboundedIsAnOutcomeNotAnError) {
  for (const auto& solver : AllSolvers()) {
    SCOPED_TRACE(std::string(solver->name()));
    Model model(Sense::kMaximize);
    const int x = model.AddColumn(0.0, kInfinity, 1.0);
    const int cols[] = {x};
    const double one[] = {1.0};
    model.AddRow(1.0, kInfinity, cols, one);
    const auto solution = solver->Solve(model);
    ASSERT_TRUE(solution.ok()) << solution.status().ToString();
    EXPECT_EQ(solution->outcome, Outcome::kUnbounded);
  }
}

TEST(LpTest, ClpRefusesIntegersButCbcAndGlpkSolveThem) {
  // maximise x + y s.t. 2x + 2y <= 3, integers → 1 (the LP relaxation gives 1.5).
  Model model(Sense::kMaximize);
  const int x = model.AddColumn(0.0, 10.0, 1.0, true);
  const int y = model.AddColumn(0.0, 10.0, 1.0, true);
  const int cols[] = {x, y};
  const double twos[] = {2.0, 2.0};
  model.AddRow(-kInfinity, 3.0, cols, twos);
  EXPECT_FALSE(MakeClpSolver()->Solve(model).ok());
  for (auto solver : {std::shared_ptr<Solver>(MakeCbcSolver()),
                      std::shared_ptr<Solver>(MakeGlpkSolver())}) {
    SCOPED_TRACE(std::string(solver->name()));
    const auto solution = solver->Solve(model);
    ASSERT_TRUE(solution.ok()) << solution.status().ToString();
    ASSERT_EQ(solution->outcome, Outcome::kOptimal);
    EXPECT_NEAR(solution->objective, 1.0, 1e-9);
  }
}

TEST(LpTest, SessionsReSolveAfterChangesLikeAFreshSolve) {
  for (const auto& solver : AllSolvers()) {
    SCOPED_TRACE(std::string(solver->name()));
    auto session = solver->Load(SmallLp());
    ASSERT_TRUE(session.ok());
    ASSERT_NEAR((*session)->Solve()->objective, 11.0, 1e-9);

    // Tighten a bound: x <= 1 → y = 5/3 from row 2, objective 3 + 10/3.
    (*session)->SetColumnBounds(0, 0.0, 1.0);
    EXPECT_NEAR((*session)->Solve()->objective, 3.0 + 10.0 / 3.0, 1e-9);
    // Change the objective: maximise 3x + 5y → y = 5/3, x = 1 still optimal? 3 + 25/3.
    (*session)->SetObjective(1, 5.0);
    EXPECT_NEAR((*session)->Solve()->objective, 3.0 + 25.0 / 3.0, 1e-9);
    // Add a row y <= 1: x = 1, y = 1 → 8.
    const int cols[] = {1};
    const double one[] = {1.0};
    (*session)->AddRow(-kInfinity, 1.0, cols, one);
    EXPECT_NEAR((*session)->Solve()->objective, 8.0, 1e-9);
    // Add a column z in row 0 with objective 10, bounds [0, 1]: x + y + z <= 4 → z = 1, 18.
    const int rows[] = {0};
    (*session)->AddColumn(0.0, 1.0, 10.0, rows, one);
    const auto last = (*session)->Solve();
    ASSERT_TRUE(last.ok());
    EXPECT_NEAR(last->objective, 18.0, 1e-9);
    EXPECT_EQ(last->values.size(), 3u);
  }
}

// A random packing LP: maximise c·x, x in [0, u], rows A x <= b with A >= 0 (x = 0 is
// feasible), several hundred iterations from the slack basis.
Model RandomPackingLp(std::mt19937& rng, int columns, int rows) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Model model(Sense::kMaximize);
  for (int j = 0; j < columns; ++j) model.AddColumn(0.0, 1.0 + 3.0 * unit(rng), 0.1 + unit(rng));
  std::vector<int> cols;
  std::vector<double> coefs;
  for (int i = 0; i < rows; ++i) {
    cols.clear();
    coefs.clear();
    for (int j = 0; j < columns; ++j) {
      if (unit(rng) > 0.2) continue;
      cols.push_back(j);
      coefs.push_back(0.1 + unit(rng));
    }
    model.AddRow(-kInfinity, 1.0 + 5.0 * unit(rng), cols, coefs);
  }
  return model;
}

// Session::SetStartPoint is a hint: from an optimal point, a feasible non-optimal one (the
// optimum halved), or an infeasible one (every column at its upper bound), the solve ends at
// the same optimal value as a fresh one; from the optimum Clp needs fewer iterations than
// from its slack basis. GLPK (a rebuilding session) ignores it.
TEST(LpTest, StartPointsChangeThePathNotTheOptimum) {
  std::mt19937 rng(2026);
  long fresh_iterations = 0;
  long started_iterations = 0;
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Model model = RandomPackingLp(rng, 60 + 10 * trial, 30 + 5 * trial);
    const auto fresh = MakeClpSolver()->Solve(model);
    ASSERT_TRUE(fresh.ok());
    ASSERT_EQ(fresh->outcome, Outcome::kOptimal);
    fresh_iterations += fresh->iterations;
    std::vector<double> halved = fresh->values;
    for (double& v : halved) v *= 0.5;
    std::vector<double> too_much;
    for (const Column& c : model.columns()) too_much.push_back(c.upper);
    const std::vector<double>* starts[] = {&fresh->values, &halved, &too_much};
    for (const std::vector<double>* start : starts) {
      for (const auto& solver : {MakeClpSolver(), MakeGlpkSolver()}) {
        SCOPED_TRACE(std::string(solver->name()));
        auto session = solver->Load(model);
        ASSERT_TRUE(session.ok());
        (*session)->SetStartPoint(*start);
        const auto started = (*session)->Solve();
        ASSERT_TRUE(started.ok());
        ASSERT_EQ(started->outcome, Outcome::kOptimal);
        EXPECT_NEAR(started->objective, fresh->objective, 1e-7 * std::max(1.0, fresh->objective));
        EXPECT_LE(model.MaxViolation(started->values), 1e-7);
        if (start == starts[0] && solver->name() == "clp") started_iterations += started->iterations;
      }
    }
    // A start point is for the first solve only: a warm re-solve after a change ignores it.
    auto session = MakeClpSolver()->Load(model);
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Solve().ok());
    (*session)->SetStartPoint(too_much);
    (*session)->SetObjective(0, 0.0);
    Model changed = model;
    changed.SetObjective(0, 0.0);
    const auto resolved = (*session)->Solve();
    const auto reference = MakeClpSolver()->Solve(changed);
    ASSERT_TRUE(resolved.ok() && reference.ok());
    EXPECT_NEAR(resolved->objective, reference->objective, 1e-7 * std::max(1.0, reference->objective));
    // Ignored, not merely harmless (any start reaches the same optimum): the same re-solve
    // without the start point takes the same pivots.
    auto plain = MakeClpSolver()->Load(model);
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE((*plain)->Solve().ok());
    (*plain)->SetObjective(0, 0.0);
    const auto plain_resolved = (*plain)->Solve();
    ASSERT_TRUE(plain_resolved.ok());
    EXPECT_EQ(resolved->iterations, plain_resolved->iterations);
  }
  EXPECT_LT(started_iterations, fresh_iterations / 4)
      << started_iterations << " iterations from the optimum, " << fresh_iterations << " fresh";
}

// Session::AddColumns (Clp's own batch, GLPK's default column by column) must load the same
// columns as AddColumn one at a time: same indices, and both sessions solve to the optimum of
// a fresh model holding every column.
TEST(LpTest, AddColumnsInOneBatchEqualsAddingThemOneByOne) {
  struct NewColumn {
    double lower, upper, objective;
    std::vector<int> rows;
    std::vector<double> coefficients;
  };
  const std::vector<NewColumn> columns = {
      {0.0, 1.0, 10.0, {0}, {1.0}},
      {0.0, 2.0, 1.0, {0, 1}, {0.5, 2.0}},
      {0.0, kInfinity, 0.5, {1}, {1.0}},
      {0.0, 1.0, 0.25, {}, {}},  // no entries: goes to its upper bound
  };
  // The fresh model: SmallLp's columns and rows, with the new columns' entries.
  Model fresh(Sense::kMaximize);
  fresh.AddColumn(0.0, 3.0, 3.0);
  fresh.AddColumn(0.0, kInfinity, 2.0);
  for (const NewColumn& c : columns) fresh.AddColumn(c.lower, c.upper, c.objective);
  std::vector<std::vector<int>> row_cols = {{0, 1}, {0, 1}};
  std::vector<std::vector<double>> row_coefs = {{1.0, 1.0}, {1.0, 3.0}};
  for (std::size_t c = 0; c < columns.size(); ++c) {
    for (std::size_t k = 0; k < columns[c].rows.size(); ++k) {
      row_cols[static_cast<std::size_t>(columns[c].rows[k])].push_back(static_cast<int>(c) + 2);
      row_coefs[static_cast<std::size_t>(columns[c].rows[k])].push_back(columns[c].coefficients[k]);
    }
  }
  fresh.AddRow(-kInfinity, 4.0, row_cols[0], row_coefs[0]);
  fresh.AddRow(-kInfinity, 6.0, row_cols[1], row_coefs[1]);

  for (const std::shared_ptr<Solver>& solver :
       {std::shared_ptr<Solver>(MakeClpSolver()), std::shared_ptr<Solver>(MakeGlpkSolver())}) {
    SCOPED_TRACE(std::string(solver->name()));
    const auto expected = solver->Solve(fresh);
    ASSERT_TRUE(expected.ok() && expected->outcome == Outcome::kOptimal);
    auto batched = solver->Load(SmallLp());
    auto single = solver->Load(SmallLp());
    ASSERT_TRUE(batched.ok() && single.ok());
    ColumnBatch batch;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const NewColumn& column = columns[c];
      batch.Add(column.lower, column.upper, column.objective, column.rows, column.coefficients);
      EXPECT_EQ((*single)->AddColumn(column.lower, column.upper, column.objective, column.rows,
                                     column.coefficients),
                static_cast<int>(c) + 2);
    }
    EXPECT_EQ((*batched)->AddColumns(batch), 2);
    const auto from_batch = (*batched)->Solve();
    const auto one_by_one = (*single)->Solve();
    ASSERT_TRUE(from_batch.ok() && one_by_one.ok());
    ASSERT_EQ(from_batch->outcome, Outcome::kOptimal);
    EXPECT_NEAR(from_batch->objective, expected->objective, 1e-9);
    EXPECT_NEAR(one_by_one->objective, expected->objective, 1e-9);
    ASSERT_EQ(from_batch->values.size(), expected->values.size());
    for (std::size_t j = 0; j < expected->values.size(); ++j) {
      EXPECT_NEAR(from_batch->values[j], expected->values[j], 1e-9) << "column " << j;
      EXPECT_NEAR(one_by_one->values[j], expected->values[j], 1e-9) << "column " << j;
    }
  }
}

// maximise t s.t. x_a + x_b >= t for jobs 1..3, each type a/b holds at most 1.5 in total,
// x <= 1: the optimum t = 1 is reached by many allocations. By symmetry (jobs and types are
// interchangeable) the analytic centre of the optimal face gives every x the value 1/2; a
// simplex vertex puts whole units on one type.
TEST(LpTest, CentralAlgorithmReturnsTheSymmetricInteriorPointOfATiedOptimum) {
  Model model(Sense::kMaximize);
  std::vector<int> x;
  for (int k = 0; k < 6; ++k) x.push_back(model.AddColumn(0.0, 1.0));
  const int t = model.AddColumn(0.0, kInfinity, 1.0);
  for (int type = 0; type < 2; ++type) {
    const int cols[] = {x[static_cast<std::size_t>(type)], x[static_cast<std::size_t>(2 + type)],
                        x[static_cast<std::size_t>(4 + type)]};
    const double ones[] = {1.0, 1.0, 1.0};
    model.AddRow(-kInfinity, 1.5, cols, ones);
  }
  for (int job = 0; job < 3; ++job) {
    const int cols[] = {x[static_cast<std::size_t>(2 * job)],
                        x[static_cast<std::size_t>(2 * job + 1)], t};
    const double coefs[] = {1.0, 1.0, -1.0};
    model.AddRow(0.0, kInfinity, cols, coefs);
  }
  SolveOptions central;
  central.algorithm = Algorithm::kCentral;
  const auto solution = MakeClpSolver()->Solve(model, central);
  ASSERT_TRUE(solution.ok());
  ASSERT_EQ(solution->outcome, Outcome::kOptimal);
  EXPECT_NEAR(solution->objective, 1.0, 1e-6);
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(solution->values[static_cast<std::size_t>(k)], 0.5, 1e-4);
}

// Regressions: the barrier alone called an infeasible model optimal, and aborted the process
// on a row without entries.
TEST(LpTest, CentralAlgorithmStillReportsInfeasibilityAndToleratesEmptyRows) {
  SolveOptions central;
  central.algorithm = Algorithm::kCentral;
  Model infeasible(Sense::kMaximize);
  const int x = infeasible.AddColumn(0.0, 1.0, 1.0);
  const int cols[] = {x};
  const double one[] = {1.0};
  infeasible.AddRow(133.0, kInfinity, cols, one);
  const auto verdict = MakeClpSolver()->Solve(infeasible, central);
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->outcome, Outcome::kInfeasible);

  Model with_empty_row = SmallLp();
  with_empty_row.AddRow(-kInfinity, kInfinity, {}, {});
  const double zero[] = {0.0};
  const int first[] = {0};
  with_empty_row.AddRow(-kInfinity, kInfinity, first, zero);
  const auto solution = MakeClpSolver()->Solve(with_empty_row, central);
  ASSERT_TRUE(solution.ok());
  ASSERT_EQ(solution->outcome, Outcome::kOptimal);
  EXPECT_NEAR(solution->objective, 11.0, 1e-6);
}

TEST(LpTest, MaxViolationMeasuresRowAndBoundViolations) {
  const Model model = SmallLp();
  const double feasible[] = {3.0, 1.0};
  EXPECT_DOUBLE_EQ(model.MaxViolation(feasible), 0.0);
  const double over[] = {3.0, 2.0};  // x + 3y = 9 > 6
  EXPECT_DOUBLE_EQ(model.MaxViolation(over), 3.0);
}

}  // namespace
}  // namespace gavel::lp
