// NumpyRandomState: numpy's legacy global generator (`np.random.seed(s)`, `np.random.rand()`,
// `np.random.randn()`), bit for bit, so that `--compat gavel` starts the matrix completion
// from the same random factors as the original (which seeds numpy's global state with the run
// seed and draws from nowhere else in a simulation).
//   seed(s)            init_genrand(s) on MT19937 (s < 2^32), the same as std::mt19937(s);
//   random_sample()    (a >> 5, b >> 6) from two 32-bit outputs, 53 bits / 2^53;
//   standard_normal()  the polar (Marsaglia) method, which yields two values per accepted pair
//                      and keeps the second for the next call, as numpy's legacy_gauss does.
// Value type; not synchronised.
#pragma once

#include <cstdint>
#include <random>

namespace gavel::estimator {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(std::uint32_t seed) : mt_(seed) {}
  double RandomSample();
  double StandardNormal();

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace gavel::estimator
