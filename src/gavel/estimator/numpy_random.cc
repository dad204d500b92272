#include "gavel/estimator/numpy_random.h"

#include <cmath>

namespace gavel::estimator {

double NumpyRandomState::RandomSample() {
  const auto a = static_cast<std::uint32_t>(mt_()) >> 5;
  const auto b = static_cast<std::uint32_t>(mt_()) >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
}

double NumpyRandomState::StandardNormal() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * RandomSample() - 1.0;
    x2 = 2.0 * RandomSample() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

}  // namespace gavel::estimator
