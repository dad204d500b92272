// The solver interface. A solve has two kinds of outcome, kept apart on purpose:
//   * the call failed (the backend crashed, ran out of memory, was given a broken model):
//     a non-OK Status;
//   * the call worked and the problem is optimal / infeasible / unbounded / stopped at a
//     limit: an OK Result whose Solution::outcome says which.
// A Session keeps a loaded model alive so that a changed problem (a bound, an objective
// coefficient, a new row or column) re-solves from the previous basis (warm start).
//
// Thread-safety: a Solver may be shared between threads (sessions it creates are
// independent); a Session is single-threaded.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/lp/model.h"

namespace gavel::lp {

enum class Outcome { kOptimal, kInfeasible, kUnbounded, kLimitReached };
const char* OutcomeName(Outcome outcome);

struct Solution {
  Outcome outcome = Outcome::kOptimal;
  double objective = 0.0;            // Σ c_j x_j in the model's own sense
  std::vector<double> values;        // one per column (empty unless optimal or a limit with a point)
  std::vector<double> row_duals;     // one per row, for LPs solved to optimality; may be empty
  std::vector<double> reduced_costs; // one per column, likewise
  long iterations = 0;
};

enum class Algorithm {
  // Simplex: an optimal vertex; warm re-solves from the previous basis.
  kSimplex,
  // Interior point without crossover: a point in the relative interior of the optimal face,
  // near its analytic centre. When the optimum is not unique this is the point an
  // interior-point solver (the original's ECOS) returns, rather than a vertex. Re-solves
  // start from scratch. Backends without it use simplex.
  kCentral,
};

struct SolveOptions {
  double time_limit_seconds = 0.0;  // 0 = none
  bool verbose = false;
  Algorithm algorithm = Algorithm::kSimplex;
};

// New columns for Session::AddColumns, column-major: column c has bounds lower[c]..upper[c],
// objective[c], and entries rows/coefficients[starts[c] .. starts[c + 1]) in existing rows.
struct ColumnBatch {
  std::vector<double> lower;
  std::vector<double> upper;
  std::vector<double> objective;
  std::vector<int> starts{0};
  std::vector<int> rows;
  std::vector<double> coefficients;

  std::size_t size() const { return lower.size(); }
  void Add(double lo, double hi, double obj, std::span<const int> entry_rows,
           std::span<const double> entry_coefficients);
  // One more entry of the last column added (there must be one).
  void AddEntry(int row, double coefficient);
};

class Session {
 public:
  virtual ~Session() = default;
  virtual Result<Solution> Solve() = 0;

  virtual void SetObjective(int column, double coefficient) = 0;
  virtual void SetColumnBounds(int column, double lower, double upper) = 0;
  virtual void SetRowBounds(int row, double lower, double upper) = 0;
  // Returns the new column's index; `rows`/`coefficients` give its entries in existing rows.
  virtual int AddColumn(double lower, double upper, double objective, std::span<const int> rows,
                        std::span<const double> coefficients) = 0;
  // Returns the new row's index.
  virtual int AddRow(double lower, double upper, std::span<const int> columns,
                     std::span<const double> coefficients) = 0;
  // Adds the batch's columns in order; returns the first one's index (the others follow).
  // The batch must not be empty (callers skip empty batches: there is no first index).
  // The default calls AddColumn per column; a backend that copies its arrays on every added
  // column (Clp) adds the batch at once.
  virtual int AddColumns(const ColumnBatch& batch);
  // A hint for the first Solve(): a primal point, one value per column the session has now
  // (columns added later count as 0), that the solve may start from instead of from scratch
  // (Clp: a basis crashed from the point and a primal values pass). The point should satisfy
  // the bounds and rows; one that does not only costs the solve iterations. It changes the
  // path, never the outcome or the optimal value (an optimum that is not unique may come out
  // as another vertex). Ignored after the first Solve() (that one's basis is the better
  // start) and by backends without a warm start (the default).
  virtual void SetStartPoint(std::span<const double> values) { (void)values; }
};

class Solver {
 public:
  virtual ~Solver() = default;
  virtual std::string_view name() const = 0;
  virtual bool SupportsIntegers() const = 0;
  virtual Result<std::unique_ptr<Session>> Load(const Model& model,
                                                const SolveOptions& options = {}) = 0;

  // Loads and solves once.
  Result<Solution> Solve(const Model& model, const SolveOptions& options = {});
};

// COIN-OR Clp (dual/primal simplex, warm starts). Linear programs only.
std::unique_ptr<Solver> MakeClpSolver();
// COIN-OR Cbc (branch and cut over Clp). Mixed-integer programs; re-solves from scratch.
std::unique_ptr<Solver> MakeCbcSolver();

// A Session over a copy of the model that re-solves from scratch: for backends without
// incremental updates (Cbc, GLPK). `solve_once` solves one complete model.
class RebuildingSession : public Session {
 public:
  using SolveFn = Result<Solution> (*)(const Model&, const SolveOptions&);
  RebuildingSession(Model model, SolveOptions options, SolveFn solve_once)
      : model_(std::move(model)), options_(options), solve_once_(solve_once) {}
  Result<Solution> Solve() override { return solve_once_(model_, options_); }
  void SetObjective(int column, double c) override { model_.SetObjective(column, c); }
  void SetColumnBounds(int column, double lo, double hi) override {
    model_.SetColumnBounds(column, lo, hi);
  }
  void SetRowBounds(int row, double lo, double hi) override { model_.SetRowBounds(row, lo, hi); }
  int AddColumn(double lower, double upper, double objective, std::span<const int> rows,
                std::span<const double> coefficients) override;
  int AddRow(double lower, double upper, std::span<const int> columns,
             std::span<const double> coefficients) override {
    return model_.AddRow(lower, upper, columns, coefficients);
  }

 private:
  Model model_;
  SolveOptions options_;
  SolveFn solve_once_;
};

}  // namespace gavel::lp
