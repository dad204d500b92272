// Adapter onto COIN-OR Cbc (branch and cut, LP relaxations by Clp through OsiClp).
#include <CbcModel.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

#include <exception>
#include <string>

#include "gavel/lp/coin_bounds.h"
#include "gavel/lp/solver.h"

namespace gavel::lp {
namespace {

Result<Solution> SolveWithCbc(const Model& model, const SolveOptions& options) {
  try {
    const int n = model.num_columns();
    const int m = model.num_rows();
    std::vector<double> col_lo, col_up, obj, row_lo, row_up;
    for (const Column& c : model.columns()) {
      col_lo.push_back(ToCoin(c.lower));
      col_up.push_back(ToCoin(c.upper));
      obj.push_back(c.objective);
    }
    for (int i = 0; i < m; ++i) {
      row_lo.push_back(ToCoin(model.row_lower()[static_cast<std::size_t>(i)]));
      row_up.push_back(ToCoin(model.row_upper()[static_cast<std::size_t>(i)]));
    }
    std::vector<CoinBigIndex> starts(model.row_start().begin(), model.row_start().end());
    std::vector<int> lengths;
    for (int i = 0; i < m; ++i) {
      lengths.push_back(model.row_start()[static_cast<std::size_t>(i) + 1] -
                        model.row_start()[static_cast<std::size_t>(i)]);
    }
    CoinPackedMatrix matrix(false, n, m, static_cast<CoinBigIndex>(model.entry_value().size()),
                            model.entry_value().data(), model.entry_column().data(),
                            starts.data(), lengths.data());
    OsiClpSolverInterface osi;
    osi.messageHandler()->setLogLevel(0);
    osi.loadProblem(matrix, col_lo.data(), col_up.data(), obj.data(), row_lo.data(),
                    row_up.data());
    osi.setObjSense(model.sense() == Sense::kMaximize ? -1.0 : 1.0);
    for (int j = 0; j < n; ++j) {
      if (model.columns()[static_cast<std::size_t>(j)].integer) osi.setInteger(j);
    }
    CbcModel cbc(osi);
    cbc.setLogLevel(options.verbose ? 1 : 0);
    cbc.messageHandler()->setLogLevel(options.verbose ? 1 : 0);
    if (options.time_limit_seconds > 0) cbc.setMaximumSeconds(options.time_limit_seconds);
    // Settle the continuous relaxation first: branch and bound alone reports an unbounded
    // relaxation as "optimal".
    cbc.initialSolve();
    Solution solution;
    if (cbc.solver()->isProvenPrimalInfeasible()) {
      solution.outcome = Outcome::kInfeasible;
      return solution;
    }
    if (cbc.solver()->isProvenDualInfeasible()) {
      solution.outcome = Outcome::kUnbounded;
      return solution;
    }
    cbc.branchAndBound();
    solution.iterations = cbc.getIterationCount();
    if (cbc.isProvenOptimal()) {
      solution.outcome = Outcome::kOptimal;
    } else if (cbc.isProvenInfeasible()) {
      solution.outcome = Outcome::kInfeasible;
      return solution;
    } else if (cbc.isContinuousUnbounded()) {
      solution.outcome = Outcome::kUnbounded;
      return solution;
    } else {
      solution.outcome = Outcome::kLimitReached;
    }
    const double* best = cbc.bestSolution();
    if (best != nullptr) {
      solution.values.assign(best, best + n);
      solution.objective = model.Objective(solution.values);
    } else if (solution.outcome == Outcome::kOptimal) {
      return Status::Internal("Cbc reported optimal without a solution");
    }
    return solution;
  } catch (const std::exception& e) {
    return Status::Internal(std::string("Cbc failed: ") + e.what());
  } catch (...) {
    return Status::Internal("Cbc failed with an unknown exception");
  }
}

class CbcSolver final : public Solver {
 public:
  std::string_view name() const override { return "cbc"; }
  bool SupportsIntegers() const override { return true; }
  Result<std::unique_ptr<Session>> Load(const Model& model, const SolveOptions& options) override {
    return std::unique_ptr<Session>(
        std::make_unique<RebuildingSession>(model, options, &SolveWithCbc));
  }
};

}  // namespace

std::unique_ptr<Solver> MakeCbcSolver() { return std::make_unique<CbcSolver>(); }

}  // namespace gavel::lp
