#include "gavel/lp/ecos_lp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

namespace gavel::lp {

void InequalityLp::AddRow(const std::vector<int>& columns, const std::vector<double>& coefficients,
                          double rhs) {
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (coefficients[i] == 0.0) continue;
    column.push_back(columns[i]);
    value.push_back(coefficients[i]);
  }
  row_start.push_back(static_cast<int>(column.size()));
  h.push_back(rhs);
}

const char* EcosExitName(EcosExit exit) {
  switch (exit) {
    case EcosExit::kOptimal: return "optimal";
    case EcosExit::kPrimalInfeasible: return "primal infeasible";
    case EcosExit::kDualInfeasible: return "dual infeasible";
    case EcosExit::kOptimalInaccurate: return "optimal (inaccurate)";
    case EcosExit::kPrimalInfeasibleInaccurate: return "primal infeasible (inaccurate)";
    case EcosExit::kDualInfeasibleInaccurate: return "dual infeasible (inaccurate)";
    case EcosExit::kMaxIterations: return "iteration limit";
    case EcosExit::kNumerics: return "numerical problems";
    case EcosExit::kFatal: return "fatal";
  }
  return "unknown";
}

namespace {

// ECOS's default settings (ecos.h), which cvxpy leaves as they are.
struct Settings {
  double feastol = 1e-8;
  double abstol = 1e-8;
  double reltol = 1e-8;
  double feastol_inaccurate = 1e-4;
  double abstol_inaccurate = 5e-5;
  double reltol_inaccurate = 5e-5;
  double gamma = 0.99;  // fraction of the step to the boundary
  int max_iterations = 100;
};

// ECOS's constants (ecos.h); the names say what they bound.
constexpr double kStepMin = 1e-6;
constexpr double kStepMax = 0.999;
constexpr double kSigmaMin = 1e-4;
constexpr double kSigmaMax = 1.0;
constexpr double kSafeguard = 500.0;  // largest growth of the primal residual in one step
constexpr double kSafeDivisor = 1e-13;  // ECOS's EPS in SAFEDIV_POS and the line search
constexpr int kEquilibrationPasses = 3;
constexpr double kEquilibrationFloor = 1e-6;  // smaller row/column maxima are left alone
constexpr int kNotConverged = -87;
// Iterative refinement (kkt.c): at most 9 corrections, stop once the error is below
// 1e-14 relative to the right-hand side or a correction gains less than a factor 6.
constexpr int kMaxRefinements = 9;
constexpr double kRefinementGain = 6.0;
constexpr double kLinearSystemAccuracy = 1e-14;
// A pivot this small relative to its matrix's largest diagonal entry is replaced by it
// (ECOS regularises its LDL' the same way); refinement removes the perturbation.
constexpr double kPivotFloor = 1e-14;

double SafeDivide(double x, double y) { return y < kSafeDivisor ? x / kSafeDivisor : x / y; }

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}
double Norm2(const std::vector<double>& a) { return std::sqrt(Dot(a, a)); }
double NormInf(const std::vector<double>& a) {
  double m = 0.0;
  for (double v : a) m = std::max(m, std::fabs(v));
  return m;
}

// y = G x
void Multiply(const InequalityLp& g, const std::vector<double>& x, std::vector<double>& y) {
  for (int r = 0; r < g.num_rows(); ++r) {
    double sum = 0.0;
    for (int k = g.row_start[r]; k < g.row_start[r + 1]; ++k) sum += g.value[k] * x[g.column[k]];
    y[r] = sum;
  }
}

// y = G' z
void MultiplyTransposed(const InequalityLp& g, const std::vector<double>& z,
                        std::vector<double>& y) {
  std::fill(y.begin(), y.end(), 0.0);
  for (int r = 0; r < g.num_rows(); ++r) {
    for (int k = g.row_start[r]; k < g.row_start[r + 1]; ++k) y[g.column[k]] += g.value[k] * z[r];
  }
}

// In-place Cholesky of a dense symmetric positive (semi)definite matrix (lower triangle,
// row-major n×n); tiny pivots are raised to kPivotFloor × the largest diagonal entry.
void Cholesky(std::vector<double>& a, int n) {
  double largest = 0.0;
  for (int i = 0; i < n; ++i) largest = std::max(largest, a[i * n + i]);
  const double floor = kPivotFloor * std::max(largest, 1e-300);
  for (int j = 0; j < n; ++j) {
    double pivot = a[j * n + j];
    for (int k = 0; k < j; ++k) pivot -= a[j * n + k] * a[j * n + k];
    if (!(pivot > floor)) pivot = floor;
    const double root = std::sqrt(pivot);
    a[j * n + j] = root;
    for (int i = j + 1; i < n; ++i) {
      double sum = a[i * n + j];
      for (int k = 0; k < j; ++k) sum -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = sum / root;
    }
  }
}

// Solves L L' x = b in place with the factor from Cholesky.
void CholeskySolve(const std::vector<double>& l, int n, double* b) {
  for (int i = 0; i < n; ++i) {
    double sum = b[i];
    for (int k = 0; k < i; ++k) sum -= l[i * n + k] * b[k];
    b[i] = sum / l[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    double sum = b[i];
    for (int k = i + 1; k < n; ++k) sum -= l[k * n + i] * b[k];
    b[i] = sum / l[i * n + i];
  }
}

// The normal equations M = σI + G' diag(d) G, factored by structure: rows with few entries
// couple the columns into independent groups (for a scheduling LP, one per job), each a
// small dense block; the few rows with many entries (one capacity row per GPU type) are
// added back by the Sherman-Morrison-Woodbury formula; the few columns with many entries
// (the level t of a max-min LP, in every job's row) are eliminated by their Schur
// complement, so that they do not join every job into one group. Without such structure
// this is one dense Cholesky.
class NormalEquations {
 public:
  explicit NormalEquations(const InequalityLp& g) : g_(g) {
    const int n = g.num_columns;
    const int dense_threshold = std::max(16, n / 4);
    std::vector<int> entries_of_column(static_cast<std::size_t>(n), 0);
    for (int k = 0; k < g.row_start.back(); ++k) ++entries_of_column[g.column[k]];
    local_index_.assign(static_cast<std::size_t>(n), -1);
    for (int col = 0; col < n; ++col) {
      if (entries_of_column[col] > dense_threshold) dense_columns_.push_back(col);
    }
    if (2 * dense_columns_.size() > static_cast<std::size_t>(n)) dense_columns_.clear();
    is_dense_column_.assign(static_cast<std::size_t>(n), 0);
    dense_position_.assign(static_cast<std::size_t>(n), -1);
    for (std::size_t i = 0; i < dense_columns_.size(); ++i) {
      is_dense_column_[dense_columns_[i]] = 1;
      dense_position_[dense_columns_[i]] = static_cast<int>(i);
    }
    for (int r = 0; r < g.num_rows(); ++r) {
      for (int k = g.row_start[r]; k < g.row_start[r + 1]; ++k) {
        if (is_dense_column_[g.column[k]]) {
          rows_with_dense_columns_.push_back(r);
          break;
        }
      }
    }

    std::vector<int> parent(static_cast<std::size_t>(n));
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int a) {
      while (parent[a] != a) a = parent[a] = parent[parent[a]];
      return a;
    };
    std::vector<int> dense;
    for (int r = 0; r < g.num_rows(); ++r) {
      if (SparseEntries(r) > dense_threshold) dense.push_back(r);
    }
    std::vector<char> is_dense_row(static_cast<std::size_t>(g.num_rows()), 0);
    for (int r : dense) is_dense_row[r] = 1;
    // Woodbury needs the sparse rows alone to give a nonsingular matrix: every column must
    // appear in one. Otherwise, or when most rows are dense, factor M as one dense block.
    std::vector<char> in_sparse_row(static_cast<std::size_t>(n), 0);
    for (int r = 0; r < g.num_rows(); ++r) {
      if (is_dense_row[r]) continue;
      for (int k = g.row_start[r]; k < g.row_start[r + 1]; ++k) in_sparse_row[g.column[k]] = 1;
    }
    bool every_column_in_a_sparse_row = true;
    for (int col = 0; col < n; ++col) {
      if (!is_dense_column_[col] && !in_sparse_row[col]) every_column_in_a_sparse_row = false;
    }
    if (2 * dense.size() > static_cast<std::size_t>(n) || !every_column_in_a_sparse_row) {
      dense.clear();
      std::fill(is_dense_row.begin(), is_dense_row.end(), 0);
    }
    dense_rows_ = std::move(dense);
    for (int r = 0; r < g.num_rows(); ++r) {
      if (is_dense_row[r]) continue;
      int first = -1;
      for (int k = g.row_start[r]; k < g.row_start[r + 1]; ++k) {
        if (is_dense_column_[g.column[k]]) continue;
        if (first < 0) {
          first = find(g.column[k]);
        } else {
          parent[find(g.column[k])] = first;
        }
      }
    }
    std::vector<int> group_of(static_cast<std::size_t>(n), -1);
    std::vector<int> group_of_root(static_cast<std::size_t>(n), -1);
    for (int col = 0; col < n; ++col) {
      if (is_dense_column_[col]) continue;
      const int root = find(col);
      if (group_of_root[root] < 0) {
        group_of_root[root] = static_cast<int>(groups_.size());
        groups_.emplace_back();
      }
      Group& group = groups_[group_of_root[root]];
      group_of[col] = group_of_root[root];
      local_index_[col] = static_cast<int>(group.columns.size());
      group.columns.push_back(col);
    }
    for (int r = 0; r < g.num_rows(); ++r) {
      if (is_dense_row[r]) continue;
      for (int k = g.row_start[r]; k < g.row_start[r + 1]; ++k) {
        if (is_dense_column_[g.column[k]]) continue;
        groups_[group_of[g.column[k]]].rows.push_back(r);
        break;
      }
    }
    for (Group& group : groups_) {
      const std::size_t size = group.columns.size();
      group.factor.assign(size * size, 0.0);
    }
  }

  // M = shift·I + G' diag(d) G.
  void Factor(const std::vector<double>& d, double shift) {
    for (Group& group : groups_) {
      const int size = static_cast<int>(group.columns.size());
      std::fill(group.factor.begin(), group.factor.end(), 0.0);
      for (int r : group.rows) {
        for (int a = g_.row_start[r]; a < g_.row_start[r + 1]; ++a) {
          const int la = local_index_[g_.column[a]];
          if (la < 0) continue;  // a dense column
          const double scaled = d[r] * g_.value[a];
          for (int b = g_.row_start[r]; b < g_.row_start[r + 1]; ++b) {
            const int lb = local_index_[g_.column[b]];
            if (lb >= 0 && lb <= la) group.factor[la * size + lb] += scaled * g_.value[b];
          }
        }
      }
      for (int i = 0; i < size; ++i) group.factor[i * size + i] += shift;
      Cholesky(group.factor, size);
    }
    FactorDenseRows(d);
    FactorDenseColumns(d, shift);
  }

  // x := M⁻¹ x
  void Solve(std::vector<double>& x) const {
    const int k = static_cast<int>(dense_columns_.size());
    if (k == 0) {
      SolveWithoutDenseColumns(x);
      return;
    }
    // M = [A B'; B C] over (dense columns, the others): with z = C⁻¹ r_x,
    // y_d = S⁻¹ (r_d − B' z) where S = A − B' C⁻¹ B, and y_x = z − C⁻¹ B y_d.
    std::vector<double> y(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) {
      y[i] = x[dense_columns_[i]];
      x[dense_columns_[i]] = 0.0;
    }
    SolveWithoutDenseColumns(x);
    const int n = g_.num_columns;
    for (int i = 0; i < k; ++i) {
      const double* b = coupling_.data() + static_cast<std::size_t>(i) * n;
      double sum = 0.0;
      for (int col = 0; col < n; ++col) sum += b[col] * x[col];
      y[i] -= sum;
    }
    CholeskySolve(schur_, k, y.data());
    for (int i = 0; i < k; ++i) {
      const double* w = solved_coupling_.data() + static_cast<std::size_t>(i) * n;
      for (int col = 0; col < n; ++col) x[col] -= w[col] * y[i];
    }
    for (int i = 0; i < k; ++i) x[dense_columns_[i]] = y[i];
  }

 private:
  struct Group {
    std::vector<int> columns;
    std::vector<int> rows;
    std::vector<double> factor;
  };

  int SparseEntries(int r) const {
    int count = 0;
    for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) {
      count += is_dense_column_[g_.column[k]] ? 0 : 1;
    }
    return count;
  }

  // Woodbury: C = Cs + U' E U with U the dense rows (without the dense columns), E their
  // weights; C⁻¹ = Cs⁻¹ − Cs⁻¹ U' (E⁻¹ + U Cs⁻¹ U')⁻¹ U Cs⁻¹.
  void FactorDenseRows(const std::vector<double>& d) {
    const int q = static_cast<int>(dense_rows_.size());
    const int n = g_.num_columns;
    solved_dense_.assign(static_cast<std::size_t>(q) * n, 0.0);
    capacitance_.assign(static_cast<std::size_t>(q) * q, 0.0);
    std::vector<double> column(static_cast<std::size_t>(n));
    for (int i = 0; i < q; ++i) {
      const int r = dense_rows_[i];
      std::fill(column.begin(), column.end(), 0.0);
      for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) {
        if (!is_dense_column_[g_.column[k]]) column[g_.column[k]] = g_.value[k];
      }
      SolveSparsePart(column);
      std::copy(column.begin(), column.end(), solved_dense_.begin() + static_cast<long>(i) * n);
    }
    for (int i = 0; i < q; ++i) {
      for (int j = 0; j <= i; ++j) {
        const int r = dense_rows_[i];
        double sum = 0.0;
        for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) {
          sum += g_.value[k] * solved_dense_[static_cast<std::size_t>(j) * n + g_.column[k]];
        }
        capacitance_[i * q + j] = sum;
      }
      capacitance_[i * q + i] += 1.0 / d[dense_rows_[i]];
    }
    Cholesky(capacitance_, q);
  }

  // The dense columns' blocks: B (their coupling to the others, one row of n per dense
  // column, zero at the dense columns), C⁻¹ B, and the Schur complement S = A − B' C⁻¹ B.
  void FactorDenseColumns(const std::vector<double>& d, double shift) {
    const int k = static_cast<int>(dense_columns_.size());
    if (k == 0) return;
    const int n = g_.num_columns;
    coupling_.assign(static_cast<std::size_t>(k) * n, 0.0);
    schur_.assign(static_cast<std::size_t>(k) * k, 0.0);
    for (int r : rows_with_dense_columns_) {
      for (int a = g_.row_start[r]; a < g_.row_start[r + 1]; ++a) {
        const int pa = dense_position_[g_.column[a]];
        if (pa < 0) continue;
        const double scaled = d[r] * g_.value[a];
        for (int b = g_.row_start[r]; b < g_.row_start[r + 1]; ++b) {
          const int pb = dense_position_[g_.column[b]];
          if (pb < 0) {
            coupling_[static_cast<std::size_t>(pa) * n + g_.column[b]] += scaled * g_.value[b];
          } else if (pb <= pa) {
            schur_[pa * k + pb] += scaled * g_.value[b];
          }
        }
      }
    }
    solved_coupling_ = coupling_;
    std::vector<double> column(static_cast<std::size_t>(n));
    for (int i = 0; i < k; ++i) {
      std::copy(coupling_.begin() + static_cast<long>(i) * n,
                coupling_.begin() + static_cast<long>(i + 1) * n, column.begin());
      SolveWithoutDenseColumns(column);
      std::copy(column.begin(), column.end(), solved_coupling_.begin() + static_cast<long>(i) * n);
    }
    for (int i = 0; i < k; ++i) {
      schur_[i * k + i] += shift;
      for (int j = 0; j <= i; ++j) {
        const double* b = coupling_.data() + static_cast<std::size_t>(i) * n;
        const double* w = solved_coupling_.data() + static_cast<std::size_t>(j) * n;
        double sum = 0.0;
        for (int col = 0; col < n; ++col) sum += b[col] * w[col];
        schur_[i * k + j] -= sum;
      }
    }
    Cholesky(schur_, k);
  }

  // x := C⁻¹ x over the columns that are not dense (their entries of x are left as they are).
  void SolveWithoutDenseColumns(std::vector<double>& x) const {
    SolveSparsePart(x);
    const int q = static_cast<int>(dense_rows_.size());
    if (q == 0) return;
    const int n = g_.num_columns;
    std::vector<double> t(static_cast<std::size_t>(q));
    for (int i = 0; i < q; ++i) {
      const int r = dense_rows_[i];
      double sum = 0.0;
      for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) {
        if (!is_dense_column_[g_.column[k]]) sum += g_.value[k] * x[g_.column[k]];
      }
      t[i] = sum;
    }
    CholeskySolve(capacitance_, q, t.data());
    for (int i = 0; i < q; ++i) {
      const double* y = solved_dense_.data() + static_cast<std::size_t>(i) * n;
      for (int col = 0; col < n; ++col) x[col] -= y[col] * t[i];
    }
  }

  void SolveSparsePart(std::vector<double>& x) const {
    std::vector<double> local;
    for (const Group& group : groups_) {
      const int size = static_cast<int>(group.columns.size());
      local.resize(static_cast<std::size_t>(size));
      for (int i = 0; i < size; ++i) local[i] = x[group.columns[i]];
      CholeskySolve(group.factor, size, local.data());
      for (int i = 0; i < size; ++i) x[group.columns[i]] = local[i];
    }
  }

  const InequalityLp& g_;
  std::vector<int> dense_columns_;
  std::vector<char> is_dense_column_;
  std::vector<int> dense_position_;  // a dense column's index in dense_columns_; -1 otherwise
  std::vector<int> rows_with_dense_columns_;
  std::vector<int> dense_rows_;
  std::vector<Group> groups_;
  std::vector<int> local_index_;      // a column's place in its group; -1 for a dense column
  std::vector<double> solved_dense_;  // Cs⁻¹ U', one row of n per dense row
  std::vector<double> capacitance_;   // E⁻¹ + U Cs⁻¹ U', factored
  std::vector<double> coupling_;          // B, one row of n per dense column
  std::vector<double> solved_coupling_;   // C⁻¹ B, likewise
  std::vector<double> schur_;             // A − B' C⁻¹ B, factored
};

// The KKT system ECOS solves each step (inequality rows only):
//   [ 0  G' ] [dx]   [rx]
//   [ G  −V ] [dz] = [rz]      V = diag(v), v = s/z (ECOS's W²), or I at the start.
// ECOS factors it with static regularisation, +δ on the first block and −δ added to −V
// (not at the start), and then refines against the unregularised system by its own rules
// (kkt.c). Where V⁻¹ is tiny the refinement stops early, so ECOS's directions carry some of
// the regularisation; the same regularised system and rules are used here, because the
// original's allocations come out of those directions.
constexpr double kStaticRegularisation = 7e-8;  // DELTASTAT in ECOS 2.0.10 and later

class KktSystem {
 public:
  explicit KktSystem(const InequalityLp& g)
      : g_(g), normal_(g), v_(static_cast<std::size_t>(g.num_rows()), 1.0), v_regularised_(v_) {}

  // `initial`: the starting-point system, V = I with no regularisation on it.
  void Factor(const std::vector<double>& v, bool initial) {
    v_ = v;
    v_regularised_ = v;
    if (!initial) {
      for (double& value : v_regularised_) value += kStaticRegularisation;
    }
    std::vector<double> d(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = 1.0 / v_regularised_[i];
    normal_.Factor(d, kStaticRegularisation);
  }

  void Solve(const std::vector<double>& rx, const std::vector<double>& rz,
             std::vector<double>& dx, std::vector<double>& dz) const {
    const double bnorm = 1.0 + std::max(NormInf(rx), NormInf(rz));
    const double threshold = bnorm * kLinearSystemAccuracy;
    SolveRegularised(rx, rz, dx, dz);
    std::vector<double> ex(rx.size()), ez(rz.size()), gdx(rz.size());
    std::vector<double> cx(dx.size()), cz(dz.size());
    double previous_error = 0.0;
    for (int refinement = 0; refinement <= kMaxRefinements; ++refinement) {
      MultiplyTransposed(g_, dz, ex);
      for (std::size_t i = 0; i < ex.size(); ++i) ex[i] = rx[i] - ex[i];
      Multiply(g_, dx, gdx);
      for (std::size_t i = 0; i < ez.size(); ++i) ez[i] = rz[i] - gdx[i] + v_[i] * dz[i];
      const double error = std::max(NormInf(ex), NormInf(ez));
      if (refinement > 0 && error > previous_error) {  // the last correction made it worse
        for (std::size_t i = 0; i < dx.size(); ++i) dx[i] -= cx[i];
        for (std::size_t i = 0; i < dz.size(); ++i) dz[i] -= cz[i];
        break;
      }
      if (refinement == kMaxRefinements || error < threshold ||
          (refinement > 0 && previous_error < kRefinementGain * error)) {
        break;
      }
      previous_error = error;
      SolveRegularised(ex, ez, cx, cz);
      for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += cx[i];
      for (std::size_t i = 0; i < dz.size(); ++i) dz[i] += cz[i];
    }
  }

 private:
  // The regularised system by elimination: dz = Ṽ⁻¹ (G dx − rz) with
  // (δI + G' Ṽ⁻¹ G) dx = rx + G' Ṽ⁻¹ rz, Ṽ the regularised V.
  void SolveRegularised(const std::vector<double>& rx, const std::vector<double>& rz,
                        std::vector<double>& dx, std::vector<double>& dz) const {
    std::vector<double> scaled(rz.size());
    for (std::size_t i = 0; i < rz.size(); ++i) scaled[i] = rz[i] / v_regularised_[i];
    MultiplyTransposed(g_, scaled, dx);
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += rx[i];
    normal_.Solve(dx);
    Multiply(g_, dx, dz);
    for (std::size_t i = 0; i < dz.size(); ++i) dz[i] = (dz[i] - rz[i]) / v_regularised_[i];
  }

  const InequalityLp& g_;
  NormalEquations normal_;
  std::vector<double> v_;
  std::vector<double> v_regularised_;
};

// ECOS's statistics of one iterate (stats in ecos.h), the inputs of its stopping rules.
struct Statistics {
  double pcost = 0.0, dcost = 0.0, pres = 0.0, dres = 0.0, pinfres = 0.0, dinfres = 0.0;
  double gap = 0.0, relgap = 0.0, mu = 0.0, kapovert = 0.0;
};

// ECOS's compareStatistics: is `a` a better iterate to fall back on than `b`? ECOS tests
// `pinfres != NAN`, which is true for every value, NaN included; the branches follow that.
bool Better(const Statistics& a, const Statistics& b) {
  const bool smaller_gap = a.gap > 0 && b.gap > 0 && a.gap < b.gap;
  const bool smaller_mu = a.mu > 0 && a.mu < b.mu;
  if (a.kapovert > 1) {
    return smaller_gap && (a.pinfres > 0 && a.pinfres < b.pres) && smaller_mu;
  }
  return smaller_gap && (a.pres > 0 && a.pres < b.pres) && (a.dres > 0 && a.dres < b.dres) &&
         (a.kapovert > 0 && a.kapovert < b.kapovert) && smaller_mu;
}

// s := r + (1 + α) e with α the largest violation (at least −γ): ECOS's bring2cone.
void BringToCone(const std::vector<double>& r, std::vector<double>& s, double gamma) {
  double alpha = -gamma;
  for (double v : r) {
    if (v <= 0 && -v > alpha) alpha = -v;
  }
  alpha += 1.0;
  for (std::size_t i = 0; i < r.size(); ++i) s[i] = r[i] + alpha;
}

// The largest step in (0, 1/EPS] keeping λ + α ds and λ + α dz (scaled variables) and τ, κ
// nonnegative, clamped to [kStepMin, kStepMax]: ECOS's lineSearch for the orthant.
double LineSearch(const std::vector<double>& lambda, const std::vector<double>& ds,
                  const std::vector<double>& dz, double tau, double dtau, double kap,
                  double dkap) {
  double alpha = 10.0;
  if (!lambda.empty()) {
    double rhomin = ds[0] / lambda[0];
    double sigmamin = dz[0] / lambda[0];
    for (std::size_t i = 1; i < lambda.size(); ++i) {
      rhomin = std::min(rhomin, ds[i] / lambda[i]);
      sigmamin = std::min(sigmamin, dz[i] / lambda[i]);
    }
    if (-sigmamin > -rhomin) {
      alpha = sigmamin < 0 ? 1.0 / (-sigmamin) : 1.0 / kSafeDivisor;
    } else {
      alpha = rhomin < 0 ? 1.0 / (-rhomin) : 1.0 / kSafeDivisor;
    }
  }
  const double minus_tau_by_dtau = -tau / dtau;
  const double minus_kap_by_dkap = -kap / dkap;
  if (minus_tau_by_dtau > 0 && minus_tau_by_dtau < alpha) alpha = minus_tau_by_dtau;
  if (minus_kap_by_dkap > 0 && minus_kap_by_dkap < alpha) alpha = minus_kap_by_dkap;
  return std::clamp(alpha, kStepMin, kStepMax);
}

class EcosLp {
 public:
  explicit EcosLp(const InequalityLp& problem)
      : m_(problem.num_rows()), n_(problem.num_columns), g_(problem) {
    Equilibrate();
    for (int j = 0; j < n_; ++j) g_.c[j] /= column_scale_[j];
  }

  EcosResult Run() {
    KktSystem kkt(g_);
    Initialise(kkt);
    int exit = static_cast<int>(EcosExit::kFatal);
    double previous_pres = std::numeric_limits<double>::quiet_NaN();
    int iteration = 0;
    for (iteration = 0; iteration <= settings_.max_iterations; ++iteration) {
      ComputeResiduals();
      UpdateStatistics();
      if (iteration > 0 && (info_.pres > kSafeguard * previous_pres || info_.gap < 0)) {
        RestoreBest();
        exit = CheckExit(/*inaccurate=*/true);
        if (exit == kNotConverged) exit = static_cast<int>(EcosExit::kNumerics);
        break;
      }
      previous_pres = info_.pres;
      exit = CheckExit(/*inaccurate=*/false);
      if (exit != kNotConverged) break;
      if (iteration > 0 && step_ == kStepMin * settings_.gamma) {  // no progress possible
        RestoreBest();
        exit = CheckExit(/*inaccurate=*/true);
        if (exit == kNotConverged) exit = static_cast<int>(EcosExit::kNumerics);
        break;
      }
      if (iteration == settings_.max_iterations) {
        if (!Better(info_, best_.info)) RestoreBest();
        exit = CheckExit(/*inaccurate=*/true);
        if (exit == kNotConverged) exit = static_cast<int>(EcosExit::kMaxIterations);
        break;
      }
      if (iteration == 0 || Better(info_, best_.info)) SaveBest();
      Step(kkt);
    }
    return Finish(exit, iteration);
  }

 private:
  struct Iterate {
    std::vector<double> x, s, z;
    double kap = 0.0, tau = 0.0, cx = 0.0, hz = 0.0;
    Statistics info;
  };

  // Ruiz equilibration as ECOS's use_ruiz_equilibration: each pass divides every row and
  // every column by the square root of its largest magnitude.
  void Equilibrate() {
    row_scale_.assign(static_cast<std::size_t>(m_), 1.0);
    column_scale_.assign(static_cast<std::size_t>(n_), 1.0);
    std::vector<double> row_max(static_cast<std::size_t>(m_));
    std::vector<double> column_max(static_cast<std::size_t>(n_));
    for (int pass = 0; pass < kEquilibrationPasses; ++pass) {
      std::fill(row_max.begin(), row_max.end(), 0.0);
      std::fill(column_max.begin(), column_max.end(), 0.0);
      for (int r = 0; r < m_; ++r) {
        for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) {
          const double magnitude = std::fabs(g_.value[k]);
          row_max[r] = std::max(row_max[r], magnitude);
          column_max[g_.column[k]] = std::max(column_max[g_.column[k]], magnitude);
        }
      }
      for (double& v : row_max) v = std::fabs(v) < kEquilibrationFloor ? 1.0 : std::sqrt(v);
      for (double& v : column_max) v = std::fabs(v) < kEquilibrationFloor ? 1.0 : std::sqrt(v);
      for (int r = 0; r < m_; ++r) {
        for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) g_.value[k] /= row_max[r];
      }
      for (int r = 0; r < m_; ++r) {
        for (int k = g_.row_start[r]; k < g_.row_start[r + 1]; ++k) {
          g_.value[k] /= column_max[g_.column[k]];
        }
      }
      for (int r = 0; r < m_; ++r) row_scale_[r] *= row_max[r];
      for (int j = 0; j < n_; ++j) column_scale_[j] *= column_max[j];
    }
    for (int r = 0; r < m_; ++r) g_.h[r] /= row_scale_[r];
  }

  // ECOS's init: x = argmin ||G x − h||, s = h − G x shifted into the cone; z from the
  // least-norm solution of G' z = −c, shifted likewise; τ = κ = 1.
  void Initialise(KktSystem& kkt) {
    x_.assign(static_cast<std::size_t>(n_), 0.0);
    s_.assign(static_cast<std::size_t>(m_), 0.0);
    z_.assign(static_cast<std::size_t>(m_), 0.0);
    rx_.assign(static_cast<std::size_t>(n_), 0.0);
    rz_.assign(static_cast<std::size_t>(m_), 0.0);
    kkt.Factor(std::vector<double>(static_cast<std::size_t>(m_), 1.0), /*initial=*/true);
    std::vector<double> dx(static_cast<std::size_t>(n_)), dz(static_cast<std::size_t>(m_));
    kkt.Solve(std::vector<double>(static_cast<std::size_t>(n_), 0.0), g_.h, dx, dz);
    x_ = dx;
    std::vector<double> r(static_cast<std::size_t>(m_));
    for (int i = 0; i < m_; ++i) r[i] = -dz[i];
    BringToCone(r, s_, settings_.gamma);
    std::vector<double> minus_c(g_.c);
    for (double& v : minus_c) v = -v;
    kkt.Solve(minus_c, std::vector<double>(static_cast<std::size_t>(m_), 0.0), dx, dz);
    BringToCone(dz, z_, settings_.gamma);
    resx0_ = std::max(1.0, Norm2(g_.c));
    resz0_ = std::max(1.0, Norm2(g_.h));
    kap_ = 1.0;
    tau_ = 1.0;
    step_ = 0.0;
  }

  // rx = −G'z − τc, rz = s + Gx − τh, rt = κ + c'x + h'z (computeResiduals).
  void ComputeResiduals() {
    MultiplyTransposed(g_, z_, rx_);
    for (double& v : rx_) v = -v;
    hresx_ = Norm2(rx_);
    for (int j = 0; j < n_; ++j) rx_[j] -= tau_ * g_.c[j];
    Multiply(g_, x_, rz_);
    for (int i = 0; i < m_; ++i) rz_[i] += s_[i];
    hresz_ = Norm2(rz_);
    for (int i = 0; i < m_; ++i) rz_[i] -= tau_ * g_.h[i];
    cx_ = Dot(g_.c, x_);
    hz_ = Dot(g_.h, z_);
    rt_ = kap_ + cx_ + hz_;
    nx_ = Norm2(x_);
    ns_ = Norm2(s_);
    nz_ = Norm2(z_);
  }

  void UpdateStatistics() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    info_.gap = Dot(s_, z_);
    info_.mu = (info_.gap + kap_ * tau_) / (m_ + 1);
    info_.kapovert = kap_ / tau_;
    info_.pcost = cx_ / tau_;
    info_.dcost = -hz_ / tau_;
    if (info_.pcost < 0) {
      info_.relgap = info_.gap / (-info_.pcost);
    } else if (info_.dcost > 0) {
      info_.relgap = info_.gap / info_.dcost;
    } else {
      info_.relgap = nan;
    }
    info_.pres = Norm2(rz_) / std::max(resz0_ + nx_ + ns_, 1.0) / tau_;
    info_.dres = Norm2(rx_) / std::max(resx0_ + nz_, 1.0) / tau_;
    const double dual_norm = std::max(nz_, 1.0);
    info_.pinfres = hz_ / dual_norm < -settings_.reltol ? hresx_ / dual_norm : nan;
    info_.dinfres = cx_ / std::max(nx_, 1.0) < -settings_.reltol
                        ? std::max(0.0, hresz_ / std::max(nx_ + ns_, 1.0))
                        : nan;
  }

  // checkExitConditions: an exit code, or kNotConverged.
  int CheckExit(bool inaccurate) const {
    const double feastol = inaccurate ? settings_.feastol_inaccurate : settings_.feastol;
    const double abstol = inaccurate ? settings_.abstol_inaccurate : settings_.abstol;
    const double reltol = inaccurate ? settings_.reltol_inaccurate : settings_.reltol;
    const int offset = inaccurate ? 10 : 0;
    if ((-cx_ > 0 || -hz_ >= -abstol) && info_.pres < feastol && info_.dres < feastol &&
        (info_.gap < abstol || info_.relgap < reltol)) {
      return static_cast<int>(EcosExit::kOptimal) + offset;
    }
    if (info_.dinfres < feastol) return static_cast<int>(EcosExit::kDualInfeasible) + offset;
    if (info_.pinfres < feastol ||
        (tau_ < settings_.feastol && kap_ < settings_.feastol &&
         info_.pinfres < settings_.feastol)) {
      return static_cast<int>(EcosExit::kPrimalInfeasible) + offset;
    }
    return kNotConverged;
  }

  void SaveBest() { best_ = Iterate{x_, s_, z_, kap_, tau_, cx_, hz_, info_}; }
  void RestoreBest() {
    x_ = best_.x;
    s_ = best_.s;
    z_ = best_.z;
    kap_ = best_.kap;
    tau_ = best_.tau;
    cx_ = best_.cx;
    hz_ = best_.hz;
    info_ = best_.info;
  }

  // One predictor-corrector step (the body of ECOS_solve's loop after the exit tests).
  void Step(KktSystem& kkt) {
    // Nesterov-Todd scaling of the orthant: W = diag(sqrt(s/z)), λ = W z.
    std::vector<double> v(static_cast<std::size_t>(m_)), w(v.size()), lambda(v.size());
    for (int i = 0; i < m_; ++i) {
      v[i] = SafeDivide(s_[i], z_[i]);
      w[i] = std::sqrt(v[i]);
      lambda[i] = w[i] * z_[i];
    }
    kkt.Factor(v, /*initial=*/false);

    std::vector<double> dx1(static_cast<std::size_t>(n_)), dz1(static_cast<std::size_t>(m_));
    std::vector<double> minus_c(g_.c);
    for (double& value : minus_c) value = -value;
    kkt.Solve(minus_c, g_.h, dx1, dz1);

    // Affine (predictor) direction.
    std::vector<double> rhs_x(rx_), rhs_z(static_cast<std::size_t>(m_));
    for (int i = 0; i < m_; ++i) rhs_z[i] = s_[i] - rz_[i];
    std::vector<double> dx2(static_cast<std::size_t>(n_)), dz2(static_cast<std::size_t>(m_));
    kkt.Solve(rhs_x, rhs_z, dx2, dz2);
    const double dtau_denominator = kap_ / tau_ - Dot(g_.c, dx1) - Dot(g_.h, dz1);
    const double dtau_affine = (rt_ - kap_ + Dot(g_.c, dx2) + Dot(g_.h, dz2)) / dtau_denominator;
    std::vector<double> w_dz(static_cast<std::size_t>(m_)), ds_by_w(static_cast<std::size_t>(m_));
    for (int i = 0; i < m_; ++i) {
      dz2[i] += dtau_affine * dz1[i];
      w_dz[i] = w[i] * dz2[i];
      ds_by_w[i] = -w_dz[i] - lambda[i];
    }
    const double dkap_affine = -kap_ - kap_ / tau_ * dtau_affine;
    const double step_affine =
        LineSearch(lambda, ds_by_w, w_dz, tau_, dtau_affine, kap_, dkap_affine);

    // Centring and the combined (corrector) direction.
    double sigma = 1.0 - step_affine;
    sigma = std::clamp(sigma * sigma * sigma, kSigmaMin, kSigmaMax);
    const double sigma_mu = sigma * info_.mu;
    std::vector<double> lambda_ds(static_cast<std::size_t>(m_));  // λ \ ds
    for (int i = 0; i < m_; ++i) {
      const double ds = lambda[i] * lambda[i] + ds_by_w[i] * w_dz[i] - sigma_mu;
      lambda_ds[i] = SafeDivide(ds, lambda[i]);
      rhs_z[i] = -(1.0 - sigma) * rz_[i] + w[i] * lambda_ds[i];
    }
    for (double& value : rhs_x) value *= (1.0 - sigma);
    kkt.Solve(rhs_x, rhs_z, dx2, dz2);
    const double bkap = kap_ * tau_ + dkap_affine * dtau_affine - sigma_mu;
    const double dtau =
        ((1.0 - sigma) * rt_ - bkap / tau_ + Dot(g_.c, dx2) + Dot(g_.h, dz2)) / dtau_denominator;
    for (int j = 0; j < n_; ++j) dx2[j] += dtau * dx1[j];
    for (int i = 0; i < m_; ++i) {
      dz2[i] += dtau * dz1[i];
      w_dz[i] = w[i] * dz2[i];
      ds_by_w[i] = -(lambda_ds[i] + w_dz[i]);
    }
    const double dkap = -(bkap + kap_ * dtau) / tau_;
    step_ = LineSearch(lambda, ds_by_w, w_dz, tau_, dtau, kap_, dkap) * settings_.gamma;

    for (int j = 0; j < n_; ++j) x_[j] += step_ * dx2[j];
    for (int i = 0; i < m_; ++i) {
      z_[i] += step_ * dz2[i];
      s_[i] += step_ * w[i] * ds_by_w[i];
    }
    kap_ += step_ * dkap;
    tau_ += step_ * dtau;
  }

  // ECOS's backscale of x: undo the equilibration and divide by τ.
  EcosResult Finish(int exit, int iteration) const {
    EcosResult result;
    result.exit = static_cast<EcosExit>(exit);
    result.iterations = iteration;
    result.x.resize(static_cast<std::size_t>(n_));
    for (int j = 0; j < n_; ++j) result.x[j] = x_[j] / (column_scale_[j] * tau_);
    return result;
  }

  static constexpr Settings settings_{};
  int m_;
  int n_;
  InequalityLp g_;  // the problem, equilibrated (G, h and c)
  std::vector<double> row_scale_, column_scale_;
  std::vector<double> x_, s_, z_, rx_, rz_;
  double kap_ = 1.0, tau_ = 1.0, step_ = 0.0;
  double rt_ = 0.0, cx_ = 0.0, hz_ = 0.0, hresx_ = 0.0, hresz_ = 0.0;
  double nx_ = 0.0, ns_ = 0.0, nz_ = 0.0;
  double resx0_ = 1.0, resz0_ = 1.0;
  Statistics info_;
  Iterate best_;
};

}  // namespace

EcosResult SolveEcosLp(const InequalityLp& problem) {
  EcosLp solver(problem);
  return solver.Run();
}

}  // namespace gavel::lp
