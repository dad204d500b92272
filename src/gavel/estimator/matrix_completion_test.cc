// Independent truth for the PMF solver: (1) with every entry observed, the regularised
// factorisation's optimum is the soft-thresholded truncated SVD (singular values σ_i − μ for
// the top k), computed here by Eigen's JacobiSVD, a different algorithm; (2) a known low-rank
// matrix is recovered from a sampled half of its entries.
#include "gavel/estimator/matrix_completion.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

namespace gavel::estimator {
namespace {

Matrix FromEigen(const Eigen::MatrixXd& e) {
  Matrix m(static_cast<std::size_t>(e.rows()), static_cast<std::size_t>(e.cols()));
  for (Eigen::Index i = 0; i < e.rows(); ++i)
    for (Eigen::Index j = 0; j < e.cols(); ++j)
      m(static_cast<std::size_t>(i), static_cast<std::size_t>(j)) = e(i, j);
  return m;
}

TEST(MatrixCompletionTest, FullyObservedGivesSoftThresholdedTruncatedSvd) {
  std::mt19937 gen(7);
  std::normal_distribution<double> gauss;
  // A rank-3 signal plus small noise: clear gaps between the singular values.
  Eigen::MatrixXd l(12, 3), r(9, 3), noise(12, 9);
  for (Eigen::Index i = 0; i < l.size(); ++i) l.data()[i] = gauss(gen);
  for (Eigen::Index i = 0; i < r.size(); ++i) r.data()[i] = gauss(gen);
  for (Eigen::Index i = 0; i < noise.size(); ++i) noise.data()[i] = 0.01 * gauss(gen);
  const Eigen::MatrixXd a = l * r.transpose() + noise;
  PmfOptions options;
  options.rank = 3;
  options.regularization = 0.1;
  options.tolerance = 1e-15;
  options.max_iterations = 5000;
  std::mt19937 init(11);
  const Result<PmfResult> done =
      CompletePmf(FromEigen(a), Matrix(12, 9, 1.0), options, [&]() { return gauss(init); });
  ASSERT_TRUE(done.ok()) << done.status().ToString();

  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
  Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(12, 9);
  for (int i = 0; i < 3; ++i) {
    expected += (svd.singularValues()(i) - options.regularization) * svd.matrixU().col(i) *
                svd.matrixV().col(i).transpose();
  }
  for (std::size_t i = 0; i < 12; ++i)
    for (std::size_t j = 0; j < 9; ++j)
      EXPECT_NEAR(done->completed(i, j), expected(static_cast<Eigen::Index>(i),
                                                  static_cast<Eigen::Index>(j)), 1e-6);
}

TEST(MatrixCompletionTest, RecoversLowRankMatrixFromHalfItsEntries) {
  std::mt19937 gen(3);
  std::normal_distribution<double> gauss;
  std::bernoulli_distribution keep(0.5);
  Eigen::MatrixXd l(40, 2), r(30, 2);
  for (Eigen::Index i = 0; i < l.size(); ++i) l.data()[i] = gauss(gen);
  for (Eigen::Index i = 0; i < r.size(); ++i) r.data()[i] = gauss(gen);
  const Eigen::MatrixXd truth = l * r.transpose();
  Matrix a = FromEigen(truth), mask(40, 30);
  for (std::size_t i = 0; i < 40; ++i) {
    for (std::size_t j = 0; j < 30; ++j) {
      mask(i, j) = keep(gen) ? 1.0 : 0.0;
      if (mask(i, j) == 0.0) a(i, j) = 0.0;  // the solver must not read missing entries
    }
  }
  PmfOptions options;
  options.rank = 2;
  options.regularization = 1e-6;
  options.tolerance = 1e-14;
  options.max_iterations = 3000;
  const Result<PmfResult> done = CompletePmf(a, mask, options, [&]() { return gauss(gen); });
  ASSERT_TRUE(done.ok());
  double error = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < 40; ++i) {
    for (std::size_t j = 0; j < 30; ++j) {
      if (mask(i, j) != 0.0) continue;
      const double t = truth(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      error += (done->completed(i, j) - t) * (done->completed(i, j) - t);
      norm += t * t;
    }
  }
  EXPECT_LT(std::sqrt(error / norm), 1e-3);
}

TEST(MatrixCompletionTest, RejectsMismatchedShapes) {
  const Result<PmfResult> done =
      CompletePmf(Matrix(3, 3), Matrix(3, 2), PmfOptions{}, []() { return 0.5; });
  EXPECT_EQ(done.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gavel::estimator
