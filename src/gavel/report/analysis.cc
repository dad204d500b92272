#include "gavel/report/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

namespace gavel::report {
namespace {

bool Better(double a, double b, Direction direction) {
  return direction == Direction::kHigherIsBetter ? a > b : a < b;
}

// The seed -> value map of `column` for one policy's observations at one point.
using SeedValues = std::map<std::uint64_t, double>;

Ranking RankMetric(const MetricSpec& metric, const std::vector<std::string>& policies,
                   const std::map<std::string, std::map<std::string, SeedValues>>& values,
                   const std::vector<std::uint64_t>& seeds) {
  Ranking ranking;
  ranking.column = metric.column;
  ranking.seeds = seeds;
  // Per policy, its values on the paired seeds, in seed order.
  std::vector<std::pair<std::string, std::vector<double>>> series;
  for (const std::string& policy : policies) {
    const auto by_policy = values.find(policy);
    if (by_policy == values.end()) continue;
    const auto by_metric = by_policy->second.find(metric.column);
    if (by_metric == by_policy->second.end()) continue;
    std::vector<double> v;
    for (const std::uint64_t seed : seeds) {
      const auto it = by_metric->second.find(seed);
      if (it == by_metric->second.end()) break;
      v.push_back(it->second);
    }
    if (v.size() == seeds.size() && !v.empty()) series.emplace_back(policy, std::move(v));
  }
  if (series.size() < 2) return ranking;
  const auto mean = [](const std::vector<double>& v) { return MeanInterval(v).mean; };
  std::stable_sort(series.begin(), series.end(), [&](const auto& a, const auto& b) {
    return Better(mean(a.second), mean(b.second), metric.direction);
  });
  // rank = 1 + the number of policies significantly better (paired interval excluding 0):
  // a rank says how many beat this one for sure, not where noise happened to put its mean.
  for (std::size_t i = 0; i < series.size(); ++i) {
    RankEntry entry;
    entry.policy = series[i].first;
    entry.mean = mean(series[i].second);
    if (i == 0) {
      entry.versus_best = Interval{.n = seeds.size(), .mean = 0.0, .half_width = std::nullopt};
    } else {
      entry.versus_best = PairedInterval(series[i].second, series.front().second);
    }
    entry.tied_with_best = i == 0 || entry.versus_best.IncludesZero();
    for (std::size_t j = 0; j < series.size(); ++j) {
      if (j == i) continue;
      const Interval d = PairedInterval(series[j].second, series[i].second);
      if (!d.IncludesZero() && Better(d.mean, 0.0, metric.direction)) ++entry.rank;
    }
    ranking.entries.push_back(std::move(entry));
  }
  std::stable_sort(ranking.entries.begin() + 1, ranking.entries.end(),
                   [](const RankEntry& a, const RankEntry& b) { return a.rank < b.rank; });
  return ranking;
}

nlohmann::json IntervalJson(const Interval& interval) {
  nlohmann::json j;
  j["n"] = interval.n;
  j["mean"] = interval.mean;
  j["ci95"] = interval.half_width ? nlohmann::json(*interval.half_width) : nlohmann::json();
  return j;
}

}  // namespace

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kDrained:
      return "drained";
    case Outcome::kSaturated:
      return "saturated";
    case Outcome::kStarved:
      return "starved";
  }
  return "?";
}

Decision Decide(const Ranking& ranking, const MetricSpec& metric) {
  Decision decision;
  if (ranking.entries.empty()) return decision;
  decision.best = ranking.entries.front().policy;
  for (std::size_t i = 1; i < ranking.entries.size(); ++i) {
    if (ranking.entries[i].tied_with_best) decision.tied.push_back(ranking.entries[i].policy);
  }
  if (ranking.entries.size() < 2) return decision;
  const RankEntry& runner_up = ranking.entries[1];
  decision.runner_up = runner_up.policy;
  decision.margin = runner_up.versus_best;
  if (metric.direction == Direction::kHigherIsBetter) decision.margin.mean = -decision.margin.mean;
  decision.significant = !runner_up.tied_with_best;
  return decision;
}

const Ranking* PointAnalysis::RankingOf(const std::string& column) const {
  for (const Ranking& ranking : rankings) {
    if (ranking.column == column) return &ranking;
  }
  return nullptr;
}

std::vector<std::string> Analysis::clusters() const {
  std::vector<std::string> names;
  for (const PointAnalysis& point : points) {
    if (std::find(names.begin(), names.end(), point.cluster) == names.end()) {
      names.push_back(point.cluster);
    }
  }
  for (const Capacity& capacity : capacities) {  // a capacity search alone has no points
    if (std::find(names.begin(), names.end(), capacity.cluster) == names.end()) {
      names.push_back(capacity.cluster);
    }
  }
  return names;
}

Analysis Analyze(const std::vector<Observation>& observations, std::vector<std::string> policies,
                 const std::vector<MetricSpec>& metrics) {
  Analysis analysis;
  analysis.metrics = metrics;
  // (cluster, rate) -> policy -> seed -> observation; clusters keep first-seen order.
  std::vector<std::string> cluster_order;
  std::map<std::pair<std::string, double>,
           std::map<std::string, std::map<std::uint64_t, const Observation*>>>
      grouped;
  for (const Observation& o : observations) {
    if (std::find(policies.begin(), policies.end(), o.policy) == policies.end()) {
      policies.push_back(o.policy);
    }
    if (std::find(cluster_order.begin(), cluster_order.end(), o.cluster) == cluster_order.end()) {
      cluster_order.push_back(o.cluster);
    }
    grouped[{o.cluster, o.rate}][o.policy][o.seed] = &o;  // a repeated point: the last one
  }
  analysis.policies = policies;
  for (const std::string& cluster : cluster_order) {
    for (const auto& [where, by_policy] : grouped) {
      if (where.first != cluster) continue;
      PointAnalysis point;
      point.cluster = cluster;
      point.rate = where.second;
      std::map<std::string, std::map<std::string, SeedValues>> values;  // drained policies only
      std::optional<std::set<std::uint64_t>> common;  // seeds every drained policy ran
      std::vector<std::string> drained_policies;
      for (const std::string& policy : policies) {
        const auto it = by_policy.find(policy);
        if (it == by_policy.end()) continue;
        PolicyAtPoint cell;
        bool starved = false;
        std::map<std::string, std::vector<double>> drained_values;
        for (const auto& [seed, o] : it->second) {
          cell.seeds.push_back(seed);
          if (o->outcome != Outcome::kDrained) {
            starved = starved || o->outcome == Outcome::kStarved;
            continue;
          }
          cell.drained_seeds.push_back(seed);
          for (const auto& [column, value] : o->metrics) drained_values[column].push_back(value);
        }
        cell.outcome = cell.drained_seeds.size() == cell.seeds.size()
                           ? Outcome::kDrained
                           : (starved ? Outcome::kStarved : Outcome::kSaturated);
        for (const auto& [column, v] : drained_values) cell.metrics[column] = MeanInterval(v);
        if (cell.outcome == Outcome::kDrained) {
          drained_policies.push_back(policy);
          std::set<std::uint64_t> seeds(cell.seeds.begin(), cell.seeds.end());
          if (!common) {
            common = seeds;
          } else {
            std::set<std::uint64_t> both;
            std::set_intersection(common->begin(), common->end(), seeds.begin(), seeds.end(),
                                  std::inserter(both, both.begin()));
            common = std::move(both);
          }
          for (const auto& [seed, o] : it->second) {
            for (const auto& [column, value] : o->metrics) values[policy][column][seed] = value;
          }
        }
        point.policies[policy] = std::move(cell);
      }
      if (common && !common->empty()) {
        const std::vector<std::uint64_t> seeds(common->begin(), common->end());
        for (const MetricSpec& metric : metrics) {
          if (metric.direction == Direction::kNotRanked) continue;
          Ranking ranking = RankMetric(metric, drained_policies, values, seeds);
          if (!ranking.entries.empty()) point.rankings.push_back(std::move(ranking));
        }
      }
      analysis.points.push_back(std::move(point));
    }
  }
  return analysis;
}

std::string SummaryJson(const Analysis& analysis) {
  nlohmann::json root;
  root["confidence"] = 0.95;
  root["interval"] = "Student t over seeds; rankings paired on the seeds every ranked policy ran";
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricSpec& metric : analysis.metrics) {
    metrics.push_back({{"column", metric.column},
                       {"label", metric.label},
                       {"direction", metric.direction == Direction::kLowerIsBetter ? "lower"
                                     : metric.direction == Direction::kHigherIsBetter
                                         ? "higher"
                                         : "not ranked"}});
  }
  root["metrics"] = metrics;
  nlohmann::json clusters = nlohmann::json::array();
  for (const std::string& cluster : analysis.clusters()) {
    nlohmann::json c;
    c["cluster"] = cluster;
    nlohmann::json rates = nlohmann::json::array();
    for (const PointAnalysis& point : analysis.points) {
      if (point.cluster != cluster) continue;
      nlohmann::json p;
      p["jobs_per_hour"] = point.rate;
      nlohmann::json policies = nlohmann::json::array();
      for (const std::string& policy : analysis.policies) {
        const auto it = point.policies.find(policy);
        if (it == point.policies.end()) continue;
        const PolicyAtPoint& cell = it->second;
        nlohmann::json entry;
        entry["policy"] = policy;
        entry["seeds"] = cell.seeds;
        entry["drained_seeds"] = cell.drained_seeds;
        entry["outcome"] = OutcomeName(cell.outcome);
        nlohmann::json m = nlohmann::json::object();
        for (const auto& [column, interval] : cell.metrics) {
          nlohmann::json metric = IntervalJson(interval);
          if (const Ranking* ranking = point.RankingOf(column)) {
            for (const RankEntry& ranked : ranking->entries) {
              if (ranked.policy != policy) continue;
              metric["rank"] = ranked.rank;
              metric["tied_with_best"] = ranked.tied_with_best;
              metric["difference_to_best"] = ranked.versus_best.mean;
              metric["difference_to_best_ci95"] =
                  ranked.versus_best.half_width ? nlohmann::json(*ranked.versus_best.half_width)
                                                : nlohmann::json();
              metric["paired_seeds"] = ranking->seeds;
            }
          }
          m[column] = metric;
        }
        entry["metrics"] = m;
        policies.push_back(entry);
      }
      p["policies"] = policies;
      rates.push_back(p);
    }
    c["rates"] = rates;
    nlohmann::json capacities = nlohmann::json::array();
    for (const Capacity& capacity : analysis.capacities) {
      if (capacity.cluster != cluster) continue;
      capacities.push_back(
          {{"policy", capacity.policy},
           {"sustainable_jobs_per_hour",
            capacity.sustainable ? nlohmann::json(*capacity.sustainable) : nlohmann::json()},
           {"failing_jobs_per_hour",
            capacity.failing ? nlohmann::json(*capacity.failing) : nlohmann::json()},
           {"relative_precision", capacity.precision},
           {"note", capacity.note}});
    }
    if (!capacities.empty()) c["capacity"] = capacities;
    clusters.push_back(c);
  }
  root["clusters"] = clusters;
  return root.dump(2) + "\n";
}

std::string FormatValue(double value, const MetricSpec& metric) {
  const double shown = value / metric.scale;
  char buffer[64];
  const double magnitude = std::fabs(shown);
  if (magnitude >= 100.0 || shown == 0.0) {
    std::snprintf(buffer, sizeof buffer, "%.0f", shown);
  } else if (magnitude >= 10.0) {
    std::snprintf(buffer, sizeof buffer, "%.1f", shown);
  } else if (magnitude >= 0.1) {
    std::snprintf(buffer, sizeof buffer, "%.2f", shown);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3g", shown);
  }
  return buffer;
}

}  // namespace gavel::report
