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

#include <memory>

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

}  // namespace gavel::lp
