#include "gavel/estimator/matrix_completion.h"

#include <Eigen/Dense>

namespace gavel::estimator {

Result<PmfResult> CompletePmf(const Matrix& a, const Matrix& mask, const PmfOptions& options,
                              const std::function<double()>& normal) {
  if (a.rows() != mask.rows() || a.cols() != mask.cols()) {
    return Status::InvalidArgument("matrix completion: the mask's shape differs from the matrix's");
  }
  if (options.rank < 1) return Status::InvalidArgument("matrix completion: rank must be >= 1");
  const auto m = static_cast<Eigen::Index>(a.rows());
  const auto n = static_cast<Eigen::Index>(a.cols());
  const Eigen::Index k = options.rank;
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> A(a.data().data(), m, n);
  const Eigen::Map<const RowMajor> W(mask.data().data(), m, n);

  // numpy's randn(m, k) then randn(n, k): row-major draws.
  Eigen::MatrixXd U(m, k), V(n, k);
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index c = 0; c < k; ++c) U(i, c) = normal();
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index c = 0; c < k; ++c) V(j, c) = normal();

  const Eigen::MatrixXd ridge = options.regularization * Eigen::MatrixXd::Identity(k, k);
  // Each row's system: (Fᵀ diag(w) F + μI) x = Fᵀ (w ∘ target), F the other factor.
  const auto solve_rows = [&](const Eigen::MatrixXd& F, Eigen::MatrixXd& out, bool by_row) {
    const Eigen::Index rows = out.rows();
    for (Eigen::Index r = 0; r < rows; ++r) {
      Eigen::VectorXd w, t;
      if (by_row) {
        w = W.row(r).transpose();
        t = A.row(r).transpose();
      } else {
        w = W.col(r);
        t = A.col(r);
      }
      const Eigen::MatrixXd gram = F.transpose() * w.asDiagonal() * F + ridge;
      const Eigen::VectorXd rhs = F.transpose() * w.cwiseProduct(t);
      const Eigen::VectorXd x = gram.partialPivLu().solve(rhs);
      if (!x.allFinite()) return false;
      out.row(r) = x.transpose();
    }
    return true;
  };

  Eigen::MatrixXd previous = U * V.transpose();
  Eigen::MatrixXd X = previous;
  int iterations = 0;
  for (int it = 0; it < options.max_iterations; ++it) {
    ++iterations;
    if (!solve_rows(V, U, true) || !solve_rows(U, V, false)) {
      return Status::FailedPrecondition("matrix completion: a least-squares system is singular");
    }
    X = U * V.transpose();
    const double mean_diff =
        (X - previous).norm() / static_cast<double>(m) / static_cast<double>(n);
    if (mean_diff < options.tolerance) break;
    previous = X;
  }
  PmfResult result;
  result.iterations = iterations;
  result.completed = Matrix(a.rows(), a.cols());
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < n; ++j)
      result.completed(static_cast<std::size_t>(i), static_cast<std::size_t>(j)) = X(i, j);
  return result;
}

}  // namespace gavel::estimator
