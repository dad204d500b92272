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
#include <span>
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

// AlloX's matching with the identical GPUs of a type grouped together. Row r placed at
// position k (0 = last in line, so it delays k rows behind it) on some GPU of type t costs
// (k + 1) · processing(r, t); at most gpus[t] rows share a (t, k). Minimises the total cost
// over every row: the same optimum as SolveLinearSumAssignment on the dense rows × (rows · G)
// matrix with one column per (GPU, position) (G = Σ_t gpus[t]; a per-row constant such as
// AlloX's wait so far changes no optimum, as every row is placed), without building it.
//
// Method (docs/policies.md, "AlloX"): a transportation problem from rows to slot classes
// (t, k) of capacity gpus[t], solved by successive shortest paths with rows added one at a
// time; the residual graph is kept over the slot classes only (moving a row from class u to
// class v costs its cost difference; the cheapest such row per (u, v) is the edge), with
// Dijkstra on reduced costs. Classes open lazily: each type keeps exactly one empty class
// open above its used ones, which provably suffices when processing times are >= 0. Time
// O(rows · (K² + K · Σ|rows moved per class|)) with K open classes (K ≈ Σ_t rows_t / gpus[t]);
// memory O(rows · types + K²).
//
// A placement per row. Errors: InvalidArgument for a NaN, negative or infinite processing
// time or a size mismatch; FailedPrecondition when rows > 0 and there is no GPU.
struct QueuePlacement {
  std::size_t type = 0;
  std::size_t position = 0;
};
Result<std::vector<QueuePlacement>> SolveQueueAssignment(const Matrix& processing,
                                                         std::span<const std::size_t> gpus);

}  // namespace gavel::policy
