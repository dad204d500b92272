// Column generation over any LP solver: a Solver whose sessions behave like sessions over the
// whole model while the inner solver only ever sees the columns that matter.
//
// Lazy columns (lp::Column::lazy) start out of the inner solve, at value 0. Each Solve()
// repeats: solve the restricted LP in the inner session; price every left-out column with the
// row duals (reduced cost d_j = c_j − Σ_i y_i a_ij); add the most improving ones. When no
// left-out column improves the objective by more than the pricing tolerance, the restricted
// optimum is an optimum of the whole LP (its duals are feasible for every column).
//
// When the restricted LP is infeasible, a phase 1 runs by column generation too: elastic
// columns (one per row and direction) are added to the inner session, the objective becomes
// "minimise the total elastic slack", and left-out columns are priced against that; a
// positive minimum proves the whole LP infeasible, a zero one leaves a restricted LP that is
// feasible, and the real objective takes over from that basis. A restricted LP that is
// unbounded makes the whole LP unbounded (its rays are rays of the whole LP).
//
// Requirements on the inner solver: LPs only; optimal solutions carry row duals and reduced
// costs with d_j = c_j − Σ_i y_i a_ij, in the model's own objective (true of Clp and GLPK, and
// checked by column_generation_test). An inner optimum without duals makes the wrapper load
// every left-out column and solve once more (correct, slow).
//
// Pass-through cases (the inner solver's own session, no copy and no overhead): models without
// lazy columns; models with integer columns (the inner solver decides; the wrapper never
// drops integer columns); Algorithm::kCentral, because the centre of the whole LP's optimal
// face needs every column.
//
// Thread-safety: the Solver may be shared between threads if `inner` may; each Session is
// single-threaded. Errors: those of the inner solver, passed on unchanged.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "gavel/lp/solver.h"

namespace gavel::lp {

struct ColumnGenerationOptions {
  // Columns added per pricing round: the most improving ones, at most
  // max(min_batch, rows · batch_per_row). A left-out column counts as improving when it
  // improves the objective per unit by more than 1e-9 · (1 + |c_j| + Σ_i |y_i a_ij|), i.e. by
  // more than rounding noise; a batch takes a column only while one of its rows has had
  // fewer than 2 columns enter in the same round (columns that share all their rows mostly
  // stand in for one another). Partial pricing: a round looks at a tenth of the columns at
  // least, and stops there once it has twice a batch of improving columns; the next round
  // goes on where it stopped. A solve ends only after a round that looked at every column.
  int min_batch = 100;
  double batch_per_row = 0.5;
};

// The wrapped solver; name() is inner's name followed by "+column-generation".
std::unique_ptr<Solver> MakeColumnGenerationSolver(std::shared_ptr<Solver> inner,
                                                   ColumnGenerationOptions options = {});

// Columns of the whole LP that are in no Model at all: too many to list (millions of
// space-sharing pairs), but the best of them can be found from the duals without looking at
// each one (policy/pair_pricing.h). The session asks the oracle after each restricted solve,
// together with its own lazy columns; the solve ends when neither has an improving column.
// Exactness rests on the oracle: when it returns nothing, no column it stands for may have a
// reduced cost that improves the objective by more than the pricing tolerance
// (ColumnGenerationOptions).
class ColumnOracle {
 public:
  virtual ~ColumnOracle() = default;
  // Appends to `batch` at most `max_columns` columns not added before whose reduced cost
  // c_j − Σ_i y_i a_ij (c_j = 0 when `phase1`: the objective is then the total elastic slack)
  // improves the objective, with entries in every row of the session (rows added later
  // included). The batch carries the columns' real objective coefficients, phase 1 or not.
  virtual void Price(std::span<const double> row_duals, bool phase1, std::size_t max_columns,
                     ColumnBatch& batch) = 0;
  // The session's indices of the columns of the last batch (of Price or Seed):
  // first_column, first_column + 1, ...
  virtual void Added(int first_column) = 0;
  // Columns likely to be in an optimum, loaded with the model, before the first solve (a
  // warm start for the restricted LP; none by default): the session's columns
  // model.num_columns(), ... in batch order, which a start point (Session::SetStartPoint)
  // may give values. Same contract as Price's batch otherwise.
  virtual void Seed(ColumnBatch& batch) { (void)batch; }
};

// A column-generation session over `model` (lazy columns as above) and the columns `oracle`
// prices; `oracle` must outlive the session. Simplex only (the oracle needs duals).
Result<std::unique_ptr<Session>> LoadWithColumnOracle(Solver& inner, const Model& model,
                                                      ColumnOracle& oracle,
                                                      const SolveOptions& options = {},
                                                      ColumnGenerationOptions cg = {});

}  // namespace gavel::lp
