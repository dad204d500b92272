#include "gavel/report/plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <set>

namespace gavel::report {
namespace {

// A label is round when it is k × step for a step of 1, 2 or 5 × 10^e, written with no more
// decimals than the step has.
void ExpectRound(const Ticks& t) {
  const double exponent = std::floor(std::log10(t.step) + 1e-9);
  const double mantissa = t.step / std::pow(10.0, exponent);
  EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 ||
              std::fabs(mantissa - 5) < 1e-9)
      << t.step;
  const int decimals = std::max(0, static_cast<int>(-exponent));
  for (const std::string& label : t.labels) {
    const double value = std::stod(label);
    EXPECT_NEAR(value / t.step, std::round(value / t.step), 1e-6) << label;
    const std::size_t dot = label.find('.');
    const int written = dot == std::string::npos ? 0 : static_cast<int>(label.size() - dot - 1);
    EXPECT_LE(written, decimals) << label;
  }
}

TEST(NiceTicksTest, TheIssuesAxisEndGetsRoundLabels) {
  const Ticks t = NiceTicks(0.0, 798.012163122);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"0", "200", "400", "600", "800"}));
  ExpectRound(t);
  const Ticks small = NiceTicks(0.013, 0.087);
  EXPECT_EQ(small.labels.front(), "0.00");
  EXPECT_EQ(small.labels.back(), "0.10");
  ExpectRound(small);
}

TEST(NiceTicksTest, RandomRangesAreCoveredByFewRoundTicks) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(-4.0, 7.0), unit(0.0, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const double scale = std::pow(10.0, exponent(random));
    double lo = unit(random) * scale, hi = unit(random) * scale;
    if (lo > hi) std::swap(lo, hi);
    const Ticks t = NiceTicks(lo, hi, 5);
    EXPECT_LE(t.lo, lo + 1e-12 * scale);
    EXPECT_GE(t.hi, hi - 1e-12 * scale);
    EXPECT_GE(t.values.size(), 2u);
    EXPECT_LE(t.values.size(), 11u);
    ExpectRound(t);
  }
}

TEST(StyleOfTest, SixteenSeriesGetSixteenDistinctStyles) {
  std::set<std::tuple<std::string, std::string>> line_styles;
  std::set<std::string> colours;
  for (std::size_t i = 0; i < kDistinctStyles; ++i) {
    const SeriesStyle s = StyleOf(i);
    line_styles.insert({s.colour, s.dash});
    colours.insert(s.colour);
    if (i > 0) {
      EXPECT_NE(s.marker, StyleOf(i - 1).marker);  // neighbours differ in marker too
    }
  }
  EXPECT_EQ(line_styles.size(), kDistinctStyles);
  EXPECT_EQ(colours.size(), 8u);
}

std::vector<std::string> Matches(const std::string& text, const std::string& pattern) {
  std::vector<std::string> found;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    found.push_back((*it)[1]);
  }
  return found;
}

TEST(RenderChartTest, SixteenPoliciesDrawSixteenDistinctSeriesWithRoundTicks) {
  std::vector<Series> series;
  for (std::size_t i = 0; i < 16; ++i) {
    Series s;
    s.name = "policy " + std::to_string(i);
    s.style = i;
    for (int k = 1; k <= 4; ++k) {
      PlotPoint p = At(0.6 * k, 13.37 * k + static_cast<double>(i) * 0.731);
      p.y_low = p.y - 1.1;
      p.y_high = p.y + 1.3;
      s.points.push_back(p);
    }
    series.push_back(s);
  }
  ChartOptions options;
  options.title = "JCT against load";
  const std::string svg = RenderChart(options, series);
  const std::vector<std::string> styles = Matches(svg, "class=\"series\" data-style=\"([^\"]*)\"");
  EXPECT_EQ(styles.size(), 16u);
  EXPECT_EQ(std::set<std::string>(styles.begin(), styles.end()).size(), 16u);
  const std::vector<std::string> legend = Matches(svg, "class=\"legend\" data-style=\"([^\"]*)\"");
  EXPECT_EQ(std::set<std::string>(legend.begin(), legend.end()).size(), 16u);
  EXPECT_EQ(Matches(svg, "class=\"band\"()").size(), 16u);  // one band per series
  const std::vector<std::string> ticks = Matches(svg, "class=\"tick\"[^>]*>([^<]*)<");
  ASSERT_GE(ticks.size(), 6u);
  for (const std::string& label : ticks) {
    // At most 4 significant digits and a 1/2/5 leading digit pattern: no "798.012163122".
    EXPECT_LE(label.size(), 5u) << label;
    const double value = std::stod(label);
    EXPECT_NEAR(value * 100.0, std::round(value * 100.0), 1e-6) << label;
  }
}

}  // namespace
}  // namespace gavel::report
