#include "gavel/mechanism/round_book.h"

#include <gtest/gtest.h>

#include "gavel/mechanism/parts_test_support.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::MakeJobTable;

WorkerReport Report(JobId job, int worker, double steps, double elapsed, double at) {
  WorkerReport r;
  r.combination = Combination::Single(job);
  r.worker = WorkerId(static_cast<std::uint64_t>(worker));
  r.steps = {steps};
  r.elapsed = {Seconds(elapsed)};
  r.finished_at = Seconds(at);
  return r;
}

struct Book {
  JobTable table = MakeJobTable({{"v100", 2, 2}});
  TimeAccounting accounting{table, TimeAccountingOptions{}};
  RoundBook book{table, accounting, Seconds(360.0)};
};

TEST(RoundBookTest, EmitsLeasesAndExtendsThemOnTheSameGpus) {
  Book b;
  b.accounting.Admitted(AdmitOrDie(b.table, JobId(0), Job("A", 2, 1000.0)));
  const int slot = b.table.SlotOf(Combination::Single(JobId(0)));
  const std::vector<WorkerId> gpus{WorkerId(1), WorkerId(0)};
  RoundPlan plan = b.book.Emit(Seconds(0.0), {Placed{slot, 0, gpus}}, true, {});
  ASSERT_EQ(plan.assignments.size(), 1u);
  // 3 steps/s on two v100s for 360 s = 1080 steps, capped at the 1000 left.
  EXPECT_EQ(plan.assignments[0].max_steps, std::vector<double>{1000.0});
  EXPECT_FALSE(plan.assignments[0].lease_extended);
  EXPECT_TRUE(b.book.any_running());
  // Both GPUs report: the steps add up, the longest elapsed time counts.
  ASSERT_FALSE(b.book.Gather(Report(JobId(0), 0, 300.0, 350.0, 350.0))->has_value());
  EXPECT_EQ(b.book.Gather(Report(JobId(0), 0, 1.0, 1.0, 1.0)).status().code(),
            StatusCode::kInvalidArgument);  // reported twice
  Result<std::optional<FinishedMicroTask>> done =
      b.book.Gather(Report(JobId(0), 1, 200.0, 360.0, 360.0));
  ASSERT_TRUE(done.ok() && done->has_value());
  EXPECT_EQ((*done)->steps[0], 500.0);
  EXPECT_EQ((*done)->elapsed[0].value(), 360.0);
  EXPECT_TRUE((*done)->succeeded);
  b.book.Finish(*(*done)->combo, /*failed=*/false);
  EXPECT_FALSE(b.book.any_running());
  // The same GPUs next round, in another order: the lease is extended.
  plan = b.book.Emit(Seconds(360.0), {Placed{slot, 0, {WorkerId(0), WorkerId(1)}}}, false, {});
  EXPECT_TRUE(plan.assignments[0].lease_extended);
  EXPECT_EQ(b.book.counters().lease_extensions, 1);
  EXPECT_EQ(b.book.counters().lease_extension_opportunities, 1);
}

TEST(RoundBookTest, RefusesReportsForMicroTasksThatDoNotRun) {
  Book b;
  b.accounting.Admitted(AdmitOrDie(b.table, JobId(0), Job("A")));
  EXPECT_EQ(b.book.Gather(Report(JobId(0), 0, 1.0, 1.0, 1.0)).status().code(),
            StatusCode::kFailedPrecondition);
  const int slot = b.table.SlotOf(Combination::Single(JobId(0)));
  b.book.Emit(Seconds(0.0), {Placed{slot, 0, {WorkerId(0)}}}, false, {});
  EXPECT_EQ(b.book.Gather(Report(JobId(0), 1, 1.0, 1.0, 1.0)).status().code(),
            StatusCode::kInvalidArgument);  // not its GPU
  Result<FinishedMicroTask> failed = b.book.Failed(Combination::Single(JobId(0)), Seconds(5.0));
  ASSERT_TRUE(failed.ok());
  EXPECT_FALSE(failed->succeeded);
  EXPECT_EQ(failed->steps[0], 0.0);
  EXPECT_EQ(failed->finished_at.value(), 5.0);
}

}  // namespace
}  // namespace gavel::mechanism
