// A solver-neutral linear (or mixed-integer) program:
//
//   optimise  Σ_j c_j x_j
//   s.t.      row_lower_i <= Σ_j a_ij x_j <= row_upper_i
//             column_lower_j <= x_j <= column_upper_j,   x_j integer where marked
//
// Policies build a Model and hand it to a Solver (lp/solver.h); only adapter files include a
// backend's headers. Infinite bounds are ±kInfinity. Value type; thread-compatible.
//
// A column may be marked lazy: a hint that it is probably 0 at an optimum, so a solver may
// leave it out of the solve until pricing says it can improve the objective (the column
// generation wrapper in lp/column_generation.h). A left-out column's value is 0, so only a
// column whose bounds contain 0 can be left out. Solvers that ignore the hint solve the same
// problem; the flag never changes the optimal value.
#pragma once

#include <limits>
#include <span>
#include <vector>

namespace gavel::lp {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

enum class Sense { kMinimize, kMaximize };

struct Column {
  double lower = 0.0;
  double upper = kInfinity;
  double objective = 0.0;
  bool integer = false;
  // May be left out of the solve until it can improve the objective (see above).
  bool lazy = false;
};

class Model {
 public:
  explicit Model(Sense sense = Sense::kMaximize) : sense_(sense) {}

  // Returns the new column's index.
  int AddColumn(double lower, double upper, double objective = 0.0, bool integer = false);
  // Adds lower <= Σ coefficients[k] · x[columns[k]] <= upper; returns the row's index.
  // Column indices must exist; duplicates within one row are summed by the solvers.
  int AddRow(double lower, double upper, std::span<const int> columns,
             std::span<const double> coefficients);

  void SetSense(Sense sense) { sense_ = sense; }
  void SetObjective(int column, double coefficient);
  void SetColumnBounds(int column, double lower, double upper);
  void SetRowBounds(int row, double lower, double upper);
  void SetColumnLazy(int column, bool lazy);
  // Capacity hints for models built in one go (no effect on the model's content).
  void Reserve(int columns, int rows, int entries);

  Sense sense() const { return sense_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_rows() const { return static_cast<int>(row_lower_.size()); }
  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<double>& row_lower() const { return row_lower_; }
  const std::vector<double>& row_upper() const { return row_upper_; }
  // Compressed sparse rows: row i's entries are [row_start[i], row_start[i+1]).
  const std::vector<int>& row_start() const { return row_start_; }
  const std::vector<int>& entry_column() const { return entry_column_; }
  const std::vector<double>& entry_value() const { return entry_value_; }
  bool HasIntegers() const;
  bool HasLazyColumns() const;

  // Σ c_j x_j for the given column values.
  double Objective(std::span<const double> values) const;
  // The largest violation of any row or column bound by `values` (0 when feasible).
  double MaxViolation(std::span<const double> values) const;

 private:
  Sense sense_;
  std::vector<Column> columns_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<int> row_start_{0};
  std::vector<int> entry_column_;
  std::vector<double> entry_value_;
};

}  // namespace gavel::lp
