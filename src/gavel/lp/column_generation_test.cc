#include "gavel/lp/column_generation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/lp/solver.h"

namespace gavel::lp {
namespace {

constexpr double kObjectiveTolerance = 1e-7;
constexpr double kFeasibilityTolerance = 1e-7;

double RelativeGap(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

// Σ_i y_i a_ij for every column.
std::vector<double> DualActivity(const Model& model, const std::vector<double>& duals) {
  std::vector<double> activity(static_cast<std::size_t>(model.num_columns()), 0.0);
  for (int i = 0; i < model.num_rows(); ++i) {
    for (int k = model.row_start()[static_cast<std::size_t>(i)];
         k < model.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
      activity[static_cast<std::size_t>(model.entry_column()[static_cast<std::size_t>(k)])] +=
          duals[static_cast<std::size_t>(i)] * model.entry_value()[static_cast<std::size_t>(k)];
    }
  }
  return activity;
}

// The largest violation of the optimality conditions on columns: a column strictly above its
// lower bound must not gain by going down, one strictly below its upper bound must not gain
// by going up (gain = reduced cost, with the sign of the sense).
double WorstColumnDualViolation(const Model& model, const Solution& solution) {
  const double direction = model.sense() == Sense::kMaximize ? 1.0 : -1.0;
  double worst = 0.0;
  for (std::size_t j = 0; j < model.columns().size(); ++j) {
    const Column& c = model.columns()[j];
    const double gain = direction * solution.reduced_costs[j];
    const double x = solution.values[j];
    if (x < c.upper - 1e-7) worst = std::max(worst, gain);
    if (x > c.lower + 1e-7) worst = std::max(worst, -gain);
  }
  return worst;
}

struct RandomModelShape {
  int columns = 30;
  int rows = 15;
};

// A feasible random LP: rows are built around a random point inside the column bounds, so
// every row is satisfiable at once. Row kinds: <=, >=, ranged, equality (rare). About half
// of the columns are lazy; among those, half have an unattractive objective (0 at most optima)
// and half an attractive one (needed). Some columns are free or unbounded on one side.
Model RandomModel(std::mt19937& rng, const RandomModelShape& shape) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_real_distribution<double> coefficient(-3.0, 3.0);
  const Sense sense = unit(rng) < 0.5 ? Sense::kMaximize : Sense::kMinimize;
  const double direction = sense == Sense::kMaximize ? 1.0 : -1.0;
  Model model(sense);
  std::vector<double> point;
  for (int j = 0; j < shape.columns; ++j) {
    const double kind = unit(rng);
    double lower = 0.0;
    double upper = 1.0 + 4.0 * unit(rng);
    if (kind < 0.1) {
      lower = -kInfinity;
      upper = kInfinity;
    } else if (kind < 0.2) {
      upper = kInfinity;
    } else if (kind < 0.3) {
      lower = -2.0 * unit(rng);
    } else if (kind < 0.35) {
      lower = 0.5 * unit(rng);  // bounds without 0: must be loaded even if lazy
    }
    const bool lazy = unit(rng) < 0.5;
    double objective = coefficient(rng);
    if (lazy && unit(rng) < 0.5) objective = -direction * (1.0 + 2.0 * unit(rng));
    // Columns with an infinite bound cost nothing, so every ray has objective 0 and the LP
    // is bounded: a model both infeasible and unbounded is called either by Clp and GLPK.
    // CoverModel below tests unboundedness.
    if (!std::isfinite(lower) || !std::isfinite(upper)) objective = 0.0;
    const int column = model.AddColumn(lower, upper, objective);
    model.SetColumnLazy(column, lazy);
    const double lo = std::isfinite(lower) ? lower : -3.0;
    const double hi = std::isfinite(upper) ? upper : 3.0;
    point.push_back(lo + (hi - lo) * unit(rng));
  }
  std::vector<int> cols;
  std::vector<double> coefs;
  for (int i = 0; i < shape.rows; ++i) {
    cols.clear();
    coefs.clear();
    double activity = 0.0;
    for (int j = 0; j < shape.columns; ++j) {
      if (unit(rng) > 0.3) continue;
      cols.push_back(j);
      coefs.push_back(coefficient(rng));
      activity += coefs.back() * point[static_cast<std::size_t>(j)];
    }
    const double kind = unit(rng);
    const double slack = 2.0 * unit(rng);
    if (kind < 0.4) {
      model.AddRow(-kInfinity, activity + slack, cols, coefs);
    } else if (kind < 0.8) {
      model.AddRow(activity - slack, kInfinity, cols, coefs);
    } else if (kind < 0.95) {
      model.AddRow(activity - slack, activity + slack, cols, coefs);
    } else {
      model.AddRow(activity, activity, cols, coefs);
    }
  }
  return model;
}

// The same model with one more column (entries in existing rows): Model stores rows
// compressed, so this rebuilds it.
Model WithColumn(const Model& model, double lower, double upper, double objective,
                 const std::vector<int>& rows, const std::vector<double>& values) {
  Model rebuilt(model.sense());
  for (const Column& c : model.columns()) {
    const int column = rebuilt.AddColumn(c.lower, c.upper, c.objective);
    rebuilt.SetColumnLazy(column, c.lazy);
  }
  const int added = rebuilt.AddColumn(lower, upper, objective);
  for (int i = 0; i < model.num_rows(); ++i) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (int k = model.row_start()[static_cast<std::size_t>(i)];
         k < model.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
      cols.push_back(model.entry_column()[static_cast<std::size_t>(k)]);
      coefs.push_back(model.entry_value()[static_cast<std::size_t>(k)]);
    }
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (rows[k] != i) continue;
      cols.push_back(added);
      coefs.push_back(values[k]);
    }
    rebuilt.AddRow(model.row_lower()[static_cast<std::size_t>(i)],
                   model.row_upper()[static_cast<std::size_t>(i)], cols, coefs);
  }
  return rebuilt;
}

// Checks a column-generation solution against a reference solve of the whole model.
void ExpectSameAnswer(const Model& model, const Solution& generated, const Solution& reference) {
  ASSERT_EQ(OutcomeName(generated.outcome), std::string(OutcomeName(reference.outcome)));
  if (reference.outcome != Outcome::kOptimal) return;
  EXPECT_LE(RelativeGap(generated.objective, reference.objective), kObjectiveTolerance)
      << generated.objective << " vs " << reference.objective;
  ASSERT_EQ(generated.values.size(), static_cast<std::size_t>(model.num_columns()));
  EXPECT_LE(model.MaxViolation(generated.values), kFeasibilityTolerance);
  EXPECT_LE(RelativeGap(model.Objective(generated.values), reference.objective),
            kObjectiveTolerance);
  // The returned duals certify optimality for every column, left-out ones included.
  ASSERT_EQ(generated.row_duals.size(), static_cast<std::size_t>(model.num_rows()));
  ASSERT_EQ(generated.reduced_costs.size(), static_cast<std::size_t>(model.num_columns()));
  EXPECT_LE(WorstColumnDualViolation(model, generated), 1e-6);
}

TEST(ColumnGenerationTest, InnerSolversReportReducedCostsAsObjectiveMinusDualActivity) {
  // The wrapper prices with d_j = c_j − Σ_i y_i a_ij in the model's own objective: the
  // convention Clp and GLPK use in both senses, checked here rather than assumed.
  std::mt19937 rng(11);
  for (const std::shared_ptr<Solver>& solver :
       {std::shared_ptr<Solver>(MakeClpSolver()), std::shared_ptr<Solver>(MakeGlpkSolver())}) {
    SCOPED_TRACE(std::string(solver->name()));
    int checked = 0;
    for (int trial = 0; trial < 40; ++trial) {
      const Model model = RandomModel(rng, {});
      const auto solution = solver->Solve(model);
      ASSERT_TRUE(solution.ok()) << solution.status().ToString();
      if (solution->outcome != Outcome::kOptimal) continue;
      const std::vector<double> activity = DualActivity(model, solution->row_duals);
      for (std::size_t j = 0; j < activity.size(); ++j) {
        EXPECT_NEAR(solution->reduced_costs[j], model.columns()[j].objective - activity[j], 1e-7);
      }
      EXPECT_LE(WorstColumnDualViolation(model, *solution), 1e-6);
      ++checked;
    }
    EXPECT_GE(checked, 20);
  }
}

TEST(ColumnGenerationTest, MatchesClpAndGlpkOnRandomModels) {
  std::mt19937 rng(2024);
  const auto clp = std::shared_ptr<Solver>(MakeClpSolver());
  const auto glpk = MakeGlpkSolver();
  const auto generation = MakeColumnGenerationSolver(clp, {.min_batch = 2, .batch_per_row = 0.0});
  EXPECT_EQ(generation->name(), "clp+column-generation");
  int optimal = 0;
  int lazy_used = 0;
  int lazy_unused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const RandomModelShape shape{.columns = 10 + trial % 50, .rows = 4 + trial % 17};
    const Model model = RandomModel(rng, shape);
    const auto reference = clp->Solve(model);
    const auto second = glpk->Solve(model);
    const auto generated = generation->Solve(model);
    ASSERT_TRUE(reference.ok() && second.ok() && generated.ok());
    ASSERT_EQ(OutcomeName(second->outcome), std::string(OutcomeName(reference->outcome)));
    if (reference->outcome == Outcome::kOptimal) {
      EXPECT_LE(RelativeGap(second->objective, reference->objective), kObjectiveTolerance);
    }
    ExpectSameAnswer(model, *generated, *reference);
    if (generated->outcome != Outcome::kOptimal) continue;
    ++optimal;
    for (std::size_t j = 0; j < model.columns().size(); ++j) {
      if (!model.columns()[j].lazy) continue;
      (std::abs(generated->values[j]) > 1e-9 ? lazy_used : lazy_unused) += 1;
    }
  }
  // The generator covers what it is meant to.
  EXPECT_EQ(optimal, 300);
  EXPECT_GE(lazy_used, 300);
  EXPECT_GE(lazy_unused, 300);
}

// Columns that only an oracle knows: a random model's lazy columns whose bounds start at 0 are
// taken out of it and priced by brute force over their entries; the session over the rest
// must reach the whole model's optimum (Clp), a phase one included where the rest alone is
// infeasible.
class ListOracle final : public ColumnOracle {
 public:
  ListOracle(const Model& whole, std::vector<int> hidden) : whole_(whole), hidden_(std::move(hidden)) {
    entries_.resize(hidden_.size());
    for (int i = 0; i < whole.num_rows(); ++i) {
      for (int k = whole.row_start()[static_cast<std::size_t>(i)];
           k < whole.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
        const int column = whole.entry_column()[static_cast<std::size_t>(k)];
        const auto at = std::find(hidden_.begin(), hidden_.end(), column);
        if (at == hidden_.end()) continue;
        entries_[static_cast<std::size_t>(at - hidden_.begin())].emplace_back(
            i, whole.entry_value()[static_cast<std::size_t>(k)]);
      }
    }
    added_.assign(hidden_.size(), false);
  }
  void Price(std::span<const double> y, bool phase1, std::size_t max_columns,
             ColumnBatch& batch) override {
    pending_.clear();
    const double direction = whole_.sense() == Sense::kMaximize ? 1.0 : -1.0;
    for (std::size_t h = 0; h < hidden_.size() && pending_.size() < max_columns; ++h) {
      if (added_[h]) continue;
      const Column& c = whole_.columns()[static_cast<std::size_t>(hidden_[h])];
      double reduced = phase1 ? 0.0 : c.objective;
      for (const auto& [row, value] : entries_[h]) reduced -= y[static_cast<std::size_t>(row)] * value;
      if (direction * reduced <= 1e-9) continue;
      Offer(batch, h);
    }
  }
  void Added(int first_column) override {
    for (std::size_t s = 0; s < pending_.size(); ++s) {
      added_[pending_[s]] = true;
      column_of_.emplace_back(hidden_[pending_[s]], first_column + static_cast<int>(s));
    }
    pending_.clear();
  }
  // Seed() offers these hidden columns (whole model's indices), in this order.
  void SeedWith(std::vector<int> columns) { seed_ = std::move(columns); }
  void Seed(ColumnBatch& batch) override {
    pending_.clear();
    for (const int column : seed_) {
      const auto h = static_cast<std::size_t>(std::find(hidden_.begin(), hidden_.end(), column) -
                                              hidden_.begin());
      Offer(batch, h);
    }
  }
  // (whole model's column, session's column) of every column added.
  const std::vector<std::pair<int, int>>& column_of() const { return column_of_; }

 private:
  // Adds hidden column h (its bounds, objective and entries) to the batch, pending until Added().
  void Offer(ColumnBatch& batch, std::size_t h) {
    const Column& c = whole_.columns()[static_cast<std::size_t>(hidden_[h])];
    std::vector<int> rows;
    std::vector<double> values;
    for (const auto& [row, value] : entries_[h]) {
      rows.push_back(row);
      values.push_back(value);
    }
    batch.Add(c.lower, c.upper, c.objective, rows, values);
    pending_.push_back(h);
  }
  const Model& whole_;
  std::vector<int> hidden_;
  std::vector<std::vector<std::pair<int, double>>> entries_;
  std::vector<bool> added_;
  std::vector<std::size_t> pending_;
  std::vector<std::pair<int, int>> column_of_;
  std::vector<int> seed_;
};

// A model without its lazy columns whose bounds start at 0 (`hidden`, for a ListOracle);
// kept_index: each whole column's index in `kept`, -1 when hidden.
struct HiddenColumns {
  Model kept;
  std::vector<int> hidden;
  std::vector<int> kept_index;
};

HiddenColumns HideLazyColumns(const Model& whole) {
  HiddenColumns split{Model(whole.sense()), {},
                      std::vector<int>(static_cast<std::size_t>(whole.num_columns()), -1)};
  for (int j = 0; j < whole.num_columns(); ++j) {
    const Column& c = whole.columns()[static_cast<std::size_t>(j)];
    if (c.lazy && c.lower == 0.0 && c.upper > 0.0) {
      split.hidden.push_back(j);
    } else {
      split.kept_index[static_cast<std::size_t>(j)] = split.kept.AddColumn(c.lower, c.upper, c.objective);
    }
  }
  for (int i = 0; i < whole.num_rows(); ++i) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (int k = whole.row_start()[static_cast<std::size_t>(i)];
         k < whole.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
      const int index =
          split.kept_index[static_cast<std::size_t>(whole.entry_column()[static_cast<std::size_t>(k)])];
      if (index < 0) continue;
      cols.push_back(index);
      coefs.push_back(whole.entry_value()[static_cast<std::size_t>(k)]);
    }
    split.kept.AddRow(whole.row_lower()[static_cast<std::size_t>(i)],
                      whole.row_upper()[static_cast<std::size_t>(i)], cols, coefs);
  }
  return split;
}

TEST(ColumnGenerationTest, OracleColumnsReachTheWholeModelsOptimum) {
  std::mt19937 rng(4242);
  const auto clp = std::shared_ptr<Solver>(MakeClpSolver());
  int optimal = 0;
  int oracle_used = 0;
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Model whole = RandomModel(rng, {.columns = 10 + trial % 40, .rows = 4 + trial % 13});
    const auto [kept, hidden, kept_index] = HideLazyColumns(whole);
    ListOracle oracle(whole, hidden);
    auto session = LoadWithColumnOracle(*clp, kept, oracle, {}, {.min_batch = 2, .batch_per_row = 0.0});
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    const auto generated = (*session)->Solve();
    const auto reference = clp->Solve(whole);
    ASSERT_TRUE(generated.ok() && reference.ok());
    ASSERT_EQ(OutcomeName(generated->outcome), std::string(OutcomeName(reference->outcome)));
    if (reference->outcome != Outcome::kOptimal) continue;
    ++optimal;
    EXPECT_LE(RelativeGap(generated->objective, reference->objective), kObjectiveTolerance)
        << generated->objective << " vs " << reference->objective;
    // The point, read back into the whole model's columns, is feasible there.
    std::vector<double> values(static_cast<std::size_t>(whole.num_columns()), 0.0);
    for (int j = 0; j < whole.num_columns(); ++j) {
      const int index = kept_index[static_cast<std::size_t>(j)];
      if (index >= 0) values[static_cast<std::size_t>(j)] = generated->values[static_cast<std::size_t>(index)];
    }
    for (const auto& [column, at] : oracle.column_of()) {
      values[static_cast<std::size_t>(column)] = generated->values[static_cast<std::size_t>(at)];
    }
    EXPECT_LE(whole.MaxViolation(values), kFeasibilityTolerance);
    if (!oracle.column_of().empty()) ++oracle_used;
  }
  EXPECT_GE(optimal, 190);
  EXPECT_GE(oracle_used, 150);
}

// Session::SetStartPoint through column generation: the whole model's point goes to the
// inner session over the loaded columns (left-out ones stay out, at 0). From the whole
// optimum (whose lazy columns are then dropped, so it may be infeasible in the restricted LP)
// or from 0, the answer is the fresh solve's.
TEST(ColumnGenerationTest, StartPointsReachTheSameOptimum) {
  std::mt19937 rng(777);
  const auto clp = std::shared_ptr<Solver>(MakeClpSolver());
  const auto generated_solver = MakeColumnGenerationSolver(clp);
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Model model = RandomModel(rng, {.columns = 10 + trial % 40, .rows = 4 + trial % 13});
    const auto reference = clp->Solve(model);
    ASSERT_TRUE(reference.ok());
    std::vector<double> zero(static_cast<std::size_t>(model.num_columns()), 0.0);
    const std::vector<double>* starts[] = {&reference->values, &zero};
    for (const std::vector<double>* start : starts) {
      if (start->empty()) continue;  // (not optimal: no point)
      auto session = generated_solver->Load(model);
      ASSERT_TRUE(session.ok());
      (*session)->SetStartPoint(*start);
      const auto generated = (*session)->Solve();
      ASSERT_TRUE(generated.ok());
      ExpectSameAnswer(model, *generated, *reference);
    }
  }
}

// An oracle's seed columns are loaded with the model, so a start point can give them values
// (finish-time fairness hands its class start's pairs over this way): seeded with the hidden
// columns that are positive in the whole optimum, from that optimum (seeded columns given
// their values) the answer is the whole model's and takes fewer simplex iterations in all
// than from the same point with the seeded columns at 0 (as if their values were dropped).
TEST(ColumnGenerationTest, StartPointsGiveSeededColumnsTheirValues) {
  std::mt19937 rng(9090);
  const auto clp = std::shared_ptr<Solver>(MakeClpSolver());
  long with_values = 0;
  long without_values = 0;
  int seeded = 0;
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Model whole = RandomModel(rng, {.columns = 10 + trial % 40, .rows = 4 + trial % 13});
    const auto reference = clp->Solve(whole);
    ASSERT_TRUE(reference.ok());
    if (reference->outcome != Outcome::kOptimal) continue;
    const auto [kept, hidden, kept_index] = HideLazyColumns(whole);
    std::vector<int> positive;
    for (const int column : hidden) {
      if (reference->values[static_cast<std::size_t>(column)] > 1e-9) positive.push_back(column);
    }
    if (positive.empty()) continue;
    ++seeded;
    for (const bool give_values : {true, false}) {
      ListOracle oracle(whole, hidden);
      oracle.SeedWith(positive);
      auto session = LoadWithColumnOracle(*clp, kept, oracle);
      ASSERT_TRUE(session.ok()) << session.status().ToString();
      // Seeded columns follow the model's: kept.num_columns(), ... in seed order.
      std::vector<double> start(static_cast<std::size_t>(kept.num_columns()) + positive.size(), 0.0);
      for (int j = 0; j < whole.num_columns(); ++j) {
        const int index = kept_index[static_cast<std::size_t>(j)];
        if (index >= 0) start[static_cast<std::size_t>(index)] = reference->values[static_cast<std::size_t>(j)];
      }
      if (give_values) {
        for (std::size_t s = 0; s < positive.size(); ++s) {
          start[static_cast<std::size_t>(kept.num_columns()) + s] =
              reference->values[static_cast<std::size_t>(positive[s])];
        }
      }
      (*session)->SetStartPoint(start);
      const auto generated = (*session)->Solve();
      ASSERT_TRUE(generated.ok());
      ASSERT_EQ(OutcomeName(generated->outcome), std::string(OutcomeName(Outcome::kOptimal)));
      EXPECT_LE(RelativeGap(generated->objective, reference->objective), kObjectiveTolerance)
          << generated->objective << " vs " << reference->objective;
      (give_values ? with_values : without_values) += generated->iterations;
    }
  }
  EXPECT_GE(seeded, 50);
  EXPECT_LT(with_values, without_values);
}

TEST(ColumnGenerationTest, WorksOverGlpkToo) {
  std::mt19937 rng(7);
  const auto glpk = std::shared_ptr<Solver>(MakeGlpkSolver());
  const auto clp = MakeClpSolver();
  const auto generation = MakeColumnGenerationSolver(glpk, {.min_batch = 3, .batch_per_row = 0.0});
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Model model = RandomModel(rng, {.columns = 25, .rows = 10});
    const auto reference = clp->Solve(model);
    const auto generated = generation->Solve(model);
    ASSERT_TRUE(reference.ok() && generated.ok());
    ExpectSameAnswer(model, *generated, *reference);
  }
}

TEST(ColumnGenerationTest, WarmReSolvesAgreeWithAFreshSolveOfTheChangedModel) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto clp = std::shared_ptr<Solver>(MakeClpSolver());
  const auto generation = MakeColumnGenerationSolver(clp, {.min_batch = 2, .batch_per_row = 0.0});
  int infeasible = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Model model = RandomModel(rng, {.columns = 40, .rows = 12});
    auto session = generation->Load(model);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    for (int change = 0; change < 12; ++change) {
      SCOPED_TRACE("change " + std::to_string(change));
      const auto solved = (*session)->Solve();
      const auto reference = clp->Solve(model);
      ASSERT_TRUE(solved.ok() && reference.ok());
      ExpectSameAnswer(model, *solved, *reference);
      if (solved->outcome == Outcome::kInfeasible) ++infeasible;

      const int kind = change % 5;
      if (kind == 0) {
        // Tighten or loosen a row; sometimes enough to make the model infeasible.
        const int row = static_cast<int>(unit(rng) * model.num_rows());
        const double lower = model.row_lower()[static_cast<std::size_t>(row)];
        const double upper = model.row_upper()[static_cast<std::size_t>(row)];
        const double shift = 6.0 * (unit(rng) - 0.5);
        const double new_lower = std::isfinite(lower) ? lower + shift : lower;
        const double new_upper =
            std::isfinite(upper) ? std::max(upper + shift, new_lower) : upper;
        model.SetRowBounds(row, new_lower, new_upper);
        (*session)->SetRowBounds(row, new_lower, new_upper);
      } else if (kind == 1) {
        // Make a few columns attractive (lazy ones among them) or unattractive.
        for (int k = 0; k < 4; ++k) {
          const int column = static_cast<int>(unit(rng) * model.num_columns());
          const Column& current = model.columns()[static_cast<std::size_t>(column)];
          if (!std::isfinite(current.lower) || !std::isfinite(current.upper)) continue;
          const double c = 6.0 * (unit(rng) - 0.5);
          model.SetObjective(column, c);
          (*session)->SetObjective(column, c);
        }
      } else if (kind == 2) {
        std::vector<int> cols;
        std::vector<double> coefs;
        for (int j = 0; j < model.num_columns(); ++j) {
          if (unit(rng) < 0.4) {
            cols.push_back(j);
            coefs.push_back(unit(rng) < 0.5 ? 1.0 : 2.0 * unit(rng));
          }
        }
        // A capacity-like row: Σ a x <= 2 + (current activity of the loaded solution's scale).
        const double upper = 3.0 + 5.0 * unit(rng);
        model.AddRow(-kInfinity, upper, cols, coefs);
        EXPECT_EQ((*session)->AddRow(-kInfinity, upper, cols, coefs), model.num_rows() - 1);
      } else if (kind == 3) {
        std::vector<int> rows;
        std::vector<double> values;
        for (int i = 0; i < model.num_rows(); ++i) {
          if (unit(rng) < 0.5) {
            rows.push_back(i);
            values.push_back(4.0 * (unit(rng) - 0.5));
          }
        }
        const double upper = 1.0 + 3.0 * unit(rng);
        const double objective = 4.0 * (unit(rng) - 0.5);
        model = WithColumn(model, 0.0, upper, objective, rows, values);
        EXPECT_EQ((*session)->AddColumn(0.0, upper, objective, rows, values),
                  model.num_columns() - 1);
      } else {
        // New bounds, sometimes excluding 0 (a left-out column must then come in).
        const int column = static_cast<int>(unit(rng) * model.num_columns());
        const double lower = unit(rng) < 0.3 ? 0.2 : 0.0;
        const double upper = lower + 3.0 * unit(rng);
        model.SetColumnBounds(column, lower, upper);
        (*session)->SetColumnBounds(column, lower, upper);
      }
    }
  }
  EXPECT_GE(infeasible, 3);
}

// maximise Σ_j x_j over lazy columns with x_j <= 1 and Σ x_j <= capacity, and an eager
// column `need` that must be covered: need <= Σ_j x_j with need fixed at `need_value`.
Model CoverModel(Sense sense, double need_value, double capacity, bool unbounded_column) {
  Model model(sense);
  const double direction = sense == Sense::kMaximize ? 1.0 : -1.0;
  const int need = model.AddColumn(need_value, need_value, 0.0);
  std::vector<int> lazy;
  for (int j = 0; j < 6; ++j) {
    lazy.push_back(model.AddColumn(0.0, unbounded_column && j == 5 ? kInfinity : 1.0,
                                   direction * (j == 5 && unbounded_column ? 1.0 : 0.0)));
    model.SetColumnLazy(lazy.back(), true);
  }
  std::vector<int> cols = lazy;
  std::vector<double> ones(lazy.size(), 1.0);
  // Σ_{j<5} x_j <= capacity (the unbounded column stays out of it).
  cols.pop_back();
  ones.pop_back();
  model.AddRow(-kInfinity, capacity, cols, ones);
  // Σ_{j<5} x_j − need >= 0: infeasible with only the eager column loaded.
  cols.push_back(need);
  ones.push_back(-1.0);
  model.AddRow(0.0, kInfinity, cols, ones);
  if (unbounded_column) {
    const int both[] = {lazy[5], need};
    const double coefficients[] = {1.0, -1.0};
    model.AddRow(-1.0, kInfinity, both, coefficients);
  }
  return model;
}

TEST(ColumnGenerationTest, RestrictedInfeasibilityIsResolvedByPhaseOne) {
  const auto generation = MakeColumnGenerationSolver(MakeClpSolver());
  for (const Sense sense : {Sense::kMaximize, Sense::kMinimize}) {
    const Model model = CoverModel(sense, 2.5, 4.0, false);
    const auto solution = generation->Solve(model);
    ASSERT_TRUE(solution.ok()) << solution.status().ToString();
    ASSERT_EQ(solution->outcome, Outcome::kOptimal);
    EXPECT_LE(model.MaxViolation(solution->values), kFeasibilityTolerance);
  }
}

TEST(ColumnGenerationTest, InfeasibleAndUnboundedWholeModelsAreReportedSo) {
  const auto generation = MakeColumnGenerationSolver(MakeClpSolver());
  for (const Sense sense : {Sense::kMaximize, Sense::kMinimize}) {
    // Five lazy columns of at most 1 cannot cover 5.5.
    const auto infeasible = generation->Solve(CoverModel(sense, 5.5, 10.0, false));
    ASSERT_TRUE(infeasible.ok()) << infeasible.status().ToString();
    EXPECT_EQ(infeasible->outcome, Outcome::kInfeasible);
    // Capacity 2 cannot cover 2.5 either, though every column alone could.
    const auto capped = generation->Solve(CoverModel(sense, 2.5, 2.0, false));
    ASSERT_TRUE(capped.ok());
    EXPECT_EQ(capped->outcome, Outcome::kInfeasible);
    // A lazy column without an upper bound that improves the objective forever.
    const auto unbounded = generation->Solve(CoverModel(sense, 1.0, 4.0, true));
    ASSERT_TRUE(unbounded.ok()) << unbounded.status().ToString();
    EXPECT_EQ(unbounded->outcome, Outcome::kUnbounded);
  }
}

TEST(ColumnGenerationTest, ModelsWithoutLazyColumnsOrWithIntegersPassThrough) {
  Model model(Sense::kMaximize);
  const int x = model.AddColumn(0.0, 3.0, 3.0);
  const int y = model.AddColumn(0.0, kInfinity, 2.0);
  const int cols[] = {x, y};
  const double a1[] = {1.0, 1.0};
  model.AddRow(-kInfinity, 4.0, cols, a1);
  const auto generation = MakeColumnGenerationSolver(MakeClpSolver());
  const auto solution = generation->Solve(model);
  ASSERT_TRUE(solution.ok());
  EXPECT_NEAR(solution->objective, 11.0, 1e-9);

  // Integers go to the inner solver untouched: Clp refuses them, Cbc solves them.
  Model integer(Sense::kMaximize);
  const int a = integer.AddColumn(0.0, 10.0, 1.0, true);
  integer.SetColumnLazy(a, true);
  const int only[] = {a};
  const double two[] = {2.0};
  integer.AddRow(-kInfinity, 3.0, only, two);
  EXPECT_FALSE(generation->Solve(integer).ok());
  const auto cbc = MakeColumnGenerationSolver(MakeCbcSolver())->Solve(integer);
  ASSERT_TRUE(cbc.ok()) << cbc.status().ToString();
  EXPECT_NEAR(cbc->objective, 1.0, 1e-9);
}

TEST(ColumnGenerationTest, CentralSolvesSeeEveryColumn) {
  // Two lazy columns tie; the centre of the optimal face splits them evenly, which needs both
  // in the solve.
  Model model(Sense::kMaximize);
  const int x = model.AddColumn(0.0, 1.0, 1.0);
  const int y = model.AddColumn(0.0, 1.0, 1.0);
  model.SetColumnLazy(x, true);
  model.SetColumnLazy(y, true);
  const int cols[] = {x, y};
  const double ones[] = {1.0, 1.0};
  model.AddRow(-kInfinity, 1.0, cols, ones);
  const auto solution = MakeColumnGenerationSolver(MakeClpSolver())
                            ->Solve(model, SolveOptions{.algorithm = Algorithm::kCentral});
  ASSERT_TRUE(solution.ok());
  ASSERT_EQ(solution->outcome, Outcome::kOptimal);
  EXPECT_NEAR(solution->values[0], 0.5, 1e-4);
  EXPECT_NEAR(solution->values[1], 0.5, 1e-4);
}

}  // namespace
}  // namespace gavel::lp
