#include "gavel/policy/oasis_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gavel/core/utility.h"

namespace gavel::policy {
namespace {

// Every assignment of "idle or one choice" to every slot that completes the workload:
// visit(t, cost) with t the first slot where the units add up and the cost paid up to then.
template <typename Visit>
void ForEachCompletingAssignment(const ScheduleProblem& p, Visit visit) {
  const int slots = static_cast<int>(p.choices.size());
  std::vector<int> pick(static_cast<std::size_t>(slots), -1);
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
        visit(t, cost);
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
    if (t == slots) return;
  }
}

// The best payoff of completing at the first slot where the units add up, paying for every
// slot used up to then.
double BruteForcePayoff(const ScheduleProblem& p, bool* feasible) {
  double best = -1e300;
  *feasible = false;
  ForEachCompletingAssignment(p, [&](int t, double cost) {
    *feasible = true;
    best = std::max(best, p.utility(t) - cost);
  });
  return best;
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

// The earliest slot at which some assignment of maximal payoff first completes the workload
// (exact arithmetic: integer costs and utilities).
int BruteForceEarliestBestFinish(const ScheduleProblem& p, double best_payoff) {
  int earliest = std::numeric_limits<int>::max();
  ForEachCompletingAssignment(p, [&](int t, double cost) {
    if (p.utility(t) - cost == best_payoff) earliest = std::min(earliest, t);
  });
  return earliest;
}

// Tie-heavy instances (costs of a few integer values, repeated choices, choices of 0 units or
// more than the workload, utility falling by whole units or flat): the payoff of brute force,
// the earliest completion among the best schedules, and a returned schedule that pays exactly
// what it reports and uses only listed choices.
TEST(OasisSchedule, TiesGoToTheEarliestCompletion) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 600; ++trial) {
    ScheduleProblem p;
    p.units = 1 + static_cast<int>(rng() % 6);
    const int slots = 1 + static_cast<int>(rng() % 5);
    p.choices.resize(static_cast<std::size_t>(slots));
    for (auto& choices : p.choices) {
      const int count = static_cast<int>(rng() % 4);
      for (int c = 0; c < count; ++c) {
        const int units = static_cast<int>(rng() % static_cast<unsigned>(p.units + 2));
        choices.push_back(SlotChoice{units, static_cast<double>(rng() % 3), 0, c + 1});
      }
    }
    std::vector<double> utility(static_cast<std::size_t>(slots));
    double level = 10.0;
    for (double& u : utility) {
      u = level;
      level -= static_cast<double>(rng() % 3);  // non-increasing, often flat
    }
    p.utility = [&](int t) { return utility[static_cast<std::size_t>(t)]; };
    bool feasible = false;
    const double best = BruteForcePayoff(p, &feasible);
    const Schedule s = BestSchedule(p);
    const std::string where = "trial " + std::to_string(trial);
    ASSERT_EQ(s.feasible, feasible) << where;
    if (!feasible) continue;
    EXPECT_EQ(s.payoff, best) << where;
    EXPECT_EQ(s.finish_slot, BruteForceEarliestBestFinish(p, best)) << where;
    ASSERT_EQ(s.per_slot.size(), static_cast<std::size_t>(s.finish_slot + 1)) << where;
    int done = 0;
    double cost = 0.0;
    for (std::size_t t = 0; t < s.per_slot.size(); ++t) {
      const SlotChoice& c = s.per_slot[t];
      if (c.units == 0 && c.workers == 0) continue;  // idle
      const auto& listed = p.choices[t];
      EXPECT_TRUE(std::any_of(listed.begin(), listed.end(),
                              [&](const SlotChoice& l) {
                                return l.units == c.units && l.cost == c.cost &&
                                       l.workers == c.workers;
                              }))
          << where << " slot " << t;
      done += c.units;
      cost += c.cost;
    }
    EXPECT_GE(done, p.units) << where;
    EXPECT_EQ(cost, s.cost) << where;
  }
}

// Within a step, equal choices go to the first listed (workers tell them apart).
TEST(OasisSchedule, EqualChoicesInAStepGoToTheFirstListed) {
  ScheduleProblem p;
  p.units = 2;
  p.choices = {{SlotChoice{2, 1.0, 0, 4}, SlotChoice{2, 1.0, 1, 2}, SlotChoice{2, 1.0, 2, 1}}};
  p.utility = [](int) { return 5.0; };
  const Schedule s = BestSchedule(p);
  ASSERT_TRUE(s.feasible);
  ASSERT_EQ(s.per_slot.size(), 1u);
  EXPECT_EQ(s.per_slot[0].workers, 4);
  EXPECT_EQ(s.per_slot[0].type, 0);
  EXPECT_DOUBLE_EQ(s.payoff, 4.0);
}

}  // namespace
}  // namespace gavel::policy
