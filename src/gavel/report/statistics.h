// Statistics over seeds: Student-t confidence intervals for a mean and for a paired difference.
//
// A sweep measures each policy on the same seeds, so two policies are compared through the
// per-seed differences (a paired t interval), which removes the seed-to-seed variation of the
// workload that both policies see. Everything here is a pure function of its arguments;
// thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace gavel::report {

// The p-quantile of Student's t distribution with `degrees_of_freedom` >= 1, for p in (0, 1):
// inverts the t CDF (regularized incomplete beta function) to about 1e-10.
double StudentTQuantile(double p, int degrees_of_freedom);

// The CDF of Student's t distribution with `degrees_of_freedom` >= 1 at t.
double StudentTCdf(double t, int degrees_of_freedom);

// A mean with the half-width of its two-sided 95% confidence interval. The half-width is absent
// for fewer than two values (no spread to estimate), and 0 when every value is the same.
struct Interval {
  std::size_t n = 0;
  double mean = 0.0;
  std::optional<double> half_width;
  // The interval contains 0: the difference it describes is not significant. An interval
  // without a half-width (one seed) is never significant.
  bool IncludesZero() const;
};

// Mean and 95% Student-t interval (t_{0.975, n-1} × s / sqrt(n)) of `values`.
Interval MeanInterval(const std::vector<double>& values);

// The interval of the mean of a[i] - b[i] (the two vectors are the same seeds, in the same
// order, so they must have the same size).
Interval PairedInterval(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace gavel::report
