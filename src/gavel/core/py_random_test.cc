// Golden values below were printed by CPython 3.11's random module (an independent
// implementation); the commands that produced them are quoted beside each. Every command
// iterates over the same seeds: 0, 1, 42, 2**32+5 (a two-word key) and 2**40.
#include "gavel/core/py_random.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

namespace gavel {
namespace {

constexpr std::array<std::uint64_t, 5> kSeeds = {0, 1, 42, (std::uint64_t{1} << 32) + 5,
                                                 std::uint64_t{1} << 40};

TEST(PyRandomTest, RandomMatchesCPython) {
  // python3 -c "import random; r=random.Random(0); print([repr(r.random()) for _ in range(3)])"
  PyRandom r(0);
  EXPECT_DOUBLE_EQ(r.Random(), 0.8444218515250481);
  EXPECT_DOUBLE_EQ(r.Random(), 0.7579544029403025);
  EXPECT_DOUBLE_EQ(r.Random(), 0.420571580830845);
}

TEST(PyRandomTest, RandomIsBitExactForEverySeed) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); print([repr(r.random()) for _ in
  // range(3)])"
  const double expected[5][3] = {
      {0.8444218515250481, 0.7579544029403025, 0.420571580830845},
      {0.13436424411240122, 0.8474337369372327, 0.763774618976614},
      {0.6394267984578837, 0.025010755222666936, 0.27502931836911926},
      {0.15727238718789782, 0.2824866316461999, 0.6044540318498407},
      {0.1036394562812375, 0.6705558677439764, 0.4266543913526999},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    for (double want : expected[s]) EXPECT_EQ(r.Random(), want) << "seed " << kSeeds[s];
  }
}

TEST(PyRandomTest, GetRandBitsMatchesCPythonIncludingMoreThan32Bits) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); print([r.getrandbits(k) for k in
  // (1, 7, 31, 32, 33, 40, 63, 64)])"
  const int bits[] = {1, 7, 31, 32, 33, 40, 63, 64};
  const std::uint64_t expected[5][8] = {
      {1, 49, 1627694678, 3823568514, 1806341205, 1061968961082, 4481891911369680482u,
       16938433693753131896u},
      {0, 72, 1819850095, 3445702192, 3280387012, 129944532028, 7018639715332314491u,
       8711387064946514083u},
      {1, 14, 53710184, 3184935163, 1181241943, 151282538206, 945351111358374057u,
       13662908291426823533u},
      {0, 62, 606635418, 3822202474, 6891077597, 386609434369, 1580140662990693877u,
       17571132581927258294u},
      {0, 45, 1440007765, 282029048, 1832466665, 439751955173, 5169208209619117794u,
       13206636033052012546u},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(r.GetRandBits(bits[i]), expected[s][i]) << "seed " << kSeeds[s] << " k " << bits[i];
    }
  }
}

TEST(PyRandomTest, RandRangeMatchesCPythonForNonPowersOfTwo) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); print([r.randrange(n) for n in
  // (3, 26, 1000, 12345, 2**33+1, 10**15)])"
  const std::uint64_t n[] = {3, 26, 1000, 12345, (std::uint64_t{1} << 33) + 1, 1000000000000000u};
  const std::uint64_t expected[5][6] = {
      {1, 24, 911, 6890, 4468846388, 575645728421114},
      {0, 18, 867, 1033, 1095513148, 856766499050875},
      {2, 3, 25, 12149, 1181241943, 157106567403230},
      {0, 15, 289, 9903, 3587694693, 706811407998525},
      {0, 11, 686, 1075, 1832466665, 449396978373349},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    for (std::size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(r.RandRange(n[i]), expected[s][i]) << "seed " << kSeeds[s] << " n " << n[i];
    }
  }
}

TEST(PyRandomTest, ChoiceMatchesCPython) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); print([r.choice(range(26)) for _
  // in range(8)])"
  const std::size_t expected[5][8] = {
      {12, 24, 13, 1, 8, 16, 15, 12}, {4, 18, 25, 24, 2, 8, 3, 15},  {20, 3, 0, 23, 8, 7, 7, 4},
      {5, 15, 9, 19, 0, 11, 20, 5},   {3, 11, 21, 2, 13, 1, 12, 12},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    for (std::size_t want : expected[s]) EXPECT_EQ(r.ChoiceIndex(26), want) << kSeeds[s];
  }
}

TEST(PyRandomTest, ShuffleMatchesCPython) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); x=list(range(10)); r.shuffle(x);
  // print(x)"
  const std::vector<int> expected[5] = {
      {7, 8, 1, 5, 3, 4, 2, 0, 9, 6}, {6, 8, 9, 7, 5, 3, 0, 4, 1, 2},
      {7, 3, 2, 8, 5, 6, 9, 4, 0, 1}, {5, 3, 6, 1, 9, 0, 8, 4, 7, 2},
      {7, 8, 2, 4, 6, 0, 3, 9, 5, 1},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    std::vector<int> x(10);
    std::iota(x.begin(), x.end(), 0);
    r.Shuffle(x);
    EXPECT_EQ(x, expected[s]) << "seed " << kSeeds[s];
  }
}

TEST(PyRandomTest, SampleMatchesCPythonOnPoolAndSetPaths) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); print(r.sample(range(10), 2),
  // r.sample(range(100), 2), r.sample(range(30), 6), r.sample(range(1000), 7))"
  // Pool path: n <= setsize (21, or 21 + 4**ceil(log4(3k)) for k > 5): (10, 2) and (30, 6).
  // Set path: (100, 2) and (1000, 7).
  struct Expected {
    std::vector<std::size_t> small_pool, small_set, large_pool, large_set;
  };
  const Expected expected[5] = {
      {{6, 9}, {5, 33}, {16, 15, 12, 25, 9, 28}, {366, 597, 913, 929, 223, 516, 142}},
      {{2, 1}, {32, 15}, {15, 24, 14, 29, 20, 12}, {807, 214, 96, 499, 29, 914, 855}},
      {{1, 0}, {94, 35}, {7, 29, 4, 23, 3, 21}, {758, 913, 558, 89, 604, 432, 32}},
      {{2, 7}, {36, 77}, {26, 0, 11, 20, 5, 24}, {975, 951, 845, 678, 997, 507, 747}},
      {{1, 5}, {85, 8}, {13, 1, 12, 27, 20, 17}, {79, 733, 692, 402, 704, 562, 327}},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    EXPECT_EQ(r.SampleIndices(10, 2), expected[s].small_pool) << "seed " << kSeeds[s];
    EXPECT_EQ(r.SampleIndices(100, 2), expected[s].small_set) << "seed " << kSeeds[s];
    EXPECT_EQ(r.SampleIndices(30, 6), expected[s].large_pool) << "seed " << kSeeds[s];
    EXPECT_EQ(r.SampleIndices(1000, 7), expected[s].large_set) << "seed " << kSeeds[s];
  }
}

TEST(PyRandomTest, RandIntAndUniformMatchCPython) {
  // python3 -c "import random
  // for s in [0, 1, 42, 2**32+5, 2**40]: r=random.Random(s); print(r.randint(-5, 5),
  // r.randint(1, 6), repr(r.uniform(1.5, 3)), repr(r.uniform(3, 4)))"
  struct Expected {
    std::int64_t a, b;
    double u1, u2;
  };
  const Expected expected[5] = {
      {1, 4, 1.5607265672711663, 3.965464886361917},
      {-3, 5, 2.771150605405849, 3.763774618976614},
      {5, 1, 1.5375161328340003, 3.2750293183691195},
      {-3, 4, 1.9237299474693, 3.6044540318498406},
      {-4, 3, 2.5058338016159647, 3.4266543913526997},
  };
  for (std::size_t s = 0; s < kSeeds.size(); ++s) {
    PyRandom r(kSeeds[s]);
    EXPECT_EQ(r.RandInt(-5, 5), expected[s].a) << "seed " << kSeeds[s];
    EXPECT_EQ(r.RandInt(1, 6), expected[s].b) << "seed " << kSeeds[s];
    EXPECT_EQ(r.Uniform(1.5, 3), expected[s].u1) << "seed " << kSeeds[s];
    EXPECT_EQ(r.Uniform(3, 4), expected[s].u2) << "seed " << kSeeds[s];
  }
}

}  // namespace
}  // namespace gavel
