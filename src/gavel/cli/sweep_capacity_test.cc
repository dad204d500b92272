#include "gavel/cli/sweep_capacity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gavel::cli {
namespace {

// Runs a search against `drains` to the end; returns the number of values tried.
template <typename Drains>
int RunSearch(CapacitySearch& search, Drains drains) {
  int tries = 0;
  while (const std::optional<double> value = search.Next()) {
    search.Record(*value, drains(*value));
    if (++tries > 200) break;
  }
  return tries;
}

TEST(CapacitySearchTest, BracketsAThresholdAsABruteForceScanDoes) {
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> exponent(-1.5, 2.7);
  for (int trial = 0; trial < 500; ++trial) {
    const double threshold = std::pow(10.0, exponent(random));
    const auto drains = [&](double rate) { return rate <= threshold; };
    CapacitySearchOptions options;
    options.precision = 0.02;
    CapacitySearch search(options);
    const int tries = RunSearch(search, drains);
    ASSERT_TRUE(search.sustainable() && search.failing()) << threshold;
    // The brute-force answer: scan upward in steps of 0.1% from the search's answer and find
    // where draining stops; it must lie inside the bracket, which is at most 2% wide.
    double scan = *search.sustainable();
    while (drains(scan * 1.001)) scan *= 1.001;
    EXPECT_GE(scan, *search.sustainable());
    EXPECT_LT(scan, *search.failing());
    EXPECT_LE(*search.failing(), (1.0 + options.precision) * *search.sustainable() * (1 + 1e-5));
    EXPECT_TRUE(drains(*search.sustainable()));
    EXPECT_FALSE(drains(*search.failing()));
    EXPECT_LE(tries, 20) << threshold;  // doubling, then halving the bracket
  }
}

TEST(CapacitySearchTest, StartsFromTheGridsBracket) {
  CapacitySearch search(CapacitySearchOptions{});
  search.Record(1.0, true);
  search.Record(2.0, true);
  search.Record(3.0, false);
  search.Record(4.0, true);  // above a failure: not believed (the lower failure wins)
  EXPECT_EQ(search.sustainable(), 2.0);
  EXPECT_EQ(search.failing(), 3.0);
  EXPECT_EQ(search.Next(), 2.5);
}

TEST(CapacitySearchTest, SaysWhenNothingOrEverythingDrains) {
  CapacitySearchOptions options;
  options.min_value = 0.01;
  options.max_value = 64.0;
  CapacitySearch none(options);
  RunSearch(none, [](double) { return false; });
  EXPECT_FALSE(none.sustainable());
  EXPECT_EQ(none.note(), "drains no rate tried");
  CapacitySearch all(options);
  RunSearch(all, [](double) { return true; });
  EXPECT_EQ(all.sustainable(), 64.0);
  EXPECT_EQ(all.note(), "drains every rate tried");
}

}  // namespace
}  // namespace gavel::cli
