// Adapter onto COIN-OR Clp. The only file (with cbc_solver.cc and coin_bounds.h) that includes
// COIN headers.
#include <ClpSimplex.hpp>
#include <ClpSolve.hpp>
#include <CoinPackedMatrix.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <exception>
#include <string>
#include <vector>

#include "gavel/core/check.h"
#include "gavel/lp/coin_bounds.h"
#include "gavel/lp/solver.h"

namespace gavel::lp {
namespace {

// A ClpSimplex as freshly constructed. Construction builds Clp's message tables from their
// text, which costs more than loading and solving the small master problems that the
// allocation policies solve hundreds of thousands of times in a long simulation; copying a
// never-used empty model copies the tables in their compact form and every setting, so a
// copy starts exactly where a new one would. One per thread: nothing is shared.
const ClpSimplex& PristineSimplex() {
  thread_local const ClpSimplex pristine;
  return pristine;
}

class ClpSession final : public Session {
 public:
  ClpSession(const Model& model, const SolveOptions& options)
      : simplex_(PristineSimplex()),
        sense_(model.sense()),
        central_(options.algorithm == Algorithm::kCentral) {
    simplex_.setLogLevel(options.verbose ? 1 : 0);
    if (options.time_limit_seconds > 0) simplex_.setMaximumSeconds(options.time_limit_seconds);
    const int n = model.num_columns();
    const int m = model.num_rows();
    std::vector<double> col_lo(static_cast<std::size_t>(n)), col_up(col_lo.size()),
        obj(col_lo.size());
    for (int j = 0; j < n; ++j) {
      const Column& c = model.columns()[static_cast<std::size_t>(j)];
      col_lo[static_cast<std::size_t>(j)] = ToCoin(c.lower);
      col_up[static_cast<std::size_t>(j)] = ToCoin(c.upper);
      obj[static_cast<std::size_t>(j)] = c.objective;
    }
    std::vector<double> row_lo(static_cast<std::size_t>(m)), row_up(row_lo.size());
    for (int i = 0; i < m; ++i) {
      row_lo[static_cast<std::size_t>(i)] = ToCoin(model.row_lower()[static_cast<std::size_t>(i)]);
      row_up[static_cast<std::size_t>(i)] = ToCoin(model.row_upper()[static_cast<std::size_t>(i)]);
    }
    std::vector<CoinBigIndex> starts(model.row_start().begin(), model.row_start().end());
    std::vector<int> lengths(static_cast<std::size_t>(m));
    for (int i = 0; i < m; ++i) {
      lengths[static_cast<std::size_t>(i)] =
          model.row_start()[static_cast<std::size_t>(i) + 1] - model.row_start()[static_cast<std::size_t>(i)];
    }
    CoinPackedMatrix matrix(/*colordered=*/false, n, m,
                            static_cast<CoinBigIndex>(model.entry_value().size()),
                            model.entry_value().data(), model.entry_column().data(),
                            starts.data(), lengths.data());
    simplex_.loadProblem(matrix, col_lo.data(), col_up.data(), obj.data(), row_lo.data(),
                         row_up.data());
    simplex_.setOptimizationDirection(sense_ == Sense::kMaximize ? -1.0 : 1.0);
  }

  Result<Solution> Solve() override {
    try {
      if (!solved_once_ && !start_.empty()) {
        CrashFrom(start_);
        simplex_.primal(1);  // a values pass from the point, then primal simplex
      } else if (!solved_once_) {
        simplex_.initialSolve();
      } else if (objective_changed_) {
        simplex_.primal(1);  // the old basis stays primal feasible: primal simplex from it
      } else {
        simplex_.dual(0);  // bounds changed: the old basis stays dual feasible
      }
      // A warm start can stall on a degenerate basis; a clean solve settles it.
      if (simplex_.status() == 4 || simplex_.isAbandoned()) {
        simplex_.allSlackBasis(true);
        simplex_.initialSolve();
      }
    } catch (const std::exception& e) {
      return Status::Internal(std::string("Clp failed: ") + e.what());
    } catch (...) {
      return Status::Internal("Clp failed with an unknown exception");
    }
    solved_once_ = true;
    objective_changed_ = false;
    start_.clear();

    Solution solution;
    solution.iterations = simplex_.numberIterations();
    switch (simplex_.status()) {
      case 0: solution.outcome = Outcome::kOptimal; break;
      case 1: solution.outcome = Outcome::kInfeasible; break;
      case 2: solution.outcome = Outcome::kUnbounded; break;
      case 3:
      case 5: solution.outcome = Outcome::kLimitReached; break;
      default:
        return Status::Internal("Clp stopped with errors (status " +
                                std::to_string(simplex_.status()) + ")");
    }
    if (solution.outcome != Outcome::kOptimal && solution.outcome != Outcome::kLimitReached) {
      return solution;
    }
    const int n = simplex_.numberColumns();
    const int m = simplex_.numberRows();
    const double* x = simplex_.primalColumnSolution();
    const double* duals = simplex_.dualRowSolution();
    const double* reduced = simplex_.dualColumnSolution();
    solution.values.assign(x, x + n);
    solution.row_duals.assign(duals, duals + m);
    solution.reduced_costs.assign(reduced, reduced + n);
    solution.objective = ObjectiveOf(solution.values);
    if (central_ && solution.outcome == Outcome::kOptimal) {
      if (auto centre = CentralOptimum(solution.objective)) solution.values = std::move(*centre);
    }
    return solution;
  }

  void SetObjective(int column, double c) override {
    simplex_.setObjectiveCoefficient(column, c);
    objective_changed_ = true;
  }
  void SetColumnBounds(int column, double lo, double hi) override {
    simplex_.setColumnBounds(column, ToCoin(lo), ToCoin(hi));
  }
  void SetRowBounds(int row, double lo, double hi) override {
    simplex_.setRowBounds(row, ToCoin(lo), ToCoin(hi));
  }
  int AddColumn(double lower, double upper, double objective, std::span<const int> rows,
                std::span<const double> coefficients) override {
    simplex_.addColumn(static_cast<int>(rows.size()), rows.data(), coefficients.data(),
                       ToCoin(lower), ToCoin(upper), objective);
    objective_changed_ = true;
    return simplex_.numberColumns() - 1;
  }
  int AddColumns(const ColumnBatch& batch) override {
    GAVEL_CHECK(batch.size() > 0);
    const int first = simplex_.numberColumns();
    std::vector<double> lower(batch.size());
    std::vector<double> upper(batch.size());
    for (std::size_t c = 0; c < batch.size(); ++c) {
      lower[c] = ToCoin(batch.lower[c]);
      upper[c] = ToCoin(batch.upper[c]);
    }
    const std::vector<CoinBigIndex> starts(batch.starts.begin(), batch.starts.end());
    simplex_.addColumns(static_cast<int>(batch.size()), lower.data(), upper.data(),
                        batch.objective.data(), starts.data(), batch.rows.data(),
                        batch.coefficients.data());
    objective_changed_ = true;
    return first;
  }
  void SetStartPoint(std::span<const double> values) override {
    if (!solved_once_) start_.assign(values.begin(), values.end());
  }
  int AddRow(double lower, double upper, std::span<const int> columns,
             std::span<const double> coefficients) override {
    simplex_.addRow(static_cast<int>(columns.size()), columns.data(), coefficients.data(),
                    ToCoin(lower), ToCoin(upper));
    return simplex_.numberRows() - 1;
  }

 private:
  double ObjectiveOf(const std::vector<double>& values) const {
    const double* obj = simplex_.objective();
    double value = 0.0;
    for (std::size_t j = 0; j < values.size(); ++j) value += obj[j] * values[j];
    return value;
  }

  // Loads `point` (clipped to the bounds; columns past its end at 0) as the primal solution
  // with a basis crashed from it: columns strictly between their bounds and rows strictly
  // inside theirs are basic, the others at the bound they sit on. The basis need not have
  // one basic per row: Clp's values pass makes surplus basics superbasic and fills a short
  // (or singular) basis with slacks.
  void CrashFrom(const std::vector<double>& point) {
    const int n = simplex_.numberColumns();
    const int m = simplex_.numberRows();
    const double* col_lo = simplex_.getColLower();
    const double* col_up = simplex_.getColUpper();
    double* x = simplex_.primalColumnSolution();
    const auto near = [](double value, double bound) {
      return std::abs(value - bound) <= kStartTolerance * (1.0 + std::abs(bound));
    };
    for (int j = 0; j < n; ++j) {
      double v = j < static_cast<int>(point.size()) ? point[static_cast<std::size_t>(j)] : 0.0;
      v = std::clamp(v, col_lo[j], col_up[j]);
      if (col_lo[j] == col_up[j]) {
        simplex_.setColumnStatus(j, ClpSimplex::isFixed);
        v = col_lo[j];
      } else if (near(v, col_lo[j])) {
        simplex_.setColumnStatus(j, ClpSimplex::atLowerBound);
        v = col_lo[j];
      } else if (near(v, col_up[j])) {
        simplex_.setColumnStatus(j, ClpSimplex::atUpperBound);
        v = col_up[j];
      } else {
        simplex_.setColumnStatus(j, ClpSimplex::basic);
      }
      x[j] = v;
    }
    double* activity = simplex_.primalRowSolution();
    std::fill(activity, activity + m, 0.0);
    simplex_.matrix()->times(x, activity);
    const double* row_lo = simplex_.getRowLower();
    const double* row_up = simplex_.getRowUpper();
    for (int i = 0; i < m; ++i) {
      if (near(activity[i], row_lo[i])) {
        simplex_.setRowStatus(i, ClpSimplex::atLowerBound);
      } else if (near(activity[i], row_up[i])) {
        simplex_.setRowStatus(i, ClpSimplex::atUpperBound);
      } else {
        simplex_.setRowStatus(i, ClpSimplex::basic);
      }
    }
  }

  // A point closer than this (relative) to a bound sits on it (CrashFrom).
  static constexpr double kStartTolerance = 1e-9;

  // A point near the analytic centre of the optimal face: barrier without crossover on a copy
  // of the model. Simplex has already decided the outcome and the optimal value, because the
  // barrier alone can call an infeasible model optimal. Rows that constrain nothing (free, or
  // without entries) are dropped from the copy: Clp's barrier aborts on them. Returns nothing
  // (keep the vertex) unless the barrier's point is feasible and optimal within 1e-7.
  std::optional<std::vector<double>> CentralOptimum(double optimal_value) const {
    ClpSimplex copy(simplex_);
    copy.setLogLevel(0);
    std::vector<int> idle_rows;
    std::vector<int> entries(static_cast<std::size_t>(copy.numberRows()), 0);
    const CoinPackedMatrix* matrix = copy.matrix();
    if (matrix == nullptr) return std::nullopt;
    const int* row_index = matrix->getIndices();
    const double* value = matrix->getElements();
    const CoinBigIndex* start = matrix->getVectorStarts();
    const int* length = matrix->getVectorLengths();
    for (int col = 0; col < copy.numberColumns(); ++col) {
      for (CoinBigIndex k = start[col]; k < start[col] + length[col]; ++k) {
        if (value[k] != 0.0) ++entries[static_cast<std::size_t>(row_index[k])];
      }
    }
    for (int row = 0; row < copy.numberRows(); ++row) {
      const bool free_row = copy.getRowLower()[row] <= -COIN_DBL_MAX / 2 &&
                            copy.getRowUpper()[row] >= COIN_DBL_MAX / 2;
      if (free_row || entries[static_cast<std::size_t>(row)] == 0) idle_rows.push_back(row);
    }
    if (!idle_rows.empty()) copy.deleteRows(static_cast<int>(idle_rows.size()), idle_rows.data());
    try {
      ClpSolve barrier;
      barrier.setSolveType(ClpSolve::useBarrierNoCross);
      // Presolve would remove the very degrees of freedom whose centre we want.
      barrier.setPresolveType(ClpSolve::presolveOff);
      copy.initialSolve(barrier);
    } catch (...) {
      return std::nullopt;
    }
    if (copy.status() != 0) return std::nullopt;
    const double* x = copy.primalColumnSolution();
    std::vector<double> centre(x, x + copy.numberColumns());
    if (std::abs(ObjectiveOf(centre) - optimal_value) >
        1e-7 * std::max(1.0, std::abs(optimal_value))) {
      return std::nullopt;
    }
    if (MaxViolation(centre) > 1e-7) return std::nullopt;
    return centre;
  }

  // Largest violation of the session's current bounds and rows by `x`.
  double MaxViolation(const std::vector<double>& x) const {
    double worst = 0.0;
    const double* col_lo = simplex_.getColLower();
    const double* col_up = simplex_.getColUpper();
    for (std::size_t j = 0; j < x.size(); ++j) {
      worst = std::max({worst, col_lo[j] - x[j], x[j] - col_up[j]});
    }
    std::vector<double> activity(static_cast<std::size_t>(simplex_.numberRows()), 0.0);
    simplex_.matrix()->times(x.data(), activity.data());
    for (std::size_t i = 0; i < activity.size(); ++i) {
      worst = std::max({worst, simplex_.getRowLower()[i] - activity[i],
                        activity[i] - simplex_.getRowUpper()[i]});
    }
    return worst;
  }

  ClpSimplex simplex_;
  Sense sense_;
  bool central_;
  bool solved_once_ = false;
  bool objective_changed_ = false;
  std::vector<double> start_;  // SetStartPoint's point, until the first solve
};

class ClpSolver final : public Solver {
 public:
  std::string_view name() const override { return "clp"; }
  bool SupportsIntegers() const override { return false; }
  Result<std::unique_ptr<Session>> Load(const Model& model, const SolveOptions& options) override {
    if (model.HasIntegers()) {
      return Status::InvalidArgument("Clp solves linear programs only; the model has integers");
    }
    try {
      return std::unique_ptr<Session>(std::make_unique<ClpSession>(model, options));
    } catch (const std::exception& e) {
      return Status::Internal(std::string("Clp could not load the model: ") + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Solver> MakeClpSolver() { return std::make_unique<ClpSolver>(); }

}  // namespace gavel::lp
