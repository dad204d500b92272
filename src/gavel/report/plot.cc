#include "gavel/report/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace gavel::report {
namespace {

// 1, 2, 5 or 10 × 10^k near x: rounded (for the step) or at least x (for the range).
double NiceNumber(double x, bool round) {
  const double exponent = std::floor(std::log10(x));
  const double fraction = x / std::pow(10.0, exponent);
  double nice = 10.0;
  if (round) {
    nice = fraction < 1.5 ? 1.0 : fraction < 3.0 ? 2.0 : fraction < 7.0 ? 5.0 : 10.0;
  } else {
    nice = fraction <= 1.0 ? 1.0 : fraction <= 2.0 ? 2.0 : fraction <= 5.0 ? 5.0 : 10.0;
  }
  return nice * std::pow(10.0, exponent);
}

std::string Coordinate(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

constexpr double kMarginLeft = 64.0, kMarginTop = 30.0, kMarginBottom = 44.0,
                 kMarginRightPlain = 16.0, kLegendWidth = 210.0;

// An SVG marker shape centred on (x, y).
std::string MarkerSvg(const SeriesStyle& style, double x, double y, double r) {
  std::ostringstream s;
  const std::string fill = "fill=\"" + style.colour + "\"";
  const std::string stroke = "stroke=\"" + style.colour + "\" stroke-width=\"1.6\"";
  if (style.marker == "circle") {
    s << "<circle cx=\"" << Coordinate(x) << "\" cy=\"" << Coordinate(y) << "\" r=\""
      << Coordinate(r) << "\" " << fill << "/>";
  } else if (style.marker == "square") {
    s << "<rect x=\"" << Coordinate(x - r) << "\" y=\"" << Coordinate(y - r) << "\" width=\""
      << Coordinate(2 * r) << "\" height=\"" << Coordinate(2 * r) << "\" " << fill << "/>";
  } else if (style.marker == "triangle") {
    s << "<path d=\"M" << Coordinate(x) << " " << Coordinate(y - 1.2 * r) << "L"
      << Coordinate(x + 1.1 * r) << " " << Coordinate(y + 0.8 * r) << "L" << Coordinate(x - 1.1 * r)
      << " " << Coordinate(y + 0.8 * r) << "Z\" " << fill << "/>";
  } else if (style.marker == "diamond") {
    s << "<path d=\"M" << Coordinate(x) << " " << Coordinate(y - 1.3 * r) << "L"
      << Coordinate(x + r) << " " << Coordinate(y) << "L" << Coordinate(x) << " "
      << Coordinate(y + 1.3 * r) << "L" << Coordinate(x - r) << " " << Coordinate(y) << "Z\" "
      << fill << "/>";
  } else if (style.marker == "cross") {
    s << "<path d=\"M" << Coordinate(x - r) << " " << Coordinate(y - r) << "L" << Coordinate(x + r)
      << " " << Coordinate(y + r) << "M" << Coordinate(x - r) << " " << Coordinate(y + r) << "L"
      << Coordinate(x + r) << " " << Coordinate(y - r) << "\" " << stroke << "/>";
  } else {  // plus
    s << "<path d=\"M" << Coordinate(x - 1.2 * r) << " " << Coordinate(y) << "L"
      << Coordinate(x + 1.2 * r) << " " << Coordinate(y) << "M" << Coordinate(x) << " "
      << Coordinate(y - 1.2 * r) << "L" << Coordinate(x) << " " << Coordinate(y + 1.2 * r) << "\" "
      << stroke << "/>";
  }
  return s.str();
}

std::string StyleAttribute(const SeriesStyle& style) {
  return "data-style=\"" + style.colour + " " + (style.dash.empty() ? "solid" : style.dash) + " " +
         style.marker + "\"";
}

std::string DashAttribute(const SeriesStyle& style) {
  return style.dash.empty() ? "" : " stroke-dasharray=\"" + style.dash + "\"";
}

// The axes, ticks, grid lines and labels of a plot area [left, right] × [top, bottom].
void DrawAxes(std::ostringstream& svg, const Ticks& x, const Ticks& y, double left, double right,
              double top, double bottom, const std::string& x_label,
              const std::string& y_label) {
  const auto x_of = [&](double v) { return left + (right - left) * (v - x.lo) / (x.hi - x.lo); };
  const auto y_of = [&](double v) { return bottom - (bottom - top) * (v - y.lo) / (y.hi - y.lo); };
  for (std::size_t i = 0; i < y.values.size(); ++i) {
    const double py = y_of(y.values[i]);
    svg << "<line x1=\"" << Coordinate(left) << "\" y1=\"" << Coordinate(py) << "\" x2=\""
        << Coordinate(right) << "\" y2=\"" << Coordinate(py) << "\" stroke=\"#e4e4e4\"/>\n"
        << "<text class=\"tick\" x=\"" << Coordinate(left - 6) << "\" y=\"" << Coordinate(py + 4)
        << "\" text-anchor=\"end\" font-size=\"11\">" << y.labels[i] << "</text>\n";
  }
  for (std::size_t i = 0; i < x.values.size(); ++i) {
    const double px = x_of(x.values[i]);
    svg << "<line x1=\"" << Coordinate(px) << "\" y1=\"" << Coordinate(bottom) << "\" x2=\""
        << Coordinate(px) << "\" y2=\"" << Coordinate(bottom + 4) << "\" stroke=\"black\"/>\n"
        << "<text class=\"tick\" x=\"" << Coordinate(px) << "\" y=\"" << Coordinate(bottom + 16)
        << "\" text-anchor=\"middle\" font-size=\"11\">" << x.labels[i] << "</text>\n";
  }
  svg << "<path d=\"M" << Coordinate(left) << " " << Coordinate(top) << "V" << Coordinate(bottom)
      << "H" << Coordinate(right) << "\" fill=\"none\" stroke=\"black\"/>\n";
  svg << "<text x=\"" << Coordinate((left + right) / 2) << "\" y=\"" << Coordinate(bottom + 34)
      << "\" text-anchor=\"middle\" font-size=\"12\">" << EscapeHtml(x_label) << "</text>\n";
  svg << "<text transform=\"translate(14," << Coordinate((top + bottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << EscapeHtml(y_label)
      << "</text>\n";
}

void Legend(std::ostringstream& svg, const std::vector<Series>& series, double x0, double top) {
  for (std::size_t i = 0; i < series.size(); ++i) {
    const SeriesStyle style = StyleOf(series[i].style);
    const double y = top + 8.0 + 17.0 * static_cast<double>(i);
    svg << "<g class=\"legend\" " << StyleAttribute(style) << "><line x1=\"" << Coordinate(x0)
        << "\" y1=\"" << Coordinate(y) << "\" x2=\"" << Coordinate(x0 + 28) << "\" y2=\""
        << Coordinate(y) << "\" stroke=\"" << style.colour << "\" stroke-width=\"2\""
        << DashAttribute(style) << "/>" << MarkerSvg(style, x0 + 14, y, 3.5) << "<text x=\""
        << Coordinate(x0 + 34) << "\" y=\"" << Coordinate(y + 4) << "\" font-size=\"11\">"
        << EscapeHtml(series[i].name) << "</text></g>\n";
  }
}

}  // namespace

Ticks NiceTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0.0, hi = 1.0;
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double pad = lo == 0.0 ? 1.0 : 0.5 * std::fabs(lo);
    lo -= lo == 0.0 ? 0.0 : pad;
    hi += pad;
  }
  target = std::max(2, target);
  const double range = NiceNumber(hi - lo, false);
  Ticks ticks;
  ticks.step = NiceNumber(range / (target - 1), true);
  ticks.lo = std::floor(lo / ticks.step + 1e-9) * ticks.step;
  ticks.hi = std::ceil(hi / ticks.step - 1e-9) * ticks.step;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(ticks.step) + 1e-9)));
  const long long first = std::llround(ticks.lo / ticks.step);
  const long long last = std::llround(ticks.hi / ticks.step);
  for (long long k = first; k <= last; ++k) {
    const double value = static_cast<double>(k) * ticks.step;
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    std::string label = buffer;
    if (label == "-0" || label.rfind("-0.", 0) == 0) {
      if (std::fabs(value) < ticks.step * 1e-6) label = label.substr(1);
    }
    ticks.values.push_back(value);
    ticks.labels.push_back(label);
  }
  return ticks;
}

SeriesStyle StyleOf(std::size_t index) {
  // Tableau's 10 less its grey and olive: 8 hues that stay apart on screen and in print.
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                         "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  static const char* const kDashes[] = {"", "7 4", "2 3", "9 3 2 3"};
  static const char* const kMarkers[] = {"circle", "square", "triangle", "diamond", "cross",
                                         "plus"};
  SeriesStyle style;
  style.colour = kColours[index % 8];
  style.dash = kDashes[(index / 8) % 4];
  style.marker = kMarkers[index % 6];
  return style;
}

std::string EscapeHtml(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string RenderChart(const ChartOptions& o, const std::vector<Series>& input) {
  std::vector<Series> series = input;
  if (o.non_negative) {
    for (Series& s : series) {
      for (PlotPoint& p : s.points) {
        if (p.y_low) p.y_low = std::max(0.0, *p.y_low);
        if (p.x_low) p.x_low = std::max(0.0, *p.x_low);
      }
    }
  }
  // The data's extent, intervals included.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x_min = o.x_from_zero ? 0.0 : kInf, x_max = o.x_from_zero ? 0.0 : -kInf;
  double y_min = o.y_from_zero ? 0.0 : kInf, y_max = o.y_from_zero ? 0.0 : -kInf;
  bool any = false;
  for (const Series& s : series) {
    for (const PlotPoint& p : s.points) {
      any = true;
      x_min = std::min({x_min, p.x, p.x_low.value_or(p.x)});
      x_max = std::max({x_max, p.x, p.x_high.value_or(p.x)});
      y_min = std::min({y_min, p.y, p.y_low.value_or(p.y)});
      y_max = std::max({y_max, p.y, p.y_high.value_or(p.y)});
    }
  }
  if (!any) x_min = 0.0, x_max = 1.0, y_min = 0.0, y_max = 1.0;
  if (o.y_max) y_max = *o.y_max;
  if (o.x_max) x_max = *o.x_max;
  const Ticks xt = NiceTicks(x_min, x_max, 6);
  const Ticks yt = NiceTicks(y_min, y_max, 5);
  const double left = kMarginLeft, top = kMarginTop, bottom = o.height - kMarginBottom;
  const double right = o.width - (o.legend ? kLegendWidth : kMarginRightPlain);
  const auto x_of = [&](double v) { return left + (right - left) * (v - xt.lo) / (xt.hi - xt.lo); };
  const auto y_of = [&](double v) {
    return bottom - (bottom - top) * (std::min(v, yt.hi) - yt.lo) / (yt.hi - yt.lo);
  };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Coordinate(o.width)
      << "\" height=\"" << Coordinate(o.height) << "\" font-family=\"sans-serif\">\n";
  svg << "<text x=\"" << Coordinate(left) << "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">"
      << EscapeHtml(o.title) << "</text>\n";
  DrawAxes(svg, xt, yt, left, right, top, bottom, o.x_label, o.y_label);
  for (const Series& s : series) {
    if (s.points.empty()) continue;
    const SeriesStyle style = StyleOf(s.style);
    std::vector<PlotPoint> points = s.points;
    if (o.lines) {
      std::stable_sort(points.begin(), points.end(),
                       [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
    }
    svg << "<g class=\"series\" " << StyleAttribute(style) << "><title>" << EscapeHtml(s.name)
        << "</title>\n";
    const bool has_band = std::any_of(points.begin(), points.end(), [](const PlotPoint& p) {
      return p.y_low.has_value() && p.y_high.has_value();
    });
    if (o.bands && o.lines && has_band) {
      std::string band;
      for (const PlotPoint& p : points) {
        band += (band.empty() ? "M" : "L") + Coordinate(x_of(p.x)) + " " +
                Coordinate(y_of(p.y_high.value_or(p.y)));
      }
      for (auto it = points.rbegin(); it != points.rend(); ++it) {
        band += "L" + Coordinate(x_of(it->x)) + " " + Coordinate(y_of(it->y_low.value_or(it->y)));
      }
      // Many overlapping bands would hide each other: fainter the more there are.
      svg << "<path class=\"band\" d=\"" << band << "Z\" fill=\"" << style.colour
          << "\" fill-opacity=\"" << (series.size() > 4 ? "0.07" : "0.13")
          << "\" stroke=\"none\"/>\n";
    }
    if (o.lines && points.size() > 1) {
      std::string line;
      for (const PlotPoint& p : points) line += Coordinate(x_of(p.x)) + "," + Coordinate(y_of(p.y)) + " ";
      svg << "<polyline fill=\"none\" stroke=\"" << style.colour << "\" stroke-width=\"1.8\""
          << DashAttribute(style) << " points=\"" << line << "\"/>\n";
    }
    if (!o.lines || !o.bands || points.size() == 1) {  // error bars
      for (const PlotPoint& p : points) {
        if (p.y_low && p.y_high) {
          svg << "<path d=\"M" << Coordinate(x_of(p.x)) << " " << Coordinate(y_of(*p.y_low)) << "V"
              << Coordinate(y_of(*p.y_high)) << "M" << Coordinate(x_of(p.x) - 3) << " "
              << Coordinate(y_of(*p.y_low)) << "h6M" << Coordinate(x_of(p.x) - 3) << " "
              << Coordinate(y_of(*p.y_high)) << "h6\" stroke=\"" << style.colour << "\"/>\n";
        }
        if (p.x_low && p.x_high) {
          svg << "<path d=\"M" << Coordinate(x_of(*p.x_low)) << " " << Coordinate(y_of(p.y)) << "H"
              << Coordinate(x_of(*p.x_high)) << "M" << Coordinate(x_of(*p.x_low)) << " "
              << Coordinate(y_of(p.y) - 3) << "v6M" << Coordinate(x_of(*p.x_high)) << " "
              << Coordinate(y_of(p.y) - 3) << "v6\" stroke=\"" << style.colour << "\"/>\n";
        }
      }
    }
    const std::size_t every =
        std::max<std::size_t>(1, (points.size() + o.max_markers - 1) / std::max<std::size_t>(1, o.max_markers));
    for (std::size_t i = 0; i < points.size(); i += every) {
      svg << MarkerSvg(style, x_of(points[i].x), y_of(points[i].y), 3.5);
    }
    svg << "\n</g>\n";
  }
  if (o.legend) Legend(svg, series, right + 14, top);
  svg << "</svg>\n";
  return svg.str();
}

std::string RenderDotPlot(const std::string& title, const std::string& x_label,
                          const std::vector<Dot>& dots) {
  double x_max = 0.0;
  for (const Dot& d : dots) {
    if (d.value) x_max = std::max({x_max, *d.value, d.high.value_or(*d.value)});
  }
  const Ticks xt = NiceTicks(0.0, x_max > 0.0 ? x_max : 1.0, 6);
  const double row = 22.0, name_width = 230.0, width = 680.0;
  const double top = kMarginTop, bottom = top + row * static_cast<double>(dots.size()) + 8.0;
  const double height = bottom + kMarginBottom;
  const double left = name_width, right = width - 24.0;
  const auto x_of = [&](double v) { return left + (right - left) * (v - xt.lo) / (xt.hi - xt.lo); };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Coordinate(width)
      << "\" height=\"" << Coordinate(height) << "\" font-family=\"sans-serif\">\n";
  svg << "<text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" << EscapeHtml(title)
      << "</text>\n";
  Ticks no_y;
  no_y.lo = 0.0;
  no_y.hi = 1.0;
  DrawAxes(svg, xt, no_y, left, right, top, bottom, x_label, "");
  for (std::size_t i = 0; i < dots.size(); ++i) {
    const Dot& d = dots[i];
    const SeriesStyle style = StyleOf(d.style);
    const double y = top + row * (static_cast<double>(i) + 0.5);
    svg << "<g class=\"series\" " << StyleAttribute(style) << "><text x=\""
        << Coordinate(left - 8) << "\" y=\"" << Coordinate(y + 4)
        << "\" text-anchor=\"end\" font-size=\"11\">" << EscapeHtml(d.name) << "</text>";
    if (d.value) {
      if (d.low && d.high) {
        svg << "<path d=\"M" << Coordinate(x_of(*d.low)) << " " << Coordinate(y) << "H"
            << Coordinate(x_of(*d.high)) << "\" stroke=\"" << style.colour
            << "\" stroke-width=\"2\"/>";
      }
      svg << MarkerSvg(style, x_of(*d.value), y, 4.5);
    } else {
      svg << "<text x=\"" << Coordinate(left + 6) << "\" y=\"" << Coordinate(y + 4)
          << "\" font-size=\"11\" fill=\"#a00\">" << EscapeHtml(d.missing) << "</text>";
    }
    svg << "</g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace gavel::report
