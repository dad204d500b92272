#include "gavel/policy/assignment.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <utility>

namespace gavel::policy {
namespace {

using Index = std::ptrdiff_t;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Working state of one solve over an nr × nc matrix with nr <= nc, row-major in `cost`.
struct Solver {
  Index nr;
  Index nc;
  const std::vector<double>& cost;
  std::vector<double> u;                    // row duals
  std::vector<double> v;                    // column duals
  std::vector<double> shortest_path_costs;  // per column, in the current search
  std::vector<Index> path;                  // per column: the row it was reached from
  std::vector<Index> col4row;
  std::vector<Index> row4col;
  std::vector<bool> row_scanned;  // SR
  std::vector<bool> col_scanned;  // SC
  std::vector<Index> remaining;

  Solver(Index rows, Index cols, const std::vector<double>& costs)
      : nr(rows),
        nc(cols),
        cost(costs),
        u(static_cast<std::size_t>(rows), 0.0),
        v(static_cast<std::size_t>(cols), 0.0),
        shortest_path_costs(static_cast<std::size_t>(cols)),
        path(static_cast<std::size_t>(cols), -1),
        col4row(static_cast<std::size_t>(rows), -1),
        row4col(static_cast<std::size_t>(cols), -1),
        row_scanned(static_cast<std::size_t>(rows)),
        col_scanned(static_cast<std::size_t>(cols)),
        remaining(static_cast<std::size_t>(cols)) {}

  static std::size_t At(Index i) { return static_cast<std::size_t>(i); }

  // Dijkstra-like search from row `i` for the cheapest path (in reduced costs) to a free
  // column. Returns that column, or -1 when every remaining column is forbidden; sets
  // *min_val to the path's length.
  Index AugmentingPath(Index i, double* min_val) {
    double min_value = 0.0;
    Index num_remaining = nc;
    // Reverse order, so that a constant cost matrix gives the identity assignment (SciPy
    // issue #11602); it also decides which of several equal optima is returned.
    for (Index it = 0; it < nc; ++it) remaining[At(it)] = nc - it - 1;
    std::fill(row_scanned.begin(), row_scanned.end(), false);
    std::fill(col_scanned.begin(), col_scanned.end(), false);
    std::fill(shortest_path_costs.begin(), shortest_path_costs.end(), kInf);

    Index sink = -1;
    while (sink == -1) {
      Index index = -1;
      double lowest = kInf;
      row_scanned[At(i)] = true;
      for (Index it = 0; it < num_remaining; ++it) {
        const Index j = remaining[At(it)];
        const double r = min_value + cost[At(i * nc + j)] - u[At(i)] - v[At(j)];
        if (r < shortest_path_costs[At(j)]) {
          path[At(j)] = i;
          shortest_path_costs[At(j)] = r;
        }
        // Among equally short paths prefer one that ends at a free column.
        if (shortest_path_costs[At(j)] < lowest ||
            (shortest_path_costs[At(j)] == lowest && row4col[At(j)] == -1)) {
          lowest = shortest_path_costs[At(j)];
          index = it;
        }
      }
      min_value = lowest;
      if (min_value == kInf) return -1;
      const Index j = remaining[At(index)];
      if (row4col[At(j)] == -1) {
        sink = j;
      } else {
        i = row4col[At(j)];
      }
      col_scanned[At(j)] = true;
      remaining[At(index)] = remaining[At(--num_remaining)];
    }
    *min_val = min_value;
    return sink;
  }

  // Returns false when some row cannot be assigned.
  bool Run() {
    for (Index cur_row = 0; cur_row < nr; ++cur_row) {
      double min_val = 0.0;
      const Index sink = AugmentingPath(cur_row, &min_val);
      if (sink < 0) return false;

      u[At(cur_row)] += min_val;
      for (Index i = 0; i < nr; ++i) {
        if (row_scanned[At(i)] && i != cur_row) {
          u[At(i)] += min_val - shortest_path_costs[At(col4row[At(i)])];
        }
      }
      for (Index j = 0; j < nc; ++j) {
        if (col_scanned[At(j)]) v[At(j)] -= min_val - shortest_path_costs[At(j)];
      }

      Index j = sink;
      while (true) {
        const Index i = path[At(j)];
        row4col[At(j)] = i;
        std::swap(col4row[At(i)], j);
        if (i == cur_row) break;
      }
    }
    return true;
  }
};

}  // namespace

Result<LinearAssignment> SolveLinearSumAssignment(const Matrix& cost) {
  LinearAssignment result;
  const std::size_t rows = cost.rows();
  const std::size_t cols = cost.cols();
  if (rows == 0 || cols == 0) return result;

  for (const double c : cost.data()) {
    if (std::isnan(c) || c == -kInf) {
      return Status::InvalidArgument("assignment cost matrix holds a NaN or -infinity entry");
    }
  }

  // A tall matrix is solved transposed, so that every row of the solved matrix is assigned.
  const bool transpose = cols < rows;
  const std::size_t nr = transpose ? cols : rows;
  const std::size_t nc = transpose ? rows : cols;
  std::vector<double> costs(nr * nc);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      if (transpose) {
        costs[c * nc + r] = cost(r, c);
      } else {
        costs[r * nc + c] = cost(r, c);
      }
    }
  }

  Solver solver(static_cast<Index>(nr), static_cast<Index>(nc), costs);
  if (!solver.Run()) {
    return Status::FailedPrecondition(
        "assignment cost matrix: the forbidden (infinite) cells leave no complete assignment");
  }

  if (transpose) {
    // Solved rows are original columns: report them ordered by the original row they got.
    std::vector<std::size_t> order(nr);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return solver.col4row[a] < solver.col4row[b]; });
    for (const std::size_t solved_row : order) {
      result.rows.push_back(static_cast<std::size_t>(solver.col4row[solved_row]));
      result.cols.push_back(solved_row);
    }
  } else {
    for (std::size_t r = 0; r < nr; ++r) {
      result.rows.push_back(r);
      result.cols.push_back(static_cast<std::size_t>(solver.col4row[r]));
    }
  }
  return result;
}

}  // namespace gavel::policy
