// Combination: what the round mechanism schedules as one unit — a single job, or two jobs
// that share the same GPU(s) (space sharing, packing policies only). The original calls this
// a JobIdPair. A pair always stores its members in increasing id order.
//
// Ordering matters (the original sorts combinations and breaks heap ties with it): every
// single sorts before every pair; singles by id; pairs lexicographically by (first, second).
// Plain value type; thread-compatible.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "gavel/core/check.h"
#include "gavel/core/ids.h"

namespace gavel::mechanism {

class Combination {
 public:
  Combination() = default;
  static Combination Single(JobId job) { return Combination(job, std::nullopt); }
  // The members in either order; they must differ.
  static Combination Pair(JobId a, JobId b) {
    GAVEL_CHECK(a != b);
    return a < b ? Combination(a, b) : Combination(b, a);
  }

  bool is_pair() const { return second_.has_value(); }
  int size() const { return is_pair() ? 2 : 1; }
  // Member `i` (0 or 1) in increasing id order.
  JobId member(int i) const {
    GAVEL_CHECK(i == 0 || (i == 1 && is_pair()));
    return i == 0 ? first_ : *second_;
  }
  bool Contains(JobId job) const { return first_ == job || (second_ && *second_ == job); }
  // Index of `job` among the members; -1 when it is not one.
  int IndexOf(JobId job) const {
    if (first_ == job) return 0;
    return second_ && *second_ == job ? 1 : -1;
  }

  // "7" or "(3, 7)", as the original prints a JobIdPair.
  std::string ToString() const;

  friend bool operator==(const Combination&, const Combination&) = default;
  friend bool operator<(const Combination& a, const Combination& b) {
    if (a.is_pair() != b.is_pair()) return !a.is_pair();
    if (a.first_ != b.first_) return a.first_ < b.first_;
    return a.is_pair() && *a.second_ < *b.second_;
  }

 private:
  Combination(JobId first, std::optional<JobId> second) : first_(first), second_(second) {}

  JobId first_;
  std::optional<JobId> second_;
};

}  // namespace gavel::mechanism

template <>
struct std::hash<gavel::mechanism::Combination> {
  std::size_t operator()(const gavel::mechanism::Combination& c) const noexcept {
    const std::size_t a = std::hash<gavel::JobId>{}(c.member(0));
    if (!c.is_pair()) return a;
    const std::size_t b = std::hash<gavel::JobId>{}(c.member(1));
    return a * 0x9E3779B97F4A7C15ULL + b + 1;
  }
};
