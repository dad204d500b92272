#include "gavel/lp/solver.h"

#include <map>

#include "gavel/core/check.h"

namespace gavel::lp {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOptimal: return "optimal";
    case Outcome::kInfeasible: return "infeasible";
    case Outcome::kUnbounded: return "unbounded";
    case Outcome::kLimitReached: return "limit_reached";
  }
  return "unknown";
}

Result<Solution> Solver::Solve(const Model& model, const SolveOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(auto session, Load(model, options));
  return session->Solve();
}

void ColumnBatch::Add(double lo, double hi, double obj, std::span<const int> entry_rows,
                      std::span<const double> entry_coefficients) {
  lower.push_back(lo);
  upper.push_back(hi);
  objective.push_back(obj);
  rows.insert(rows.end(), entry_rows.begin(), entry_rows.end());
  coefficients.insert(coefficients.end(), entry_coefficients.begin(), entry_coefficients.end());
  starts.push_back(static_cast<int>(rows.size()));
}

void ColumnBatch::AddEntry(int row, double coefficient) {
  GAVEL_CHECK(size() > 0);
  rows.push_back(row);
  coefficients.push_back(coefficient);
  starts.back() = static_cast<int>(rows.size());
}

int Session::AddColumns(const ColumnBatch& batch) {
  GAVEL_CHECK(batch.size() > 0);
  int first = -1;
  for (std::size_t c = 0; c < batch.size(); ++c) {
    const auto begin = static_cast<std::size_t>(batch.starts[c]);
    const auto count = static_cast<std::size_t>(batch.starts[c + 1]) - begin;
    const int added = AddColumn(batch.lower[c], batch.upper[c], batch.objective[c],
                                std::span<const int>(batch.rows).subspan(begin, count),
                                std::span<const double>(batch.coefficients).subspan(begin, count));
    if (c == 0) first = added;
  }
  return first;
}

int RebuildingSession::AddColumn(double lower, double upper, double objective,
                                 std::span<const int> rows, std::span<const double> coefficients) {
  // The model stores rows compressed, so a column with entries in existing rows means
  // rebuilding it; backends using this session re-solve from scratch anyway.
  std::map<int, std::vector<std::pair<int, double>>> extra;
  Model rebuilt(model_.sense());
  for (const Column& c : model_.columns()) rebuilt.AddColumn(c.lower, c.upper, c.objective, c.integer);
  const int added = rebuilt.AddColumn(lower, upper, objective);
  for (std::size_t k = 0; k < rows.size(); ++k) extra[rows[k]].push_back({added, coefficients[k]});
  for (int i = 0; i < model_.num_rows(); ++i) {
    std::vector<int> cols;
    std::vector<double> vals;
    for (int k = model_.row_start()[static_cast<std::size_t>(i)];
         k < model_.row_start()[static_cast<std::size_t>(i) + 1]; ++k) {
      cols.push_back(model_.entry_column()[static_cast<std::size_t>(k)]);
      vals.push_back(model_.entry_value()[static_cast<std::size_t>(k)]);
    }
    for (const auto& [col, val] : extra[i]) {
      cols.push_back(col);
      vals.push_back(val);
    }
    rebuilt.AddRow(model_.row_lower()[static_cast<std::size_t>(i)],
                   model_.row_upper()[static_cast<std::size_t>(i)], cols, vals);
  }
  model_ = std::move(rebuilt);
  return added;
}

}  // namespace gavel::lp
