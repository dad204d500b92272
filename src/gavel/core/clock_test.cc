// The one clock: ManualClock's millisecond arithmetic is exact (the daemon's tests and its
// stored Unix-ms timestamps depend on it), the real clocks agree with std::chrono.
#include "gavel/core/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace gavel {
namespace {

TEST(ManualClockTest, SetReadsBackTheVeryDouble) {
  ManualClock clock;
  EXPECT_EQ(clock.Now().value(), 0.0);
  for (const double t : {0.1, 1.0 / 3.0, 12345.678901234, 1e9 + 0.3}) {
    clock.Set(Seconds(t));
    EXPECT_EQ(clock.Now().value(), t);
  }
}

TEST(ManualClockTest, MillisecondStepsAccumulateNoRoundingError) {
  // A Unix time in ms, then many odd steps: NowMs must equal the integer sum exactly.
  const std::int64_t start = 1'700'000'000'123;
  ManualClock clock;
  clock.SetMs(start);
  EXPECT_EQ(clock.NowMs(), start);
  std::int64_t expected = start;
  for (int i = 0; i < 100'000; ++i) {
    const std::int64_t step = 1 + (i * 7919) % 997;  // 1..997 ms, irregular
    clock.AdvanceMs(step);
    expected += step;
    ASSERT_EQ(clock.NowMs(), expected) << "after step " << i;
  }
}

TEST(ManualClockTest, AdvanceFromManyThreadsLosesNoStep) {
  ManualClock clock(Seconds(1000.0));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < 10'000; ++i) clock.AdvanceMs(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(clock.NowMs(), 1'000'000 + 40'000);
}

TEST(SystemClockTest, IsUnixTimeInWholeMilliseconds) {
  const SystemClock clock;
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::int64_t now = clock.NowMs();
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
  // Whole milliseconds: Now() * 1000 is an integer up to the double's rounding.
  EXPECT_NEAR(clock.Now().value() * 1000.0,
              static_cast<double>(std::llround(clock.Now().value() * 1000.0)), 1e-3);
}

TEST(SteadyClockTest, StartsNearZeroAndNeverGoesBack) {
  const SteadyClock clock;
  double last = clock.Now().value();
  EXPECT_GE(last, 0.0);
  EXPECT_LT(last, 1.0);
  for (int i = 0; i < 1000; ++i) {
    const double now = clock.Now().value();
    ASSERT_GE(now, last);
    last = now;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(clock.Now().value() - last, 0.019);
}

}  // namespace
}  // namespace gavel
