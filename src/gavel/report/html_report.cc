#include "gavel/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "gavel/report/plot.h"

namespace gavel::report {
namespace {

std::string Number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::size_t StyleIndex(const Analysis& a, const std::string& policy) {
  return static_cast<std::size_t>(std::find(a.policies.begin(), a.policies.end(), policy) -
                                  a.policies.begin());
}

const MetricSpec* FindMetric(const Analysis& a, const std::string& column) {
  for (const MetricSpec& m : a.metrics) {
    if (m.column == column) return &m;
  }
  return nullptr;
}

std::string WithUnit(const std::string& value, const MetricSpec& metric) {
  return metric.unit.empty() ? value : value + " " + metric.unit;
}

// "1.23 ± 0.05 h", or "1.23 h (1 seed)".
std::string MeanText(const Interval& interval, const MetricSpec& metric) {
  std::string text = FormatValue(interval.mean, metric);
  if (interval.half_width) {
    text += " ± " + FormatValue(*interval.half_width, metric);
  } else if (interval.n == 1) {
    return WithUnit(text, metric) + " (1 seed)";
  }
  return WithUnit(text, metric);
}

std::string UnavailableText(const PolicyAtPoint& cell) {
  return std::string(OutcomeName(cell.outcome)) + " (" + std::to_string(cell.drained_seeds.size()) +
         "/" + std::to_string(cell.seeds.size()) + " seeds drained)";
}

std::vector<const PointAnalysis*> PointsOf(const Analysis& a, const std::string& cluster) {
  std::vector<const PointAnalysis*> points;
  for (const PointAnalysis& p : a.points) {
    if (p.cluster == cluster) points.push_back(&p);
  }
  return points;
}

void DecisionSection(const Analysis& a, const std::string& cluster, std::ostringstream& html) {
  const std::vector<const PointAnalysis*> points = PointsOf(a, cluster);
  html << "<table class=\"decision\">\n<tr><th>objective</th>";
  for (const PointAnalysis* p : points) html << "<th>" << RateLabel(p->rate) << "</th>";
  html << "</tr>\n";
  for (const MetricSpec& metric : a.metrics) {
    if (metric.direction == Direction::kNotRanked) continue;
    bool any = false;
    for (const PointAnalysis* p : points) any = any || p->RankingOf(metric.column) != nullptr;
    if (!any) continue;
    html << "<tr><th>" << EscapeHtml(metric.label) << " ("
         << (metric.direction == Direction::kLowerIsBetter ? "lower" : "higher")
         << " is better)</th>";
    for (const PointAnalysis* p : points) {
      const Ranking* ranking = p->RankingOf(metric.column);
      if (ranking == nullptr) {
        html << "<td class=\"na\">no two policies drained</td>";
        continue;
      }
      const Decision d = Decide(*ranking, metric);
      html << "<td><b>" << EscapeHtml(d.best) << "</b>";
      if (!d.tied.empty()) {
        std::string names;
        for (std::size_t i = 0; i < d.tied.size(); ++i) {
          names += (i ? ", " : "") + EscapeHtml(d.tied[i]);
        }
        // A long list of ties is one fact (the seeds cannot separate them): say how many and
        // keep the names in the tooltip.
        if (d.tied.size() > 3) {
          html << " <span title=\"" << names << "\">tied with " << d.tied.size()
               << " others</span>";
        } else {
          html << " tied with " << names;
        }
      }
      if (!d.runner_up.empty() && d.significant) {
        const double best_mean = ranking->entries.front().mean;
        html << "<br/><span class=\"sig\">significant</span>: "
             << WithUnit(FormatValue(d.margin.mean, metric), metric) << " ± "
             << FormatValue(d.margin.half_width.value_or(0.0), metric) << " better than "
             << EscapeHtml(d.runner_up);
        if (best_mean != 0.0) {
          char buffer[32];
          std::snprintf(buffer, sizeof buffer, " (%.1f%%)", 100.0 * d.margin.mean / std::fabs(best_mean));
          html << buffer;
        }
      } else if (!d.runner_up.empty()) {
        html << "<br/><span class=\"tie\">not significant</span> over "
             << ranking->seeds.size() << " seed(s)";
      }
      html << "</td>";
    }
    html << "</tr>\n";
  }
  html << "<tr><th>not ranked (did not drain on every seed)</th>";
  for (const PointAnalysis* p : points) {
    std::string names;
    for (const std::string& policy : a.policies) {
      const auto it = p->policies.find(policy);
      if (it == p->policies.end() || it->second.outcome == Outcome::kDrained) continue;
      names += (names.empty() ? "" : "<br/>") + EscapeHtml(policy) + ": " + UnavailableText(it->second);
    }
    html << "<td>" << (names.empty() ? "&ndash;" : names) << "</td>";
  }
  html << "</tr>\n</table>\n";

  std::vector<const Capacity*> capacities;
  for (const Capacity& c : a.capacities) {
    if (c.cluster == cluster) capacities.push_back(&c);
  }
  if (capacities.empty()) return;
  html << "<h3>Sustainable load</h3>\n<p>The highest input rate each policy drains on every "
          "seed (bisection on rate; the next rate tried above it did not drain).</p>\n"
       << "<table class=\"capacity\"><tr><th>policy</th><th>sustainable (jobs/h)</th>"
          "<th>fails at (jobs/h)</th></tr>\n";
  for (const Capacity* c : capacities) {
    html << "<tr><td>" << EscapeHtml(c->policy) << "</td><td>"
         << (c->sustainable ? Number(*c->sustainable) : "&ndash;") << "</td><td>"
         << (c->failing ? Number(*c->failing) : "&ndash;")
         << (c->note.empty() ? "" : " (" + EscapeHtml(c->note) + ")") << "</td></tr>\n";
  }
  html << "</table>\n";
  std::vector<Dot> dots;
  for (const Capacity* c : capacities) {
    Dot dot;
    dot.name = c->policy;
    dot.style = StyleIndex(a, c->policy);
    if (c->sustainable) {
      dot.value = *c->sustainable;
      dot.low = *c->sustainable;
      dot.high = c->failing.value_or(*c->sustainable);
    } else {
      dot.missing = c->note.empty() ? "none found" : c->note;
    }
    dots.push_back(dot);
  }
  html << RenderDotPlot("Sustainable load, cluster " + cluster + " (bar: up to the failing rate)",
                        "input rate (jobs/hour)", dots);
}

// Mean ± ci of `column` per policy against rate (drained points only).
std::vector<Series> AgainstLoad(const Analysis& a, const std::string& cluster,
                                const std::string& column) {
  std::vector<Series> series;
  for (const std::string& policy : a.policies) {
    Series s;
    s.name = policy;
    s.style = StyleIndex(a, policy);
    for (const PointAnalysis* p : PointsOf(a, cluster)) {
      if (p->rate <= 0.0) continue;
      const auto it = p->policies.find(policy);
      if (it == p->policies.end() || it->second.outcome != Outcome::kDrained) continue;
      const auto m = it->second.metrics.find(column);
      if (m == it->second.metrics.end()) continue;
      const MetricSpec* metric = FindMetric(a, column);
      const double scale = metric ? metric->scale : 1.0;
      PlotPoint point;
      point.x = p->rate;
      point.y = m->second.mean / scale;
      if (m->second.half_width) {
        point.y_low = (m->second.mean - *m->second.half_width) / scale;
        point.y_high = (m->second.mean + *m->second.half_width) / scale;
      }
      s.points.push_back(point);
    }
    series.push_back(std::move(s));
  }
  return series;
}

void ParetoPlots(const Analysis& a, const std::string& cluster, std::ostringstream& html) {
  const MetricSpec* x_metric = FindMetric(a, "average_jct_seconds");
  if (x_metric == nullptr) return;
  std::ostringstream panels;
  int count = 0;
  for (const PointAnalysis* p : PointsOf(a, cluster)) {
    // Fairness when the sweep measured it, else the tail.
    const MetricSpec* y_metric = nullptr;
    for (const char* column : {"max_rho", "jct_p99_seconds"}) {
      for (const auto& [policy, cell] : p->policies) {
        if (cell.metrics.contains(column) && y_metric == nullptr) y_metric = FindMetric(a, column);
      }
    }
    if (y_metric == nullptr) continue;
    std::vector<Series> series;
    for (const std::string& policy : a.policies) {
      const auto it = p->policies.find(policy);
      if (it == p->policies.end() || it->second.outcome != Outcome::kDrained) continue;
      const auto x = it->second.metrics.find(x_metric->column);
      const auto y = it->second.metrics.find(y_metric->column);
      if (x == it->second.metrics.end() || y == it->second.metrics.end()) continue;
      PlotPoint point;
      point.x = x->second.mean / x_metric->scale;
      point.y = y->second.mean / y_metric->scale;
      if (x->second.half_width) {
        point.x_low = (x->second.mean - *x->second.half_width) / x_metric->scale;
        point.x_high = (x->second.mean + *x->second.half_width) / x_metric->scale;
      }
      if (y->second.half_width) {
        point.y_low = (y->second.mean - *y->second.half_width) / y_metric->scale;
        point.y_high = (y->second.mean + *y->second.half_width) / y_metric->scale;
      }
      Series s;
      s.name = policy;
      s.style = StyleIndex(a, policy);
      s.points = {point};
      series.push_back(std::move(s));
    }
    if (series.size() < 2) continue;
    ChartOptions o;
    o.title = "Pareto view, " + RateLabel(p->rate) + " (lower left is better)";
    o.x_label = x_metric->label + " (" + x_metric->unit + ")";
    o.y_label = y_metric->label + (y_metric->unit.empty() ? "" : " (" + y_metric->unit + ")");
    o.lines = false;
    o.bands = false;
    o.x_from_zero = false;
    o.y_from_zero = false;
    panels << RenderChart(o, series);
    ++count;
  }
  if (count > 0) html << "<h3>Pareto view</h3>\n<div class=\"grid\">" << panels.str() << "</div>\n";
}

void StaticMakespans(const Analysis& a, const std::string& cluster, std::ostringstream& html) {
  const MetricSpec* metric = FindMetric(a, "makespan_seconds");
  for (const PointAnalysis* p : PointsOf(a, cluster)) {
    if (p->rate != 0.0 || metric == nullptr) continue;
    std::vector<Dot> dots;
    for (const std::string& policy : a.policies) {
      const auto it = p->policies.find(policy);
      if (it == p->policies.end()) continue;
      Dot dot;
    dot.name = policy;
    dot.style = StyleIndex(a, policy);
      const auto m = it->second.metrics.find(metric->column);
      if (it->second.outcome == Outcome::kDrained && m != it->second.metrics.end()) {
        dot.value = m->second.mean / metric->scale;
        if (m->second.half_width) {
          dot.low = (m->second.mean - *m->second.half_width) / metric->scale;
          dot.high = (m->second.mean + *m->second.half_width) / metric->scale;
        }
      } else {
        dot.missing = UnavailableText(it->second);
      }
      dots.push_back(dot);
    }
    html << RenderDotPlot("Makespan of the static runs (mean and 95% interval)",
                          "makespan (hours)", dots);
  }
}

// A CDF per policy, as a step line with at most ~400 vertices.
std::vector<Series> Cdfs(const Analysis& a, const std::map<std::string, std::vector<double>>& data) {
  std::vector<Series> series;
  for (const std::string& policy : a.policies) {
    const auto it = data.find(policy);
    if (it == data.end() || it->second.empty()) continue;
    std::vector<double> values = it->second;
    std::sort(values.begin(), values.end());
    Series s;
    s.name = policy;
    s.style = StyleIndex(a, policy);
    const std::size_t step = std::max<std::size_t>(1, values.size() / 400);
    const double n = static_cast<double>(values.size());
    for (std::size_t k = 0; k < values.size(); k += step) {
      s.points.push_back(At(values[k] / 3600.0, static_cast<double>(k + 1) / n));
    }
    s.points.push_back(At(values.back() / 3600.0, 1.0));
    series.push_back(std::move(s));
  }
  return series;
}

void DistributionPlots(const Analysis& a, const PointAnalysis& p, const PointDistributions& d,
                       std::ostringstream& html) {
  const std::string where = ", " + RateLabel(p.rate);
  ChartOptions cdf;
  cdf.title = "JCT distribution" + where;
  cdf.x_label = "JCT (hours)";
  cdf.y_label = "fraction of window jobs";
  cdf.y_max = 1.0;
  cdf.bands = false;
  html << "<div class=\"grid\">" << RenderChart(cdf, Cdfs(a, d.jct_seconds));
  cdf.title = "Queueing delay distribution" + where;
  cdf.x_label = "queueing delay (hours)";
  html << RenderChart(cdf, Cdfs(a, d.queueing_delay_seconds)) << "</div>\n";
  // Timelines overlap into noise: one small panel per policy, on shared axes.
  double longest = 0.0;
  for (const auto& [policy, values] : d.utilization) {
    longest = std::max(longest, static_cast<double>(values.size()) * d.utilization_bucket_seconds / 3600.0);
  }
  if (longest <= 0.0) return;
  html << "<h4>Busy GPUs over time" << EscapeHtml(where) << " (first seed; shared axes)</h4>\n"
       << "<div class=\"grid small\">";
  for (const std::string& policy : a.policies) {
    const auto it = d.utilization.find(policy);
    if (it == d.utilization.end() || it->second.empty()) continue;
    Series s;
    s.name = policy;
    s.style = StyleIndex(a, policy);
    const std::size_t step = std::max<std::size_t>(1, it->second.size() / 200);
    for (std::size_t k = 0; k < it->second.size(); k += step) {
      s.points.push_back(
          At((static_cast<double>(k) + 0.5) * d.utilization_bucket_seconds / 3600.0, it->second[k]));
    }
    ChartOptions o;
    o.title = policy;
    o.x_label = "simulated time (hours)";
    o.y_label = "busy GPUs / GPUs";
    o.width = 330.0;
    o.height = 210.0;
    o.legend = false;
    o.bands = false;
    o.y_max = 1.0;
    o.x_max = longest;
    o.max_markers = 0;
    html << RenderChart(o, {s});
  }
  html << "</div>\n";
}

void RankingTable(const Analysis& a, const PointAnalysis& p, std::ostringstream& html) {
  std::vector<const MetricSpec*> shown;
  for (const MetricSpec& metric : a.metrics) {
    bool any = false;
    for (const auto& [policy, cell] : p.policies) any = any || cell.metrics.contains(metric.column);
    if (any) shown.push_back(&metric);
  }
  html << "<table class=\"ranking\">\n<tr><th>policy</th><th>seeds drained</th>";
  for (const MetricSpec* metric : shown) {
    html << "<th>" << EscapeHtml(metric->label)
         << (metric->direction == Direction::kLowerIsBetter    ? " &darr;"
             : metric->direction == Direction::kHigherIsBetter ? " &uarr;"
                                                               : "")
         << "</th>";
  }
  html << "</tr>\n";
  for (const std::string& policy : a.policies) {
    const auto it = p.policies.find(policy);
    if (it == p.policies.end()) continue;
    const PolicyAtPoint& cell = it->second;
    html << "<tr><td>" << EscapeHtml(policy) << "</td><td>" << cell.drained_seeds.size() << "/"
         << cell.seeds.size() << "</td>";
    for (const MetricSpec* metric : shown) {
      if (cell.outcome != Outcome::kDrained) {
        html << "<td class=\"na\">" << OutcomeName(cell.outcome) << "</td>";
        continue;
      }
      const auto m = cell.metrics.find(metric->column);
      if (m == cell.metrics.end()) {
        html << "<td></td>";
        continue;
      }
      std::string rank;
      bool best = false;
      if (const Ranking* ranking = p.RankingOf(metric->column)) {
        for (const RankEntry& e : ranking->entries) {
          if (e.policy != policy) continue;
          best = e.rank == 1;
          rank = " <span class=\"rank\">#" + std::to_string(e.rank) +
                 (e.rank == 1 && e.policy != ranking->entries.front().policy ? " (tie)" : "") +
                 "</span>";
        }
      }
      html << "<td" << (best ? " class=\"best\"" : "") << ">" << EscapeHtml(MeanText(m->second, *metric))
           << rank << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</table>\n";
}

}  // namespace

std::string RateLabel(double rate) {
  return rate > 0.0 ? Number(rate) + " jobs/h" : std::string("static");
}

std::string RenderHtmlReport(const ReportInput& input) {
  const Analysis& a = *input.analysis;
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
       << EscapeHtml(input.title) << "</title>\n<style>\n"
       << "body{font-family:sans-serif;margin:2em;max-width:1400px}\n"
       << "table{border-collapse:collapse;margin:0.5em 0 1.5em}\n"
       << "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;"
          "font-size:13px}\n"
       << "th{background:#f4f4f4}\ntd.best{font-weight:bold;background:#eef7ee}\n"
       << "td.na{color:#a00}\n.sig{color:#060;font-weight:bold}\n.tie{color:#666}\n"
       << ".rank{color:#555;font-size:11px}\n.grid{display:flex;flex-wrap:wrap;gap:8px}\n"
       << "table.points td{text-align:right;font-size:11px}\n.wide{overflow-x:auto}\n</style>\n</head>\n<body>\n<h1>"
       << EscapeHtml(input.title) << "</h1>\n";
  if (!input.setup.empty()) {
    html << "<ul class=\"setup\">";
    for (const std::string& line : input.setup) html << "<li>" << EscapeHtml(line) << "</li>";
    html << "</ul>\n";
  }
  html << "<p>Means over seeds with 95% Student-t intervals. A policy is ranked at a rate only if "
          "it drained that rate on every seed; ranked policies are compared on the same seeds "
          "(paired differences), and a difference whose interval contains 0 is a tie.</p>\n";
  for (const std::string& cluster : a.clusters()) {
    html << "<h2>Cluster " << EscapeHtml(cluster) << ": decision</h2>\n";
    DecisionSection(a, cluster, html);
  }
  for (const std::string& cluster : a.clusters()) {
    html << "<h2>Cluster " << EscapeHtml(cluster) << ": evidence</h2>\n";
    const std::vector<const PointAnalysis*> points = PointsOf(a, cluster);
    const bool dynamic = std::any_of(points.begin(), points.end(),
                                     [](const PointAnalysis* p) { return p->rate > 0.0; });
    if (dynamic) {
      ChartOptions o;
      o.title = "Average JCT against load (band: 95% interval; saturated points left out)";
      o.x_label = "input rate (jobs/hour)";
      o.y_label = "average JCT (hours)";
      html << RenderChart(o, AgainstLoad(a, cluster, "average_jct_seconds"));
    }
    ParetoPlots(a, cluster, html);
    StaticMakespans(a, cluster, html);
    for (const PointAnalysis* p : points) {
      html << "<h3>" << EscapeHtml(cluster) << ", " << RateLabel(p->rate) << "</h3>\n";
      RankingTable(a, *p, html);
      const auto d = input.distributions.find({cluster, p->rate});
      if (d != input.distributions.end()) DistributionPlots(a, *p, d->second, html);
    }
  }
  if (!input.raw_rows.empty()) {
    html << "<h2>Every simulated point</h2>\n<div class=\"wide\"><table class=\"points\">\n<tr>";
    for (const std::string& column : input.raw_columns) html << "<th>" << EscapeHtml(column) << "</th>";
    html << "</tr>\n";
    for (const std::vector<std::string>& row : input.raw_rows) {
      html << "<tr>";
      for (const std::string& cell : row) html << "<td>" << EscapeHtml(cell) << "</td>";
      html << "</tr>\n";
    }
    html << "</table></div>\n";
  }
  html << "</body>\n</html>\n";
  return html.str();
}

}  // namespace gavel::report
