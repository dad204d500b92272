#include "gavel/cli/sweep_capacity.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gavel::cli {

double RoundProbe(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return std::strtod(buffer, nullptr);
}

CapacitySearch::CapacitySearch(const CapacitySearchOptions& options) : options_(options) {}

std::optional<double> CapacitySearch::Next() const {
  if (!sustainable_ && !failing_) return RoundProbe(options_.start);
  if (sustainable_ && !failing_) {
    if (*sustainable_ >= options_.max_value) return std::nullopt;
    return RoundProbe(std::min(options_.max_value, *sustainable_ * 2.0));
  }
  if (!sustainable_) {
    if (*failing_ <= options_.min_value) return std::nullopt;
    return RoundProbe(std::max(options_.min_value, *failing_ / 2.0));
  }
  if (*failing_ - *sustainable_ <= options_.precision * *sustainable_) return std::nullopt;
  const double mid = RoundProbe(0.5 * (*sustainable_ + *failing_));
  // Rounding can land on an end when the bracket is a few ulps of 6 digits wide: stop there.
  if (mid <= *sustainable_ || mid >= *failing_) return std::nullopt;
  return mid;
}

void CapacitySearch::Record(double value, bool drained) {
  if (drained) {
    // A drained value at or above a failed one breaks the monotone assumption; the lower
    // failure wins, so the reported rate is one that drained below the first failure seen.
    if (failing_ && value >= *failing_) return;
    if (!sustainable_ || value > *sustainable_) sustainable_ = value;
  } else {
    if (!failing_ || value < *failing_) failing_ = value;
    if (sustainable_ && *sustainable_ >= value) sustainable_.reset();
  }
}

std::string CapacitySearch::note() const {
  if (sustainable_ && !failing_) return "drains every rate tried";
  if (!sustainable_ && failing_ && *failing_ <= options_.min_value) return "drains no rate tried";
  return "";
}

}  // namespace gavel::cli
