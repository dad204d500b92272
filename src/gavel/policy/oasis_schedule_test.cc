#include "gavel/policy/oasis_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gavel/core/utility.h"
#include "gavel/policy/oasis_test_support.h"

namespace gavel::policy {
namespace {

// Every assignment of "idle or one choice" to every slot: the best payoff of completing at the
// first slot where the units add up, paying for every slot used up to then.
double BruteForcePayoff(const ScheduleProblem& p, bool* feasible) {
  const int slots = static_cast<int>(p.choices.size());
  std::vector<int> pick(static_cast<std::size_t>(slots), -1);
  double best = -1e300;
  *feasible = false;
  while (true) {
    int done = 0;
    double cost = 0.0;
    for (int t = 0; t < slots; ++t) {
      const int c = pick[static_cast<std::size_t>(t)];
      if (c >= 0) {
        done += p.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)].units;
        cost += p.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)].cost;
      }
      if (done >= p.units) {
        *feasible = true;
        best = std::max(best, p.utility(t) - cost);
        break;
      }
    }
    // Next assignment (odometer).
    int t = 0;
    while (t < slots) {
      int& c = pick[static_cast<std::size_t>(t)];
      if (c + 1 < static_cast<int>(p.choices[static_cast<std::size_t>(t)].size())) {
        ++c;
        break;
      }
      c = -1;
      ++t;
    }
    if (t == slots) return best;
  }
}

TEST(OasisSchedule, MatchesBruteForceOnTinyInstances) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> units_of(0, 4);
  std::uniform_real_distribution<double> cost_of(0.0, 3.0);
  for (int trial = 0; trial < 300; ++trial) {
    ScheduleProblem p;
    p.units = 1 + trial % 6;
    const int slots = 1 + trial % 5;
    p.choices.resize(static_cast<std::size_t>(slots));
    for (auto& choices : p.choices) {
      const int count = static_cast<int>(rng() % 4);
      for (int c = 0; c < count; ++c)
        choices.push_back(SlotChoice{units_of(rng), cost_of(rng), 0, c + 1});
    }
    const UtilityFunction u{trial % 2 == 0 ? UtilityFamily::kSigmoid : UtilityFamily::kLinear, 8.0,
                            3.0, 1.5};
    p.utility = [&](int t) { return u.At(t + 1.0); };
    bool feasible = false;
    const double expected = BruteForcePayoff(p, &feasible);
    const Schedule s = BestSchedule(p);
    ASSERT_EQ(s.feasible, feasible) << "trial " << trial;
    if (!feasible) continue;
    EXPECT_NEAR(s.payoff, expected, 1e-9) << "trial " << trial;
    // The schedule it returns achieves that payoff: its units add up and its cost is paid.
    int done = 0;
    double cost = 0.0;
    for (const SlotChoice& c : s.per_slot) {
      done += c.units;
      cost += c.units > 0 ? c.cost : 0.0;
    }
    EXPECT_GE(done, p.units);
    EXPECT_NEAR(cost, s.cost, 1e-9);
    EXPECT_NEAR(p.utility(s.finish_slot) - s.cost, s.payoff, 1e-9);
  }
}

TEST(OasisSchedule, WaitsForCheapSlotsOnlyWhenUtilityAllows) {
  // Slot 0 is dear, slot 1 cheap; finishing in slot 1 loses 1 of utility.
  ScheduleProblem p;
  p.units = 2;
  p.choices = {{SlotChoice{2, 5.0, 0, 2}}, {SlotChoice{2, 1.0, 0, 2}}};
  p.utility = [](int t) { return t == 0 ? 10.0 : 9.0; };
  Schedule s = BestSchedule(p);
  EXPECT_EQ(s.finish_slot, 1);
  EXPECT_DOUBLE_EQ(s.payoff, 8.0);
  p.utility = [](int t) { return t == 0 ? 10.0 : 4.0; };
  s = BestSchedule(p);
  EXPECT_EQ(s.finish_slot, 0);
  EXPECT_DOUBLE_EQ(s.payoff, 5.0);
}

// The dynamic programme as first written (row by row, choice by choice per e, branch on each
// improvement): BestSchedule must give the same schedule to the bit, ties included.
Schedule FirstBestSchedule(const ScheduleProblem& problem) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int slots = static_cast<int>(problem.choices.size());
  const int units = problem.units;
  Schedule best;
  if (units <= 0 || slots == 0) return best;
  const auto width = static_cast<std::size_t>(units + 1);
  std::vector<double> cost(static_cast<std::size_t>(slots) * width, kInf);
  std::vector<int> pick(static_cast<std::size_t>(slots) * width, -1);
  std::vector<double> previous(width, kInf);
  previous[0] = 0.0;
  for (int t = 0; t < slots; ++t) {
    double* row = &cost[static_cast<std::size_t>(t) * width];
    int* picked = &pick[static_cast<std::size_t>(t) * width];
    const auto& choices = problem.choices[static_cast<std::size_t>(t)];
    for (int e = 0; e <= units; ++e) {
      row[e] = previous[static_cast<std::size_t>(e)];
      for (std::size_t c = 0; c < choices.size(); ++c) {
        const double before = previous[static_cast<std::size_t>(std::max(0, e - choices[c].units))];
        if (before + choices[c].cost < row[e]) {
          row[e] = before + choices[c].cost;
          picked[e] = static_cast<int>(c);
        }
      }
    }
    previous.assign(row, row + width);
  }
  for (int t = 0; t < slots; ++t) {
    const double c = cost[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(units)];
    if (!std::isfinite(c)) continue;
    const double payoff = problem.utility(t) - c;
    if (!best.feasible || payoff > best.payoff) {
      best.feasible = true;
      best.payoff = payoff;
      best.cost = c;
      best.finish_slot = t;
    }
  }
  if (!best.feasible) return best;
  best.per_slot.assign(static_cast<std::size_t>(best.finish_slot + 1), SlotChoice{});
  int e = units;
  for (int t = best.finish_slot; t >= 0 && e > 0; --t) {
    const int c = pick[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(e)];
    if (c < 0) continue;
    const SlotChoice& choice =
        problem.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)];
    best.per_slot[static_cast<std::size_t>(t)] = choice;
    e = std::max(0, e - choice.units);
  }
  return best;
}

// Random programmes, many with ties (costs of a few integer values, repeated choices) and
// choices of 0 units or more units than the workload: the same schedule as the first
// programme, to the bit.
TEST(OasisSchedule, MatchesTheFirstProgrammeExactly) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    ScheduleProblem p;
    p.units = 1 + static_cast<int>(rng() % 40);
    const int slots = 1 + static_cast<int>(rng() % 30);
    const bool ties = trial % 2 == 0;
    p.choices.resize(static_cast<std::size_t>(slots));
    for (auto& choices : p.choices) {
      const int count = static_cast<int>(rng() % 6);
      for (int c = 0; c < count; ++c) {
        const int units = static_cast<int>(rng() % static_cast<unsigned>(p.units + 5));
        const double cost = ties ? static_cast<double>(rng() % 4)
                                 : std::ldexp(static_cast<double>(rng() % 1000000), -13);
        choices.push_back(SlotChoice{units, cost, static_cast<int>(rng() % 3), c + 1});
      }
    }
    const double midpoint = 1.0 + static_cast<double>(rng() % 30);
    const UtilityFunction u{trial % 3 == 0 ? UtilityFamily::kLinear : UtilityFamily::kSigmoid, 50.0,
                            midpoint, 0.5};
    p.utility = [&](int t) { return u.At(t + 1.0); };
    ExpectSameSchedule(BestSchedule(p), FirstBestSchedule(p), "trial " + std::to_string(trial));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace gavel::policy
