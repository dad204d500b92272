// Units that cross interfaces. Time is always a Seconds value, never a bare double.
// Throughputs are steps per second of a whole job (aggregate over all its GPUs) and steps
// may be fractional (the original generates fractional step counts), so both stay double.
#pragma once

#include <compare>

namespace gavel {

class Seconds {
 public:
  constexpr Seconds() = default;
  constexpr explicit Seconds(double value) : value_(value) {}
  constexpr double value() const { return value_; }
  friend constexpr auto operator<=>(const Seconds&, const Seconds&) = default;
  constexpr Seconds operator+(Seconds o) const { return Seconds(value_ + o.value_); }
  constexpr Seconds operator-(Seconds o) const { return Seconds(value_ - o.value_); }
  constexpr Seconds& operator+=(Seconds o) { value_ += o.value_; return *this; }
  constexpr Seconds& operator-=(Seconds o) { value_ -= o.value_; return *this; }
  constexpr Seconds operator*(double k) const { return Seconds(value_ * k); }

 private:
  double value_ = 0.0;
};

}  // namespace gavel
