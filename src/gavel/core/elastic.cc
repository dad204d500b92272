#include "gavel/core/elastic.h"

#include <cstdio>

#include "gavel/core/parse_number.h"

namespace gavel {

double InterpolateCurve(const std::vector<ScalingPoint>& points, double workers) {
  if (points.empty()) return 0.0;
  const ScalingPoint& first = points.front();
  if (workers <= first.workers) return first.speedup * workers / first.workers;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const ScalingPoint& a = points[i - 1];
    const ScalingPoint& b = points[i];
    if (workers <= b.workers) {
      const double f = (workers - a.workers) / static_cast<double>(b.workers - a.workers);
      return a.speedup + f * (b.speedup - a.speedup);
    }
  }
  return points.back().speedup;
}

Result<std::vector<ScalingPoint>> ParseScalingCurve(std::string_view text) {
  std::vector<ScalingPoint> points;
  std::string_view rest = text;
  while (true) {
    const std::size_t semi = rest.find(';');
    const std::string_view item = rest.substr(0, semi);
    const std::size_t colon = item.find(':');
    const auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("scaling curve \"" + std::string(text) + "\": item \"" +
                                     std::string(item) + "\" " + why);
    };
    if (colon == std::string_view::npos) return bad("is not workers:speedup");
    const std::optional<int> workers = ParseInteger<int>(item.substr(0, colon));
    const std::optional<double> speedup = ParseFiniteDouble(item.substr(colon + 1));
    if (!workers || *workers < 1 || *workers > kMaxElasticWorkers) {
      return bad("has a worker count outside [1, " + std::to_string(kMaxElasticWorkers) + "]");
    }
    if (!points.empty() && *workers <= points.back().workers) {
      return bad("does not have more workers than the item before it");
    }
    if (!speedup || !(*speedup > 0.0)) return bad("has a speedup that is not a number > 0");
    points.push_back(ScalingPoint{*workers, *speedup});
    if (semi == std::string_view::npos) break;
    rest = rest.substr(semi + 1);
  }
  return points;
}

std::string FormatScalingCurve(const std::vector<ScalingPoint>& points) {
  std::string out;
  for (const ScalingPoint& p : points) {
    if (!out.empty()) out += ';';
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%d:%.17g", p.workers, p.speedup);
    out += buffer;
  }
  return out;
}

Status ValidateElastic(const ElasticSpec& spec, int scale_factor) {
  if (spec.min_workers < 1 || spec.min_workers > scale_factor) {
    return Status::InvalidArgument("min_workers " + std::to_string(spec.min_workers) +
                                   " is not in [1, scale_factor " +
                                   std::to_string(scale_factor) + "]");
  }
  if (spec.max_workers < scale_factor || spec.max_workers > kMaxElasticWorkers) {
    return Status::InvalidArgument("max_workers " + std::to_string(spec.max_workers) +
                                   " is not in [scale_factor " + std::to_string(scale_factor) +
                                   ", " + std::to_string(kMaxElasticWorkers) + "]");
  }
  for (std::size_t i = 0; i < spec.scaling.size(); ++i) {
    const ScalingPoint& p = spec.scaling[i];
    if (p.workers < 1 || p.workers > kMaxElasticWorkers || !(p.speedup > 0.0) ||
        (i > 0 && p.workers <= spec.scaling[i - 1].workers)) {
      return Status::InvalidArgument("scaling curve " + FormatScalingCurve(spec.scaling) +
                                     ": points need increasing worker counts and speedups > 0");
    }
  }
  return Status::Ok();
}

}  // namespace gavel
