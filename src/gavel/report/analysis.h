// The comparison of policies over a sweep's points: what a report, a table and summary.json
// show. Input: one Observation per simulated point (cluster, policy, rate, seed); output, per
// cluster and rate, each policy's outcome and per-metric means with 95% intervals over seeds,
// and per metric a ranking built from paired differences on the seeds every ranked policy ran.
//
// Rules (docs/simulator.md, "Sweeps: comparisons to decide on"):
// - A policy is ranked at a rate only if it drained it (finished every window job) on every
//   seed it ran there; otherwise it is reported saturated (or starved), never ranked on the
//   seeds it passed.
// - Ranked policies are compared on the seeds they all ran (the intersection), pairwise per
//   seed. A policy whose paired interval against the best (by mean) contains 0 ties with the
//   best. A policy's rank is 1 + the number of policies significantly better than it (their
//   paired interval excludes 0), so equal ranks are ties and entries are in rank order.
// - A metric is ranked only in its meaningful direction (MetricSpec::direction); kNotRanked
//   metrics get means and intervals but no ranking.
// Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gavel/report/statistics.h"

namespace gavel::report {

enum class Direction { kLowerIsBetter, kHigherIsBetter, kNotRanked };

struct MetricSpec {
  std::string column;  // the metric's name in Observation::metrics (the sweep CSV's column)
  std::string label;   // what people read: "average JCT"
  Direction direction = Direction::kNotRanked;
  double scale = 1.0;  // shown value = value / scale
  std::string unit;    // of the shown value: "h", "" ...
};

enum class Outcome { kDrained, kSaturated, kStarved };
const char* OutcomeName(Outcome outcome);  // "drained", "saturated", "starved"

// One simulated point. Metrics a run did not produce are absent from `metrics`.
struct Observation {
  std::string cluster;
  std::string policy;
  double rate = 0.0;  // input jobs/hour; 0 = static (every job at time 0)
  std::uint64_t seed = 0;
  Outcome outcome = Outcome::kDrained;
  std::map<std::string, double> metrics;
};

// One policy at one (cluster, rate).
struct PolicyAtPoint {
  std::vector<std::uint64_t> seeds;          // every seed it ran, ascending
  std::vector<std::uint64_t> drained_seeds;  // those it drained
  Outcome outcome = Outcome::kDrained;       // kDrained iff every seed drained
  // Over the drained seeds (the whole set when `outcome` is kDrained).
  std::map<std::string, Interval> metrics;
};

struct RankEntry {
  std::string policy;
  double mean = 0.0;  // over the ranking's seeds
  int rank = 1;       // 1 + the number of policies significantly better
  bool tied_with_best = false;
  Interval versus_best;  // paired (this - best) over the ranking's seeds; the best: n only
};

struct Ranking {
  std::string column;
  std::vector<std::uint64_t> seeds;  // the paired seeds
  std::vector<RankEntry> entries;    // the best mean first, then by rank (then mean)
};

// What a ranking decides: the best policy, its margin over the runner-up (in the better
// direction, so positive), and whether that margin is significant at 95%.
struct Decision {
  std::string best;
  std::vector<std::string> tied;  // other policies tied with the best
  std::string runner_up;          // the best of the rest (empty with one entry)
  Interval margin;                // runner-up minus best, signed so that > 0 favours the best
  bool significant = false;
};
Decision Decide(const Ranking& ranking, const MetricSpec& metric);

struct PointAnalysis {
  std::string cluster;
  double rate = 0.0;
  std::map<std::string, PolicyAtPoint> policies;
  std::vector<Ranking> rankings;  // in metric order; metrics with fewer than 2 policies skipped
  const Ranking* RankingOf(const std::string& column) const;  // nullptr if not ranked
};

// The highest input rate a policy drains on every seed, from a bisection (or a scan).
struct Capacity {
  std::string cluster;
  std::string policy;
  std::optional<double> sustainable;  // highest rate that drained on every seed
  std::optional<double> failing;      // lowest rate above it that did not
  double precision = 0.0;             // relative: the search stopped at failing <= (1+p)×sustainable
  std::string note;                   // why no bracket was found, when it was not
};

struct Analysis {
  std::vector<std::string> policies;  // display order
  std::vector<MetricSpec> metrics;
  std::vector<PointAnalysis> points;  // by cluster, then rate ascending
  std::vector<Capacity> capacities;
  std::vector<std::string> clusters() const;  // of `points`, then of `capacities`
};

// The analysis of `observations`. `policies` fixes the display order (policies only seen in
// the observations follow in first-seen order).
Analysis Analyze(const std::vector<Observation>& observations, std::vector<std::string> policies,
                 const std::vector<MetricSpec>& metrics);

// summary.json (docs/formats.md): per cluster, rate and policy the seeds, drained seeds,
// outcome and, per metric, n, mean, ci95 half-width (null below 2 seeds) and, where ranked,
// rank, tie and the paired difference to the best with its ci95; per cluster the capacities.
std::string SummaryJson(const Analysis& analysis);

// Shown numbers: `value` / metric.scale to 3 significant decimals' worth ("1.23", "0.0456").
std::string FormatValue(double value, const MetricSpec& metric);

}  // namespace gavel::report
