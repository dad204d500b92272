#include "gavel/policy/assignment.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <tuple>
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

// SolveQueueAssignment's state. Slot class u = (type, position) holds at most
// gpus[type] rows; edge[u][v] is the cheapest change of cost for moving one of u's rows to v
// (+inf when u is empty) and via[u][v] that row; potential[] keeps the reduced edge costs
// edge[u][v] + potential[u] − potential[v] non-negative (they are the last search's
// distances).
class QueueSolver {
 public:
  QueueSolver(const Matrix& processing, std::span<const std::size_t> gpus)
      : processing_(processing),
        gpus_(gpus),
        class_of_row_(processing.rows(), kNone),
        slot_of_row_(processing.rows(), 0),
        top_class_(gpus.size(), kNone) {
    for (std::size_t t = 0; t < gpus_.size(); ++t) {
      if (gpus_[t] > 0) Open(t, 0);
    }
  }

  void Run() {
    for (std::size_t r = 0; r < processing_.rows(); ++r) Place(r);
  }

  std::vector<QueuePlacement> Placements() const {
    std::vector<QueuePlacement> out(processing_.rows());
    for (std::size_t r = 0; r < out.size(); ++r) {
      const SlotClass& c = classes_[class_of_row_[r]];
      out[r] = QueuePlacement{c.type, c.position};
    }
    return out;
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  struct SlotClass {
    std::size_t type = 0;
    std::size_t position = 0;
    std::vector<std::size_t> rows;
  };

  double Cost(std::size_t row, std::size_t cls) const {
    const SlotClass& c = classes_[cls];
    return static_cast<double>(c.position + 1) * processing_(row, c.type);
  }
  bool Full(std::size_t cls) const {
    return classes_[cls].rows.size() >= gpus_[classes_[cls].type];
  }

  // The cheapest move of one of u's rows to v.
  std::pair<double, std::size_t> CheapestMove(std::size_t u, std::size_t v) const {
    double best = kInf;
    std::size_t row = kNone;
    if (u == v) return {best, row};
    for (const std::size_t a : classes_[u].rows) {
      const double delta = Cost(a, v) - Cost(a, u);
      if (delta < best) {
        best = delta;
        row = a;
      }
    }
    return {best, row};
  }

  void RecomputeEdgesFrom(std::size_t u) {
    for (std::size_t v = 0; v < classes_.size(); ++v) {
      std::tie(edge_[u][v], via_[u][v]) = CheapestMove(u, v);
    }
  }

  // Opens the empty class (type, position). Its potential is the largest that keeps every
  // edge into it non-negative in reduced cost (it has no edges out).
  void Open(std::size_t type, std::size_t position) {
    const std::size_t v = classes_.size();
    classes_.push_back(SlotClass{type, position, {}});
    double potential = kInf;
    for (std::size_t u = 0; u < v; ++u) {
      const auto [delta, row] = CheapestMove(u, v);
      edge_[u].push_back(delta);
      via_[u].push_back(row);
      if (delta < kInf) potential = std::min(potential, potential_[u] + delta);
    }
    edge_.emplace_back(v + 1, kInf);
    via_.emplace_back(v + 1, kNone);
    potential_.push_back(potential < kInf ? potential : 0.0);
    top_class_[type] = v;
  }

  void Add(std::size_t row, std::size_t cls) {
    class_of_row_[row] = cls;
    slot_of_row_[row] = classes_[cls].rows.size();
    classes_[cls].rows.push_back(row);
  }
  void Remove(std::size_t row) {
    std::vector<std::size_t>& rows = classes_[class_of_row_[row]].rows;
    const std::size_t slot = slot_of_row_[row];
    rows[slot] = rows.back();
    slot_of_row_[rows[slot]] = slot;
    rows.pop_back();
  }

  // Adds row r by the shortest augmenting path: r enters some class; if that class is full
  // one of its rows moves on, and so on until a class with room.
  void Place(std::size_t r) {
    const std::size_t k = classes_.size();
    // Dijkstra (dense: K is small) on reduced costs, from r's direct edges.
    std::vector<double> label(k);
    std::vector<std::size_t> pred(k, kNone);
    std::vector<bool> done(k, false);
    for (std::size_t v = 0; v < k; ++v) label[v] = Cost(r, v) - potential_[v];
    for (std::size_t step = 0; step < k; ++step) {
      std::size_t u = kNone;
      for (std::size_t v = 0; v < k; ++v) {
        if (!done[v] && (u == kNone || label[v] < label[u])) u = v;
      }
      done[u] = true;
      for (std::size_t v = 0; v < k; ++v) {
        if (done[v] || edge_[u][v] == kInf) continue;
        const double reduced = std::max(0.0, edge_[u][v] + potential_[u] - potential_[v]);
        if (label[u] + reduced < label[v]) {
          label[v] = label[u] + reduced;
          pred[v] = u;
        }
      }
    }
    std::size_t sink = kNone;
    for (std::size_t v = 0; v < k; ++v) {
      label[v] += potential_[v];  // the distance from r
      if (!Full(v) && (sink == kNone || label[v] < label[sink])) sink = v;
    }
    potential_ = label;

    // Augment: along the path each class passes one row on to the next.
    std::vector<std::size_t> path = {sink};
    while (pred[path.back()] != kNone) path.push_back(pred[path.back()]);
    std::vector<std::size_t> moved(path.size(), kNone);
    for (std::size_t e = 0; e + 1 < path.size(); ++e) moved[e] = via_[path[e + 1]][path[e]];
    for (std::size_t e = 0; e + 1 < path.size(); ++e) Remove(moved[e]);
    for (std::size_t e = 0; e + 1 < path.size(); ++e) Add(moved[e], path[e]);
    Add(r, path.back());
    for (const std::size_t u : path) RecomputeEdgesFrom(u);
    // Keep one empty class open above each type's used ones.
    for (const std::size_t u : path) {
      const std::size_t t = classes_[u].type;
      if (top_class_[t] == u) Open(t, classes_[u].position + 1);
    }
  }

  const Matrix& processing_;
  std::span<const std::size_t> gpus_;
  std::vector<SlotClass> classes_;
  std::vector<std::vector<double>> edge_;
  std::vector<std::vector<std::size_t>> via_;
  std::vector<double> potential_;
  std::vector<std::size_t> class_of_row_;
  std::vector<std::size_t> slot_of_row_;  // index in its class's rows
  std::vector<std::size_t> top_class_;    // per type: its open empty class
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


Result<std::vector<QueuePlacement>> SolveQueueAssignment(const Matrix& processing,
                                                         std::span<const std::size_t> gpus) {
  if (gpus.size() != processing.cols()) {
    return Status::InvalidArgument("queue assignment: " + std::to_string(gpus.size()) +
                                   " GPU counts for " + std::to_string(processing.cols()) +
                                   " types");
  }
  for (const double p : processing.data()) {
    if (!std::isfinite(p) || p < 0.0) {
      return Status::InvalidArgument(
          "queue assignment: processing times must be finite and >= 0");
    }
  }
  if (processing.rows() == 0) return std::vector<QueuePlacement>{};
  if (std::all_of(gpus.begin(), gpus.end(), [](std::size_t g) { return g == 0; })) {
    return Status::FailedPrecondition("queue assignment: rows to place but no GPU");
  }
  QueueSolver solver(processing, gpus);
  solver.Run();
  return solver.Placements();
}

}  // namespace gavel::policy
