#include "gavel/policy/shortest_job_first.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

// Jobs below are TestJobs (policy_test_support.h): {id, scale factor, throughputs, steps
// remaining}.

PolicyOutput Allocated(Variant variant, const PolicyInput& input) {
  return Allocated(*MakeShortestJobFirst(variant, PolicyOptions{}), input);
}

// One k80 and one v100. A: 100 steps at (1, 3) steps/s; B: 90 steps at (1, 1); C: 10 steps at
// (1, 2).
// Agnostic estimates use the cluster average (T_k80 + T_v100) / 2: A 100/2 = 50 s, B 90/1 =
// 90 s, C 10/1.5 = 6.7 s. Order C, A, B; each takes the type with the most free GPUs, ties
// by name: C → k80 (1 free each), A → v100, B waits.
// Perf estimates use the fastest type: A 100/3 = 33 s, B 90 s, C 10/2 = 5 s. Order C, A, B;
// C → v100 (its fastest), A → k80 (v100 is taken), B waits.
TEST(ShortestJobFirstTest, HandWorkedOrderAndPlacement) {
  const PolicyInput input = MakeInput(
      {"k80", "v100"}, {1, 1}, {{1, 1, {1, 3}, 100}, {2, 1, {1, 1}, 90}, {3, 1, {1, 2}, 10}});
  const PolicyOutput agnostic = Allocated(Variant::kAgnostic, input);
  EXPECT_EQ(TypeOf(agnostic, 0), 1);
  EXPECT_EQ(TypeOf(agnostic, 1), -1);
  EXPECT_EQ(TypeOf(agnostic, 2), 0);
  const PolicyOutput perf = Allocated(Variant::kPerf, input);
  EXPECT_EQ(TypeOf(perf, 0), 0);
  EXPECT_EQ(TypeOf(perf, 1), -1);
  EXPECT_EQ(TypeOf(perf, 2), 1);
  EXPECT_EQ(perf.status, AllocationStatus::kHeuristic);
  EXPECT_FALSE(perf.objective.has_value());
}

// Two v100s. A (1 GPU, 1 s), B (2 GPUs, 2 s), C (1 GPU, 3 s). A takes one GPU; B does not fit
// and is skipped; C takes the other GPU (FIFO would stop at B).
TEST(ShortestJobFirstTest, JobsThatDoNotFitAreSkippedWithoutBlocking) {
  const PolicyInput input =
      MakeInput({"v100"}, {2}, {{1, 1, {1}, 1}, {2, 2, {2}, 4}, {3, 1, {1}, 3}});
  for (const Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
    const PolicyOutput out = Allocated(variant, input);
    EXPECT_EQ(TypeOf(out, 0), 0);
    EXPECT_EQ(TypeOf(out, 1), -1);
    EXPECT_EQ(TypeOf(out, 2), 0);
  }
}

// Preemptive: a long job running alone loses its GPU as soon as a shorter one is present.
TEST(ShortestJobFirstTest, AShorterArrivalPreemptsALongJob) {
  const TestJob long_job{1, 1, {1}, 1000};
  const TestJob short_job{2, 1, {1}, 10};
  const PolicyOutput before = Allocated(Variant::kPerf, MakeInput({"v100"}, {1}, {long_job}));
  EXPECT_EQ(TypeOf(before, 0), 0);
  const PolicyOutput after =
      Allocated(Variant::kPerf, MakeInput({"v100"}, {1}, {long_job, short_job}));
  EXPECT_EQ(TypeOf(after, 0), -1);
  EXPECT_EQ(TypeOf(after, 1), 0);
}

// Equal estimates keep id order; a job that can run nowhere is never placed and blocks no one.
TEST(ShortestJobFirstTest, TiesGoToTheEarlierJobAndUnrunnableJobsAreLeftOut) {
  const PolicyInput input =
      MakeInput({"v100"}, {1}, {{1, 1, {0}, 0}, {2, 1, {1}, 50}, {3, 1, {1}, 50}});
  for (const Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
    const PolicyOutput out = Allocated(variant, input);
    EXPECT_EQ(TypeOf(out, 0), -1);
    EXPECT_EQ(TypeOf(out, 1), 0);
    EXPECT_EQ(TypeOf(out, 2), -1);
  }
}

// Random 1-GPU instances, checked against definitions rather than the implementation:
//  * exactly min(m, G) jobs run (every job can run on every type);
//  * no waiting job is shorter than a running one (times computed here from the definition,
//    ties by id), i.e. the running set is the min(m, G) shortest jobs;
//  * agnostic: replaying the running jobs in order, each took a type that had the most free
//    GPUs at its turn (ties by name);
//  * perf: a running job's type is its fastest among the types that still had a free GPU
//    when its turn came: every strictly faster type is filled by strictly earlier jobs.
TEST(ShortestJobFirstTest, RandomInstancesAgreeWithTheDefinition) {
  std::mt19937 rng(31337);
  const std::vector<std::string> types = {"k80", "p100", "v100"};
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<double> counts = {static_cast<double>(1 + rng() % 3),
                                        static_cast<double>(1 + rng() % 3),
                                        static_cast<double>(1 + rng() % 3)};
    const double total_gpus = counts[0] + counts[1] + counts[2];
    std::vector<TestJob> jobs;
    const std::size_t m = 1 + rng() % 10;
    for (std::size_t i = 0; i < m; ++i) {
      TestJob job{i, 1, {}, static_cast<double>(1 + rng() % 6) * 100.0};
      for (int j = 0; j < 3; ++j) job.throughput.push_back(static_cast<double>(1 + rng() % 4));
      jobs.push_back(job);
    }
    const PolicyInput input = MakeInput(types, counts, jobs);
    for (const Variant variant : {Variant::kAgnostic, Variant::kPerf}) {
      std::vector<double> time(m);
      for (std::size_t i = 0; i < m; ++i) {
        double rate = 0.0;
        for (std::size_t j = 0; j < 3; ++j) {
          rate = variant == Variant::kAgnostic
                     ? rate + jobs[i].throughput[j] * counts[j] / total_gpus
                     : std::max(rate, jobs[i].throughput[j]);
        }
        time[i] = jobs[i].steps_remaining / rate;
      }
      const auto earlier = [&](std::size_t a, std::size_t b) {
        return time[a] < time[b] || (time[a] == time[b] && a < b);
      };
      const PolicyOutput out = Allocated(variant, input);
      std::vector<int> type(m);
      std::size_t running = 0;
      std::vector<double> used(3, 0.0);
      for (std::size_t i = 0; i < m; ++i) {
        type[i] = TypeOf(out, i);
        if (type[i] >= 0) {
          ++running;
          used[static_cast<std::size_t>(type[i])] += 1.0;
        }
      }
      EXPECT_EQ(static_cast<double>(running), std::min(static_cast<double>(m), total_gpus));
      for (std::size_t j = 0; j < 3; ++j) EXPECT_LE(used[j], counts[j]);
      for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = 0; b < m; ++b) {
          if (type[a] >= 0 && type[b] < 0) {
            EXPECT_TRUE(earlier(a, b)) << a << " vs " << b;
          }
        }
      }
      if (variant == Variant::kAgnostic) {
        std::vector<std::size_t> by_turn;
        for (std::size_t i = 0; i < m; ++i) {
          if (type[i] >= 0) by_turn.push_back(i);
        }
        std::sort(by_turn.begin(), by_turn.end(), earlier);
        std::vector<double> free = counts;
        for (const std::size_t i : by_turn) {
          const auto t = static_cast<std::size_t>(type[i]);
          for (std::size_t j = 0; j < 3; ++j) {
            EXPECT_TRUE(free[t] > free[j] || (free[t] == free[j] && t <= j))
                << "job " << i << " took type " << t << " while type " << j << " had more room";
          }
          free[t] -= 1.0;
        }
        continue;
      }
      for (std::size_t i = 0; i < m; ++i) {
        if (type[i] < 0) continue;
        const auto t = static_cast<std::size_t>(type[i]);
        for (std::size_t j = 0; j < 3; ++j) {
          if (jobs[i].throughput[j] <= jobs[i].throughput[t]) continue;
          double filled_before = 0.0;
          for (std::size_t k = 0; k < m; ++k) {
            if (type[k] == static_cast<int>(j) && earlier(k, i)) filled_before += 1.0;
          }
          EXPECT_EQ(filled_before, counts[j]) << "job " << i << " could have had type " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gavel::policy
