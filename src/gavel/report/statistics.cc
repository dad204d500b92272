#include "gavel/report/statistics.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace gavel::report {
namespace {

// The continued fraction of the incomplete beta function (modified Lentz's method).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 10'000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1.0) < kEpsilon) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function.
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  // The fraction converges fast on this side of the mean; use the symmetry on the other.
  if (x < (a + 1.0) / (a + b + 2.0)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1.0 - front * BetaContinuedFraction(b, a, 1.0 - x) / b;
}

}  // namespace

double StudentTCdf(double t, int degrees_of_freedom) {
  if (degrees_of_freedom < 1) throw std::invalid_argument("StudentTCdf: degrees of freedom < 1");
  const double nu = degrees_of_freedom;
  const double tail = 0.5 * RegularizedBeta(nu / 2.0, 0.5, nu / (nu + t * t));
  return t >= 0.0 ? 1.0 - tail : tail;
}

double StudentTQuantile(double p, int degrees_of_freedom) {
  if (degrees_of_freedom < 1 || !(p > 0.0 && p < 1.0)) {
    throw std::invalid_argument("StudentTQuantile: needs p in (0, 1) and df >= 1");
  }
  if (p == 0.5) return 0.0;
  if (p < 0.5) return -StudentTQuantile(1.0 - p, degrees_of_freedom);
  // Bracket, then bisect: the CDF is monotone, and 200 halvings reach double precision.
  double lo = 0.0;
  double hi = 1.0;
  while (StudentTCdf(hi, degrees_of_freedom) < p) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (StudentTCdf(mid, degrees_of_freedom) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

bool Interval::IncludesZero() const {
  if (!half_width) return true;
  return std::fabs(mean) <= *half_width;
}

Interval MeanInterval(const std::vector<double>& values) {
  Interval interval;
  interval.n = values.size();
  if (values.empty()) return interval;
  double sum = 0.0;
  for (const double v : values) sum += v;
  interval.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return interval;
  double squares = 0.0;
  for (const double v : values) squares += (v - interval.mean) * (v - interval.mean);
  const double n = static_cast<double>(values.size());
  const double standard_error = std::sqrt(squares / (n - 1.0) / n);
  interval.half_width =
      StudentTQuantile(0.975, static_cast<int>(values.size()) - 1) * standard_error;
  return interval;
}

Interval PairedInterval(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("PairedInterval: sizes differ");
  std::vector<double> differences(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) differences[i] = a[i] - b[i];
  return MeanInterval(differences);
}

}  // namespace gavel::report
