// Minimum-cost rectangular assignment (the linear sum assignment problem): given an r × c
// cost matrix, choose min(r, c) cells, no two in one row or one column, with the least total
// cost. Used by AlloX to match waiting jobs to (GPU, position in that GPU's queue) slots.
//
// The algorithm is the shortest augmenting path method of Crouse (2016), "On implementing
// 2D rectangular assignment algorithms", IEEE TAES 52(4), in the form SciPy's
// `linear_sum_assignment` uses (rectangular_lsap.cpp, SciPy >= 1.6): rows are added one at
// a time, columns are scanned in the same order, ties prefer a free column, and a tall
// matrix is solved transposed. Following it step for step makes equal-cost optima come out
// as the original Gavel's do, not merely some optimum. O(r² c) time for r <= c.
//
// Stateless free function; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/core/status.h"

namespace gavel::policy {

// The chosen cells: (rows[k], cols[k]) for k < min(r, c), rows ascending (as SciPy returns
// them).
struct LinearAssignment {
  std::vector<std::size_t> rows;
  std::vector<std::size_t> cols;
};

// Solves min Σ_k cost(rows[k], cols[k]). +infinity marks a forbidden cell. Errors:
// InvalidArgument for a NaN or -infinity entry; FailedPrecondition when the forbidden cells
// leave no complete assignment. An empty matrix (r or c = 0) gives an empty assignment.
Result<LinearAssignment> SolveLinearSumAssignment(const Matrix& cost);

}  // namespace gavel::policy
