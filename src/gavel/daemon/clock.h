// The daemon's clock port: wall-clock time in Unix milliseconds. The daemon reads time only
// through it, so its round logic runs unchanged under a FakeClock in tests and benchmarks.
// SystemClock is stateless; FakeClock is synchronised (a test thread moves it while the
// daemon thread reads it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gavel::daemon {

class WallClock {
 public:
  virtual ~WallClock() = default;
  virtual std::int64_t NowMs() const = 0;
};

class SystemClock final : public WallClock {
 public:
  std::int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

class FakeClock final : public WallClock {
 public:
  explicit FakeClock(std::int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  std::int64_t NowMs() const override { return now_.load(); }
  void Set(std::int64_t ms) { now_.store(ms); }
  void AdvanceMs(std::int64_t ms) { now_.fetch_add(ms); }

 private:
  std::atomic<std::int64_t> now_;
};

}  // namespace gavel::daemon
