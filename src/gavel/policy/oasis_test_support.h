// Comparisons shared by the oasis tests: schedules equal to the bit.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gavel/policy/oasis_schedule.h"

namespace gavel::policy {

inline bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Equal to the bit: feasibility, payoff, cost, finish slot and every slot's choice.
inline void ExpectSameSchedule(const Schedule& got, const Schedule& want,
                               const std::string& where) {
  EXPECT_EQ(got.feasible, want.feasible) << where;
  EXPECT_TRUE(SameBits(got.payoff, want.payoff))
      << where << ": " << got.payoff << " vs " << want.payoff;
  EXPECT_TRUE(SameBits(got.cost, want.cost)) << where;
  EXPECT_EQ(got.finish_slot, want.finish_slot) << where;
  ASSERT_EQ(got.per_slot.size(), want.per_slot.size()) << where;
  for (std::size_t t = 0; t < got.per_slot.size(); ++t) {
    EXPECT_EQ(got.per_slot[t].units, want.per_slot[t].units) << where << " slot " << t;
    EXPECT_TRUE(SameBits(got.per_slot[t].cost, want.per_slot[t].cost)) << where << " slot " << t;
    EXPECT_EQ(got.per_slot[t].type, want.per_slot[t].type) << where << " slot " << t;
    EXPECT_EQ(got.per_slot[t].workers, want.per_slot[t].workers) << where << " slot " << t;
  }
}

}  // namespace gavel::policy
