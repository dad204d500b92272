// Independent truth: values numpy itself prints (numpy's documentation and countless
// tutorials show np.random.seed(0) / seed(42) followed by rand() and randn()).
#include "gavel/estimator/numpy_random.h"

#include <gtest/gtest.h>

namespace gavel::estimator {
namespace {

TEST(NumpyRandomStateTest, RandMatchesNumpySeedZero) {
  NumpyRandomState rng(0);
  EXPECT_DOUBLE_EQ(rng.RandomSample(), 0.5488135039273248);
  EXPECT_DOUBLE_EQ(rng.RandomSample(), 0.7151893663724195);
  EXPECT_DOUBLE_EQ(rng.RandomSample(), 0.6027633760716439);
}

TEST(NumpyRandomStateTest, RandnMatchesNumpySeedZero) {
  NumpyRandomState rng(0);
  const double expected[] = {1.764052345967664, 0.4001572083672233, 0.9787379841057392,
                             2.240893199201458, 1.8675579901499675, -0.977277879876411};
  for (double e : expected) EXPECT_NEAR(rng.StandardNormal(), e, 1e-15);
}

TEST(NumpyRandomStateTest, RandnMatchesNumpySeedFortyTwo) {
  NumpyRandomState rng(42);
  const double expected[] = {0.4967141530112327, -0.13826430117118466, 0.6476885381006925,
                             1.5230298564080254};
  for (double e : expected) EXPECT_NEAR(rng.StandardNormal(), e, 1e-15);
}

}  // namespace
}  // namespace gavel::estimator
