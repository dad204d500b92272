#include "gavel/policy/allox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

// Jobs below are TestJobs (policy_test_support.h): {id, scale factor, throughputs, steps
// remaining, seconds waited}.

std::unique_ptr<Policy> MakeAlloxWith(double alpha = 1.0, bool compat = false) {
  PolicyOptions options;
  options.allox_alpha = alpha;
  options.compat_gavel = compat;
  return MakeAllox(options);
}

TEST(AlloxTest, MultiGpuJobsAreRejected) {
  auto allox = MakeAlloxWith();
  const auto result =
      allox->Allocate(MakeInput({"v100"}, {4}, {{1, 1, {1}, 10}, {2, 2, {1}, 10}}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
}

// One v100. A waited 100 s with 10 s of work, B waited 50 s with 1 s. Slot "last" costs
// 1·p + d, slot "first" 2·p + d: A (110, 120), B (51, 52). A last + B first = 162 beats
// A first + B last = 171: B starts.
// Then C arrives (waited 0 s, 0.1 s of work): B keeps its GPU (no preemption) though C is
// shorter, so nothing else starts. When B finishes, A (110, 120) and C (0.1, 0.2): A last +
// C first = 110.2 < 120.1: C starts.
TEST(AlloxTest, ShortestCompletionFirstWithoutPreemption) {
  auto allox = MakeAlloxWith();
  const TestJob a{1, 1, {1}, 10, 100};
  const TestJob b{2, 1, {1}, 1, 50};
  const TestJob c{3, 1, {1}, 0.1};
  const PolicyOutput first = Allocated(*allox, MakeInput({"v100"}, {1}, {a, b}));
  EXPECT_EQ(TypeOf(first, 0), -1);
  EXPECT_EQ(TypeOf(first, 1), 0);
  EXPECT_EQ(first.status, AllocationStatus::kHeuristic);
  EXPECT_FALSE(first.objective.has_value());

  const PolicyOutput second = Allocated(*allox, MakeInput({"v100"}, {1}, {a, b, c}));
  EXPECT_EQ(TypeOf(second, 0), -1);
  EXPECT_EQ(TypeOf(second, 1), 0);
  EXPECT_EQ(TypeOf(second, 2), -1);

  const PolicyOutput third = Allocated(*allox, MakeInput({"v100"}, {1}, {a, c}));
  EXPECT_EQ(TypeOf(third, 0), -1);
  EXPECT_EQ(TypeOf(third, 1), 0);
}

// One k80 and one v100; A: 100 steps at (1, 10) steps/s → processing (100 s, 10 s); B: 10
// steps at (1, 1.25) → (10 s, 8 s); neither has waited. Schedules: A on v100 + B on k80 = 20;
// A on k80 + B on v100 = 108; both on v100: A then B = 10 + 18 = 28, B then A = 8 + 18 = 26;
// both on k80 is worse still. A → v100, B → k80.
TEST(AlloxTest, HeterogeneousMatching) {
  auto allox = MakeAlloxWith();
  const PolicyOutput out = Allocated(
      *allox, MakeInput({"k80", "v100"}, {1, 1}, {{1, 1, {1, 10}, 100}, {2, 1, {1, 1.25}, 10}}));
  EXPECT_EQ(TypeOf(out, 0), 1);
  EXPECT_EQ(TypeOf(out, 1), 0);
}

// One v100; J1..J4 waited 300, 200, 100, 0 s with 100, 50, 100, 1 s of work. Only the
// max(⌊alpha·4⌋, 1 GPU) oldest are matched; among them the shortest goes first (the largest
// multiplier goes to the smallest processing time).
//   alpha 1.0: all four → J4; alpha 0.5: ⌊2⌋ → J1, J2 → J2; alpha 0.3: ⌊1.2⌋ = 1 → J1.
TEST(AlloxTest, AlphaLimitsMatchingToTheOldestJobs) {
  const PolicyInput input = MakeInput(
      {"v100"}, {1},
      {{1, 1, {1}, 100, 300}, {2, 1, {1}, 50, 200}, {3, 1, {1}, 100, 100}, {4, 1, {1}, 1}});
  const std::map<double, std::size_t> expected = {{1.0, 3}, {0.5, 1}, {0.3, 0}};
  for (const auto& [alpha, job] : expected) {
    auto allox = MakeAlloxWith(alpha);
    const PolicyOutput out = Allocated(*allox, input);
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(TypeOf(out, i), i == job ? 0 : -1) << "alpha " << alpha << " job " << i;
    }
  }
}

// The only free GPU is a type the only waiting job cannot run on. The original starts it
// there anyway (its zero throughput becomes 1e-10, the matching has no other slot) and, being
// non-preemptive, keeps it there for good. By default the job is left waiting.
TEST(AlloxTest, NeverStartsAJobWhereItCannotRunByDefault) {
  const PolicyInput input = MakeInput({"k80"}, {1}, {{1, 1, {0}, 10}});
  for (const bool compat : {false, true}) {
    auto allox = MakeAlloxWith(1.0, compat);
    for (int call = 0; call < 2; ++call) {
      const PolicyOutput out = Allocated(*allox, input);
      EXPECT_EQ(TypeOf(out, 0), compat ? 0 : -1) << "call " << call;
    }
  }
}

TEST(AlloxTest, EmptyInputGivesEmptyAllocation) {
  auto allox = MakeAlloxWith();
  const PolicyOutput out = Allocated(*allox, MakeInput({"k80"}, {2}, {}));
  EXPECT_EQ(out.allocation.rows(), 0u);
}

// Brute force on tiny instances with no job running yet: over every order of the jobs and
// every GPU for each job (jobs on one GPU run in that order), the least Σ (waited + completion
// time), the sum of completion times AlloX minimises. The optimum need not be unique (two
// jobs that each run last on one of two GPUs of a type cost the same either way round), so
// the jobs the policy starts, with their types, must be the first jobs of SOME optimal
// schedule.
TEST(AlloxTest, StartsTheFirstJobsOfABruteForceOptimalSchedule) {
  std::mt19937 rng(77);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const std::vector<std::string> types = {"k80", "v100"};
  for (int trial = 0; trial < 150; ++trial) {
    const std::vector<double> counts = {static_cast<double>(1 + rng() % 2),
                                        static_cast<double>(1 + rng() % 2)};
    std::vector<std::size_t> gpu_type;
    for (std::size_t j = 0; j < 2; ++j) {
      for (int g = 0; g < static_cast<int>(counts[j]); ++g) gpu_type.push_back(j);
    }
    const std::size_t m = 1 + rng() % 4;
    std::vector<TestJob> jobs;
    for (std::size_t i = 0; i < m; ++i) {
      // Drawn in this order: waited, steps, the two throughputs.
      const double waited = 100.0 * uniform(rng);
      const double steps = 10.0 + 90.0 * uniform(rng);
      const double k80 = 0.5 + uniform(rng);
      jobs.push_back({i, 1, {k80, 1.0 + 2.0 * uniform(rng)}, steps, waited});
    }
    // Every schedule's cost and the type each job starts on (-1: it queues behind another).
    std::vector<std::pair<double, std::vector<int>>> schedules;
    std::vector<std::size_t> order(m);
    std::iota(order.begin(), order.end(), std::size_t{0});
    do {
      std::size_t codes = 1;
      for (std::size_t i = 0; i < m; ++i) codes *= gpu_type.size();
      for (std::size_t code = 0; code < codes; ++code) {
        std::vector<double> clock(gpu_type.size(), 0.0);
        std::vector<int> first_type(m, -1);
        std::vector<bool> gpu_started(gpu_type.size(), false);
        double cost = 0.0;
        std::size_t rest = code;
        for (const std::size_t i : order) {
          const std::size_t g = rest % gpu_type.size();
          rest /= gpu_type.size();
          clock[g] += jobs[i].steps_remaining / jobs[i].throughput[gpu_type[g]];
          cost += jobs[i].time_since_start + clock[g];
          if (!gpu_started[g]) {
            gpu_started[g] = true;
            first_type[i] = static_cast<int>(gpu_type[g]);
          }
        }
        schedules.emplace_back(cost, first_type);
      }
    } while (std::next_permutation(order.begin(), order.end()));
    double best = std::numeric_limits<double>::infinity();
    for (const auto& schedule : schedules) best = std::min(best, schedule.first);

    auto allox = MakeAlloxWith();
    const PolicyOutput out = Allocated(*allox, MakeInput(types, counts, jobs));
    std::vector<int> started(m);
    for (std::size_t i = 0; i < m; ++i) started[i] = TypeOf(out, i);
    const bool optimal = std::any_of(schedules.begin(), schedules.end(), [&](const auto& s) {
      return s.first <= best + 1e-9 * best && s.second == started;
    });
    EXPECT_TRUE(optimal) << "trial " << trial;
  }
}

// Random arrivals, completions and alphas over many calls: entries are 0 or 1, a job holds at
// most one type, no type is over its GPU count, and a started job keeps its type while it
// runs (no preemption).
TEST(AlloxTest, InvariantsOverRandomCallSequences) {
  std::mt19937 rng(5);
  const std::vector<std::string> types = {"k80", "p100", "v100"};
  const std::vector<double> counts = {2, 1, 2};
  for (const double alpha : {1.0, 0.5}) {
    auto allox = MakeAlloxWith(alpha);
    std::vector<TestJob> active;
    std::uint64_t next_id = 0;
    std::map<std::uint64_t, int> held;
    double now = 0.0;
    for (int call = 0; call < 60; ++call) {
      now += 360.0;
      std::erase_if(active, [&](const TestJob&) { return rng() % 5 == 0; });
      const int arrivals = static_cast<int>(rng() % 3);
      for (int a = 0; a < arrivals; ++a) {
        TestJob job{next_id++, 1, {}, static_cast<double>(100 + rng() % 1000)};
        for (int j = 0; j < 3; ++j) job.throughput.push_back(0.5 + static_cast<double>(rng() % 4));
        job.time_since_start = -now;  // arrival time, turned into waited below
        active.push_back(job);
      }
      std::vector<TestJob> snapshot = active;
      for (TestJob& job : snapshot) job.time_since_start += now;
      const PolicyInput input = MakeInput(types, counts, snapshot);
      const PolicyOutput out = Allocated(*allox, input);
      std::vector<double> used(3, 0.0);
      std::map<std::uint64_t, int> now_held;
      for (std::size_t i = 0; i < snapshot.size(); ++i) {
        const int type = TypeOf(out, i);
        if (type < 0) continue;
        used[static_cast<std::size_t>(type)] += 1.0;
        now_held[snapshot[i].id] = type;
        const auto before = held.find(snapshot[i].id);
        if (before != held.end()) {
          EXPECT_EQ(before->second, type) << "job " << snapshot[i].id << " was preempted";
        }
      }
      for (const auto& [id, type] : held) {
        // An init-capture: clang 14 cannot capture a structured binding.
        const bool still_here =
            std::any_of(snapshot.begin(), snapshot.end(),
                        [job_id = id](const TestJob& j) { return j.id == job_id; });
        if (still_here) {
          EXPECT_TRUE(now_held.contains(id)) << "job " << id << " lost its GPU";
        }
      }
      for (std::size_t j = 0; j < 3; ++j) EXPECT_LE(used[j], counts[j]);
      held = now_held;
    }
  }
}

}  // namespace
}  // namespace gavel::policy
