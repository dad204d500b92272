#include "gavel/lp/model.h"

#include <algorithm>
#include <cmath>

#include "gavel/core/check.h"

namespace gavel::lp {

int Model::AddColumn(double lower, double upper, double objective, bool integer) {
  GAVEL_CHECK_MSG(lower <= upper, "column lower bound above upper bound");
  columns_.push_back(Column{lower, upper, objective, integer, /*lazy=*/false});
  return num_columns() - 1;
}

int Model::AddRow(double lower, double upper, std::span<const int> columns,
                  std::span<const double> coefficients) {
  GAVEL_CHECK(columns.size() == coefficients.size());
  for (std::size_t k = 0; k < columns.size(); ++k) {
    GAVEL_CHECK_MSG(columns[k] >= 0 && columns[k] < num_columns(), "row names an unknown column");
    entry_column_.push_back(columns[k]);
    entry_value_.push_back(coefficients[k]);
  }
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
  row_start_.push_back(static_cast<int>(entry_column_.size()));
  return num_rows() - 1;
}

void Model::SetObjective(int column, double coefficient) {
  GAVEL_CHECK(column >= 0 && column < num_columns());
  columns_[static_cast<std::size_t>(column)].objective = coefficient;
}

void Model::SetColumnBounds(int column, double lower, double upper) {
  GAVEL_CHECK(column >= 0 && column < num_columns());
  columns_[static_cast<std::size_t>(column)].lower = lower;
  columns_[static_cast<std::size_t>(column)].upper = upper;
}

void Model::SetRowBounds(int row, double lower, double upper) {
  GAVEL_CHECK(row >= 0 && row < num_rows());
  row_lower_[static_cast<std::size_t>(row)] = lower;
  row_upper_[static_cast<std::size_t>(row)] = upper;
}

void Model::SetColumnLazy(int column, bool lazy) {
  GAVEL_CHECK(column >= 0 && column < num_columns());
  columns_[static_cast<std::size_t>(column)].lazy = lazy;
}

void Model::Reserve(int columns, int rows, int entries) {
  columns_.reserve(static_cast<std::size_t>(std::max(columns, 0)));
  row_lower_.reserve(static_cast<std::size_t>(std::max(rows, 0)));
  row_upper_.reserve(static_cast<std::size_t>(std::max(rows, 0)));
  row_start_.reserve(static_cast<std::size_t>(std::max(rows, 0)) + 1);
  entry_column_.reserve(static_cast<std::size_t>(std::max(entries, 0)));
  entry_value_.reserve(static_cast<std::size_t>(std::max(entries, 0)));
}

bool Model::HasLazyColumns() const {
  return std::any_of(columns_.begin(), columns_.end(), [](const Column& c) { return c.lazy; });
}

bool Model::HasIntegers() const {
  return std::any_of(columns_.begin(), columns_.end(), [](const Column& c) { return c.integer; });
}

double Model::Objective(std::span<const double> values) const {
  GAVEL_CHECK(values.size() == columns_.size());
  double sum = 0.0;
  for (std::size_t j = 0; j < columns_.size(); ++j) sum += columns_[j].objective * values[j];
  return sum;
}

double Model::MaxViolation(std::span<const double> values) const {
  GAVEL_CHECK(values.size() == columns_.size());
  double worst = 0.0;
  for (std::size_t j = 0; j < columns_.size(); ++j) {
    worst = std::max({worst, columns_[j].lower - values[j], values[j] - columns_[j].upper});
  }
  for (std::size_t i = 0; i < row_lower_.size(); ++i) {
    double activity = 0.0;
    for (int k = row_start_[i]; k < row_start_[i + 1]; ++k) {
      activity += entry_value_[static_cast<std::size_t>(k)] *
                  values[static_cast<std::size_t>(entry_column_[static_cast<std::size_t>(k)])];
    }
    worst = std::max({worst, row_lower_[i] - activity, activity - row_upper_[i]});
  }
  return worst;
}

}  // namespace gavel::lp
