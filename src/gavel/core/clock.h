// Clock: the one way every part reads the time (design.md habit 4), so that the round
// mechanism, the daemon and the agent run unchanged in simulation, in tests and on a real
// cluster. One interface, two real clocks, one fake:
//
//   SystemClock  wall time: seconds since the Unix epoch (the daemon's timestamps, which it
//                stores and shows);
//   SteadyClock  monotonic: seconds since the clock was made (the agent's leases and
//                deadlines, which must not jump with the wall clock);
//   ManualClock  the one fake: it moves only when its owner sets or advances it — the
//                simulator's clock, and the clock of every test.
//
// Now() is seconds since the implementation's origin; NowMs() is the same in whole
// milliseconds (the daemon's unit: it stores Unix ms). For SystemClock and for a ManualClock
// moved in whole milliseconds, NowMs() is exact (a count of ms below 2^53 survives the trip
// through double seconds: llround recovers it).
//
// Ownership: every user borrows its clock; the clock must outlive it.
// Thread-safety: every implementation may be read from any thread; a ManualClock may also be
// moved from any thread (a test thread moves it while the daemon's core thread reads it).
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>

#include "gavel/core/units.h"

namespace gavel {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Seconds Now() const = 0;
  std::int64_t NowMs() const { return std::llround(Now().value() * 1000.0); }
};

class SystemClock final : public Clock {
 public:
  // Whole milliseconds since the Unix epoch (what the daemon has always stored).
  Seconds Now() const override {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    return Seconds(static_cast<double>(ms) / 1000.0);
  }
};

class SteadyClock final : public Clock {
 public:
  SteadyClock() : start_(std::chrono::steady_clock::now()) {}
  Seconds Now() const override {
    return Seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Seconds start = Seconds(0.0)) : now_(start.value()) {}
  Seconds Now() const override { return Seconds(now_.load()); }
  // Exactly `now`: the simulator reads back the very double it set.
  void Set(Seconds now) { now_.store(now.value()); }
  void Advance(Seconds by) {
    double now = now_.load();
    while (!now_.compare_exchange_weak(now, now + by.value())) {
    }
  }
  // In whole milliseconds (tests of the daemon, whose unit is the ms): computed from the
  // integer count, so that many steps accumulate no rounding error.
  void SetMs(std::int64_t ms) { now_.store(static_cast<double>(ms) / 1000.0); }
  void AdvanceMs(std::int64_t ms) {
    double now = now_.load();
    while (!now_.compare_exchange_weak(
        now, static_cast<double>(std::llround(now * 1000.0) + ms) / 1000.0)) {
    }
  }

 private:
  std::atomic<double> now_;
};

}  // namespace gavel
