// `gavel sweep --find-capacity`: per policy and cluster, the highest input rate (or, for a
// trace, load scale) that drains on every seed, found by bisection.
//
// A CapacitySearch is the bisection's state for one (cluster, policy): it proposes the next
// value to try and takes each tried value's verdict (drained on every seed or not), so the
// sweep can run the probes of all policies at once on its pool. Without a bracket it doubles up
// from the highest value known to drain (or halves down from the lowest known to fail); with
// one, it tries the midpoint until failing <= (1 + precision) × sustainable. It assumes that a
// policy draining a value drains every lower one. Single-threaded value type.
#pragma once

#include <optional>
#include <string>

namespace gavel::cli {

struct CapacitySearchOptions {
  double start = 1.0;      // the first value tried without any verdict
  double precision = 0.05; // relative width at which the bisection stops
  double min_value = 1e-3; // below this, "drains nothing"
  double max_value = 1e6;  // above this, "drains everything tried"
};

class CapacitySearch {
 public:
  explicit CapacitySearch(const CapacitySearchOptions& options);

  // The value to try next; nullopt once the search is over.
  std::optional<double> Next() const;
  // A tried value's verdict (values need not come from Next: the sweep's grid seeds it).
  void Record(double value, bool drained);

  std::optional<double> sustainable() const { return sustainable_; }  // highest drained
  std::optional<double> failing() const { return failing_; }          // lowest failed above it
  std::string note() const;  // why there is no bracket, when there is none

 private:
  CapacitySearchOptions options_;
  std::optional<double> sustainable_;
  std::optional<double> failing_;
};

// `value` to 6 significant digits, so probe rates stay readable and match their CSV rows.
double RoundProbe(double value);

}  // namespace gavel::cli
