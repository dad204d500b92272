// Golden values below were printed by CPython 3.11's random module (an independent
// implementation); the commands that produced them are quoted beside each.
#include "gavel/core/py_random.h"

#include <gtest/gtest.h>

namespace gavel {
namespace {

TEST(PyRandomTest, RandomMatchesCPython) {
  // python3 -c "import random; r=random.Random(0); print([repr(r.random()) for _ in range(3)])"
  PyRandom r(0);
  EXPECT_DOUBLE_EQ(r.Random(), 0.8444218515250481);
  EXPECT_DOUBLE_EQ(r.Random(), 0.7579544029403025);
  EXPECT_DOUBLE_EQ(r.Random(), 0.420571580830845);
}

}  // namespace
}  // namespace gavel
