// Elastic jobs: a job that may run on any worker count in
// [min_workers, max_workers], with a scaling curve saying how its throughput grows with the
// count. Fixed-size jobs (no ElasticSpec) are the default; an elastic job's declared scale
// factor lies in its range and is the count it runs at under every scheduler that does not
// resize (docs/simulator.md, "Elastic jobs").
//
// The curve is a list of (workers, speedup) points; the throughput at k workers on a GPU type
// is T(declared scale factor) · S(k) / S(declared), with S interpolated linearly between the
// points, proportional to k below the first point and flat beyond the last (adding workers past
// the last measured count gains nothing). Without a curve the throughput table's entries of
// the same model at other scale factors are the points, per GPU type (ElasticThroughputs in
// mechanism/policy_input_builder.h). Plain values and pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/status.h"

namespace gavel {

// Largest worker count an elastic job may declare (a typo guard, like bounds.h's).
inline constexpr int kMaxElasticWorkers = 1024;

struct ScalingPoint {
  int workers = 1;
  double speedup = 1.0;  // relative: only ratios between points matter
  friend bool operator==(const ScalingPoint&, const ScalingPoint&) = default;
};

struct ElasticSpec {
  int min_workers = 1;
  int max_workers = 1;
  std::vector<ScalingPoint> scaling;  // strictly increasing workers, speedup > 0; empty = table
  bool elastic() const { return max_workers > min_workers; }
  friend bool operator==(const ElasticSpec&, const ElasticSpec&) = default;
};

// Value at `workers` of the piecewise-linear curve through `points` (sorted by workers, each
// value > 0): proportional to the count below the first point, flat after the last.
double InterpolateCurve(const std::vector<ScalingPoint>& points, double workers);

// "1:1;2:1.9;4:3.4" (workers:speedup, ';'-separated, workers strictly increasing in
// [1, kMaxElasticWorkers], speedups finite and > 0). Errors say which item is wrong.
Result<std::vector<ScalingPoint>> ParseScalingCurve(std::string_view text);
std::string FormatScalingCurve(const std::vector<ScalingPoint>& points);

// Checks 1 <= min <= scale_factor <= max <= kMaxElasticWorkers and the curve; the error
// names the field.
Status ValidateElastic(const ElasticSpec& spec, int scale_factor);

}  // namespace gavel
