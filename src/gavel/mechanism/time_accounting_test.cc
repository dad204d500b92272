#include "gavel/mechanism/time_accounting.h"

#include <gtest/gtest.h>

#include "gavel/mechanism/parts_test_support.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::MakeJobTable;

TimeAccountingOptions Options(bool exhaustive = false) {
  TimeAccountingOptions options;
  options.min_reset_interval = Seconds(1000.0);
  options.exhaustive_scans = exhaustive;
  return options;
}

void Allocate(ComboState& c, double share) {
  c.in_allocation = true;
  std::fill(c.allocation.begin(), c.allocation.end(), share);
}

TEST(TimeAccountingTest, PriorityIsAllocationOverShareReceived) {
  JobTable table = MakeJobTable({{"v100", 1, 1}});
  TimeAccounting accounting(table, Options());
  accounting.Admitted(AdmitOrDie(table, JobId(0), Job("A")));
  accounting.Admitted(AdmitOrDie(table, JobId(1), Job("B")));
  ComboState& a = table.combo(table.SlotOf(Combination::Single(JobId(0))));
  ComboState& b = table.combo(table.SlotOf(Combination::Single(JobId(1))));
  Allocate(a, 0.5);
  Allocate(b, 0.5);
  accounting.Reset(Seconds(0.0));  // type total: two credits of 180 s
  EXPECT_EQ(accounting.type_time()[0], 360.0);
  accounting.Book(a, 0, 100.0, std::vector<WorkerId>{WorkerId(0)});
  EXPECT_EQ(accounting.type_time()[0], 460.0);
  EXPECT_EQ(accounting.worker_busy()[0], 100.0);
  accounting.UpdateAllocatedPriority(a);
  accounting.UpdateAllocatedPriority(b);
  // a received 280 of 460 s, b 180 of 460 s: b is further behind its equal share.
  EXPECT_DOUBLE_EQ(a.priority[0], 0.5 / (280.0 / 460.0));
  EXPECT_DOUBLE_EQ(b.priority[0], 0.5 / (180.0 / 460.0));
  EXPECT_GT(b.priority[0], a.priority[0]);
}

TEST(TimeAccountingTest, ResetBooksWhatWasOwedMinusWhatWasReceived) {
  JobTable table = MakeJobTable({{"v100", 1, 1}});
  TimeAccounting accounting(table, Options());
  accounting.Admitted(AdmitOrDie(table, JobId(0), Job("A")));
  ComboState& a = table.combo(table.SlotOf(Combination::Single(JobId(0))));
  EXPECT_TRUE(accounting.ResetDue(Seconds(0.0)));  // never reset yet
  accounting.Reset(Seconds(0.0));
  Allocate(a, 0.25);
  accounting.Book(a, 0, 300.0, std::vector<WorkerId>{WorkerId(0)});
  EXPECT_FALSE(accounting.ResetDue(Seconds(999.0)));
  ASSERT_TRUE(accounting.ResetDue(Seconds(1000.0)));
  accounting.Reset(Seconds(1000.0));
  // Owed 0.25 × 1000 s, received 300 s.
  EXPECT_DOUBLE_EQ(a.deficit[0], 250.0 - 300.0);
  EXPECT_EQ(a.job_time[0], 180.0);
  EXPECT_EQ(accounting.type_time()[0], 180.0);
  accounting.OpenResetGate();
  EXPECT_TRUE(accounting.ResetDue(Seconds(1001.0)));
}

// An untracked pair's accounting follows from when it was made: tracking it late gives what
// storing it from the start (the exhaustive scans) gives.
TEST(TimeAccountingTest, LateTrackingMatchesStoringFromTheStart) {
  JobTable lazy_table = MakeJobTable({{"v100", 2, 1}}, /*packing=*/true);
  JobTable eager_table = MakeJobTable({{"v100", 2, 1}}, /*packing=*/true);
  TimeAccounting lazy(lazy_table, Options());
  TimeAccounting eager(eager_table, Options(/*exhaustive=*/true));
  for (int j = 0; j < 2; ++j) {
    lazy.Admitted(AdmitOrDie(lazy_table, JobId(j), Job("A")));
    eager.Admitted(AdmitOrDie(eager_table, JobId(j), Job("A")));
  }
  for (double at : {0.0, 1000.0, 2500.0}) {
    lazy.Reset(Seconds(at));
    eager.Reset(Seconds(at));
  }
  const int lazy_slot = lazy_table.PairSlot(JobId(0), JobId(1));
  const int eager_slot = eager_table.PairSlot(JobId(0), JobId(1));
  ASSERT_FALSE(lazy_table.combo(lazy_slot).tracked);
  EXPECT_EQ(lazy.UntrackedDeficit(lazy_table.combo(lazy_slot)), 180.0);
  lazy.Track(lazy_slot);
  EXPECT_EQ(lazy_table.combo(lazy_slot).job_time, eager_table.combo(eager_slot).job_time);
  EXPECT_EQ(lazy_table.combo(lazy_slot).deficit, eager_table.combo(eager_slot).deficit);
  EXPECT_EQ(lazy.type_time(), eager.type_time());
}

TEST(TimeAccountingTest, StalePrioritiesReturnToZero) {
  JobTable table = MakeJobTable({{"v100", 1, 1}});
  TimeAccounting accounting(table, Options());
  accounting.Admitted(AdmitOrDie(table, JobId(0), Job("A")));
  const int slot = table.SlotOf(Combination::Single(JobId(0)));
  ComboState& a = table.combo(slot);
  Allocate(a, 1.0);
  accounting.UpdateAllocatedPriority(a);
  ASSERT_GT(a.priority[0], 0.0);
  a.in_allocation = false;
  accounting.MarkStale(slot);
  accounting.UpdatePriorities();
  EXPECT_EQ(a.priority[0], 0.0);
}

}  // namespace
}  // namespace gavel::mechanism
