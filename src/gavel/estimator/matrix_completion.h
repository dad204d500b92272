// Low-rank matrix completion by probabilistic matrix factorisation (PMF), solved by alternating
// least squares — the method of the original's `matrix_completion.pmf_solve` (Salakhutdinov and
// Mnih 2008): find U (rows × k) and V (cols × k) minimising
//     Σ_{observed (i,j)} (A_ij − u_i·v_j)² + μ (‖U‖² + ‖V‖²)
// by solving, in turn, every row of U given V and every row of V given U (each a k × k
// regularised least-squares system), starting from Gaussian U then V (drawn row by row from
// `normal`), until the mean change of U·Vᵀ per entry, ‖X − X_prev‖_F / rows / cols, falls
// below `tolerance` (or after max_iterations). The linear algebra is Eigen's.
// Free functions; thread-safe.
#pragma once

#include <functional>

#include "gavel/core/matrix.h"
#include "gavel/core/status.h"

namespace gavel::estimator {

struct PmfOptions {
  int rank = 10;               // k, the number of factors
  double regularization = 1e-2;  // μ
  double tolerance = 1e-3;     // on ‖X − X_prev‖_F / rows / cols
  int max_iterations = 100;
};

struct PmfResult {
  Matrix completed;  // U·Vᵀ at every entry, observed or not (callers keep their observations)
  int iterations = 0;
};

// `mask` is 1 where `a` is observed, 0 where missing (same shape as `a`). Errors:
// InvalidArgument for mismatched shapes or a rank < 1; FailedPrecondition when a least-squares
// system has no finite solution (numpy's LinAlgError).
Result<PmfResult> CompletePmf(const Matrix& a, const Matrix& mask, const PmfOptions& options,
                              const std::function<double()>& normal);

}  // namespace gavel::estimator
