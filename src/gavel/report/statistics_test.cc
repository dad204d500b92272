#include "gavel/report/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace gavel::report {
namespace {

// Two-sided 95% critical values t_{0.975, df} and one-sided 95% t_{0.95, df}, from a printed
// table (NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.2).
TEST(StudentTQuantileTest, MatchesThePrintedTable) {
  const std::pair<int, double> two_sided[] = {{1, 12.706}, {2, 4.303}, {3, 3.182}, {4, 2.776},
                                              {5, 2.571},  {9, 2.262}, {10, 2.228}, {29, 2.045},
                                              {30, 2.042}, {100, 1.984}};
  for (const auto& [df, t] : two_sided) {
    EXPECT_NEAR(StudentTQuantile(0.975, df), t, 1e-3) << "df " << df;
  }
  const std::pair<int, double> one_sided[] = {{1, 6.314}, {5, 2.015}, {10, 1.812}, {30, 1.697}};
  for (const auto& [df, t] : one_sided) EXPECT_NEAR(StudentTQuantile(0.95, df), t, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.025, 4), -2.776, 1e-3);  // symmetric
}

TEST(StudentTCdfTest, OneDegreeOfFreedomIsTheCauchyDistribution) {
  for (const double t : {-3.0, -0.5, 0.0, 1.0, 7.5}) {
    EXPECT_NEAR(StudentTCdf(t, 1), 0.5 + std::atan(t) / std::numbers::pi, 1e-12) << t;
  }
}

TEST(MeanIntervalTest, HandComputedSmallCases) {
  // {1, 2, 3}: mean 2, s = 1, half-width = t_{0.975,2} / sqrt(3) = 4.302653 / 1.732051.
  const Interval three = MeanInterval({1.0, 2.0, 3.0});
  EXPECT_EQ(three.n, 3u);
  EXPECT_DOUBLE_EQ(three.mean, 2.0);
  ASSERT_TRUE(three.half_width.has_value());
  EXPECT_NEAR(*three.half_width, 2.484138, 1e-5);
  // Identical values: no spread, a zero-width interval.
  EXPECT_EQ(MeanInterval({5.0, 5.0}).half_width, 0.0);
  // One value: no interval at all, and so never significant.
  const Interval one = MeanInterval({7.0});
  EXPECT_FALSE(one.half_width.has_value());
  EXPECT_TRUE(one.IncludesZero());
}

TEST(PairedIntervalTest, PairingFindsADifferenceTheSeparateIntervalsHide) {
  const std::vector<double> a = {10.0, 12.0, 14.0};
  const std::vector<double> b = {9.0, 10.0, 12.0};
  // Differences {1, 2, 2}: mean 5/3, s = sqrt(1/3), half-width = 4.302653 × s / sqrt(3).
  const Interval paired = PairedInterval(a, b);
  EXPECT_NEAR(paired.mean, 5.0 / 3.0, 1e-12);
  ASSERT_TRUE(paired.half_width.has_value());
  EXPECT_NEAR(*paired.half_width, 4.302653 / 3.0, 1e-5);
  EXPECT_FALSE(paired.IncludesZero());
  // Unpaired, the two 95% intervals overlap (each is about ±5).
  const Interval ia = MeanInterval(a), ib = MeanInterval(b);
  EXPECT_GT(ib.mean + *ib.half_width, ia.mean - *ia.half_width);
}

}  // namespace
}  // namespace gavel::report
