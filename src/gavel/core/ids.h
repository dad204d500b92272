// Strong id types: a JobId cannot be passed where a WorkerId is expected, and neither is a
// bare integer. Ids are plain values, ordered and hashable; cheap to copy; thread-compatible.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace gavel {

template <class Tag, class Rep = std::uint64_t>
class StrongId {
 public:
  using rep_type = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}
  constexpr Rep value() const { return value_; }
  friend constexpr auto operator<=>(const StrongId&, const StrongId&) = default;
  std::string ToString() const { return std::to_string(value_); }

 private:
  Rep value_{};
};

// A training job, numbered by the scheduler in arrival order (the original's convention:
// ids order jobs by arrival, and policies such as FIFO rely on that order).
using JobId = StrongId<struct JobIdTag>;
// One GPU in the cluster.
using WorkerId = StrongId<struct WorkerIdTag>;
// One machine holding one or more GPUs of a single type.
using ServerId = StrongId<struct ServerIdTag>;

}  // namespace gavel

template <class Tag, class Rep>
struct std::hash<gavel::StrongId<Tag, Rep>> {
  std::size_t operator()(const gavel::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
