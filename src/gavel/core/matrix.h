// A small dense row-major matrix of doubles: the allocation X[row][gpu type] and the
// throughput table T[row][gpu type] of a policy problem. Value type; thread-compatible.
#pragma once

#include <cstddef>
#include <vector>

#include "gavel/core/check.h"

namespace gavel {

class Matrix {
 public:
  Matrix() = default;
  Matrix(std::size_t rows, std::size_t cols, double fill = 0.0)
      : rows_(rows), cols_(cols), data_(rows * cols, fill) {}

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  double& operator()(std::size_t r, std::size_t c) {
    GAVEL_CHECK(r < rows_ && c < cols_);
    return data_[r * cols_ + c];
  }
  double operator()(std::size_t r, std::size_t c) const {
    GAVEL_CHECK(r < rows_ && c < cols_);
    return data_[r * cols_ + c];
  }
  double RowSum(std::size_t r) const {
    double sum = 0.0;
    for (std::size_t c = 0; c < cols_; ++c) sum += (*this)(r, c);
    return sum;
  }
  const std::vector<double>& data() const { return data_; }
  std::vector<double>& data() { return data_; }

 private:
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  std::vector<double> data_;
};

}  // namespace gavel
