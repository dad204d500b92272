// Inline SVG charts for the sweep report: axis ticks at round numbers, series told apart by
// colour, dash and marker together, confidence bands and error bars.
//
// Charts are strings of self-contained SVG (no scripts, no fonts from the network). Each series
// element carries class="series" and data-style="<colour> <dash> <marker>", each tick label
// class="tick", so tests (and people) can check the styles and labels from the markup.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gavel::report {

// Axis ticks from Heckbert's "nice numbers" (Graphics Gems, 1990): a step of 1, 2 or 5 × 10^k,
// an axis from a multiple of the step at or below `lo` to one at or above `hi`, and labels with
// just the decimals the step needs ("0.25" never "0.250000", "800" never "798.012163122").
struct Ticks {
  double lo = 0.0;  // the axis ends: the first and last tick
  double hi = 1.0;
  double step = 0.2;
  std::vector<double> values;
  std::vector<std::string> labels;
};
// About `target` ticks covering [lo, hi]; an empty or degenerate range is widened first.
Ticks NiceTicks(double lo, double hi, int target = 5);

// A series' look. Up to kDistinctStyles series get pairwise different (colour, dash) pairs and
// markers, so 16 policies stay distinguishable in print and for colour-blind readers.
struct SeriesStyle {
  std::string colour;  // "#rrggbb"
  std::string dash;    // SVG stroke-dasharray; "" = solid
  std::string marker;  // circle | square | triangle | diamond | cross | plus
};
inline constexpr std::size_t kDistinctStyles = 16;
SeriesStyle StyleOf(std::size_t index);

struct PlotPoint {
  double x = 0.0;
  double y = 0.0;
  std::optional<double> y_low, y_high;  // a confidence interval around y
  std::optional<double> x_low, x_high;  // around x (Pareto views)
};

inline PlotPoint At(double x, double y) {
  PlotPoint p;
  p.x = x;
  p.y = y;
  return p;
}

struct Series {
  std::string name;
  std::size_t style = 0;  // StyleOf(style)
  std::vector<PlotPoint> points;
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  double width = 680.0;
  double height = 380.0;
  bool legend = true;      // names on the right; small multiples leave it out
  bool lines = true;       // join the points (sorted by x); false = a scatter
  bool bands = true;       // y intervals as shaded bands (lines) or error bars (scatter)
  bool x_from_zero = true;
  bool y_from_zero = true;
  // Quantities that cannot be negative (times, rates): interval ends are clipped at 0.
  bool non_negative = true;
  std::optional<double> y_max;  // a fixed top (utilisation: 1)
  std::optional<double> x_max;
  std::size_t max_markers = 12;  // per series; long lines (CDFs) get markers spread along them
};

std::string RenderChart(const ChartOptions& options, const std::vector<Series>& series);

// One row per named value with its 95% interval as an error bar (a "dot plot"): static
// makespans and sustainable loads, where the x axis is a quantity and the rows are policies.
struct Dot {
  std::string name;
  std::size_t style = 0;
  std::optional<double> value;  // absent: the row says `missing` instead
  std::optional<double> low, high;
  std::string missing = "n/a";
};
std::string RenderDotPlot(const std::string& title, const std::string& x_label,
                          const std::vector<Dot>& dots);

// Text made safe inside HTML and SVG.
std::string EscapeHtml(const std::string& text);

}  // namespace gavel::report
