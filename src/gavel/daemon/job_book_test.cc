// JobBook alone: ids, defaults, priors and estimates, restore.
#include "gavel/daemon/job_book.h"

#include <gtest/gtest.h>

#include "gavel/core/shipped_table.h"

namespace gavel::daemon {
namespace {

const rpc::Principal kAlice{"alice", false, false};

wire::JobSpec Spec(const std::string& type) {
  wire::JobSpec spec;
  spec.add_command("true");
  spec.set_total_steps(100);
  spec.set_scale_factor(1);
  spec.set_job_type(type);
  return spec;
}

TEST(JobBookTest, JobsGetIdsDefaultsAndPriorsByTheDocumentedRules) {
  Journal journal;
  const auto table = ShippedThroughputTable();
  JobBook book(&journal, table);
  const std::string resnet = "ResNet-18 (batch size 64)";
  Job& known = book.Add(kAlice, Spec(resnet), 5, {"k80", "v100"});
  EXPECT_EQ(known.row.id, 1u);
  EXPECT_EQ(known.row.spec.entity(), "alice");  // default entity: the user
  EXPECT_EQ(known.row.spec.priority_weight(), 1.0);
  EXPECT_TRUE(known.table_type);
  EXPECT_EQ(book.Prior(known, "v100"), *table->Isolated("v100", JobTypeKey{resnet, 1}));
  EXPECT_EQ(known.row.per_type.at("k80").prior, *table->Isolated("k80", JobTypeKey{resnet, 1}));

  wire::JobSpec custom = Spec("my-model");
  (*custom.mutable_throughputs())["v100"] = 7.0;
  custom.set_entity("lab");
  ASSERT_TRUE(book.Validate(custom).ok());
  Job& mine = book.Add(kAlice, custom, 6, {});
  EXPECT_EQ(mine.row.id, 2u);
  EXPECT_EQ(mine.row.spec.entity(), "lab");
  EXPECT_FALSE(mine.table_type);
  EXPECT_EQ(book.Prior(mine, "v100"), 7.0);
  EXPECT_EQ(book.Prior(mine, "k80"), 0.0);  // left out of the user's list
  Job& bare = book.Add(kAlice, Spec("other-model"), 7, {});
  EXPECT_EQ(book.Prior(bare, "k80"), 1.0);  // no estimate at all: the original's default
  mine.row.per_type["v100"].measured = 9.0;
  mine.row.per_type["v100"].measurements = 1;
  EXPECT_EQ(book.Estimate(mine, "v100"), 9.0);
  EXPECT_EQ(journal.dirty_jobs, (std::set<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(journal.batch.meta.at("next_job_id"), "4");
  EXPECT_TRUE(book.AnyRunnable(0));

  // Restored: running jobs are queued, ids continue after the largest.
  JobBook again(&journal, table);
  JobRow running = known.row;
  running.id = 9;
  running.state = wire::RUNNING;
  ASSERT_TRUE(again.Restore({running}, 3).ok());
  EXPECT_EQ(again.at(9).row.state, wire::QUEUED);
  EXPECT_EQ(again.Add(kAlice, Spec(resnet), 8, {}).row.id, 10u);
  JobRow huge = known.row;
  huge.id = 11;
  huge.spec.set_scale_factor(63);
  JobBook broken(&journal, table);
  EXPECT_NE(broken.Restore({huge}, 1).message().find("spec.scale_factor"), std::string::npos);
}


// Space sharing: a pair's co-located rate is the table's for their types ([this job's, the
// partner's]), scaled by how the job's own estimate differs from the table's isolated rate,
// until measured next to a job of the partner's type.
TEST(JobBookTest, ColocatedEstimatesScaleTheTablesSlowdownUntilMeasured) {
  Journal journal;
  const auto table = ShippedThroughputTable();
  JobBook book(&journal, table);
  Job& a3c = book.Add(kAlice, Spec("A3C"), 1, {"v100"});
  Job& transformer = book.Add(kAlice, Spec("Transformer (batch size 16)"), 2, {"v100"});
  const JobTypeKey ka{"A3C", 1};
  const JobTypeKey kt{"Transformer (batch size 16)", 1};
  const auto pair = *table->Colocated("v100", ka, kt);
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(a3c, transformer, "v100"), pair[0]);
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(transformer, a3c, "v100"), pair[1]);
  EXPECT_LT(pair[0], *table->Isolated("v100", ka)) << "the table slows A3C down when paired";

  // A job measured at twice the table's isolated rate is expected twice as fast paired.
  a3c.row.per_type["v100"].measured = 2.0 * *table->Isolated("v100", ka);
  a3c.row.per_type["v100"].measurements = 1;
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(a3c, transformer, "v100"), 2.0 * pair[0]);

  // Measured next to a job of the partner's type: the measurement, for any job of that type.
  a3c.row.colocated[{"v100", "Transformer (batch size 16)"}] = ColocatedRow{3.5, 2};
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(a3c, transformer, "v100"), 3.5);
  Job& another = book.Add(kAlice, Spec("Transformer (batch size 16)"), 3, {"v100"});
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(a3c, another, "v100"), 3.5);
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(transformer, a3c, "v100"), pair[1]) << "not the other's";
}

// Learning, worked by hand: alpha 0.5 puts half the weight on each new sample (the first is
// taken as it is); a new solve is worth it once the estimate moved more than 10 % from the
// value the latest allocation used.
TEST(JobBookTest, MeasurementsEnterAnEmaAndSignalAResolvePastTheThreshold) {
  Journal journal;
  JobBook book(&journal, ShippedThroughputTable(), ThroughputLearning{0.5, 0.1});
  Job& job = book.Add(kAlice, Spec("A3C"), 1, {"v100"});
  EXPECT_FALSE(book.LearnIsolated(job, "v100", 0, 10.0));  // empty sample: nothing learned
  EXPECT_EQ(job.row.per_type["v100"].measurements, 0u);
  EXPECT_TRUE(book.LearnIsolated(job, "v100", 100, 10.0));  // 10 steps/s; none used yet
  EXPECT_DOUBLE_EQ(book.Estimate(job, "v100"), 10.0);
  job.used_estimate["v100"] = 10.0;
  EXPECT_FALSE(book.LearnIsolated(job, "v100", 120, 10.0));  // (10 + 12) / 2 = 11: 10 %
  EXPECT_DOUBLE_EQ(book.Estimate(job, "v100"), 11.0);
  EXPECT_TRUE(book.LearnIsolated(job, "v100", 150, 10.0));  // (11 + 15) / 2 = 13: 30 %
  EXPECT_DOUBLE_EQ(book.Estimate(job, "v100"), 13.0);
}

// Crediting: absolute checkpoints (a count past the total is clamped and logged), time on the
// type, and the sample learned alone or, when the GPUs were shared with a partner that stayed,
// next to the partner's type.
TEST(JobBookTest, AMicroTaskIsCreditedOnceAndLearnedWhereItRan) {
  Journal journal;
  JobBook book(&journal, ShippedThroughputTable(), ThroughputLearning{0.5, 0.1});
  Job& job = book.Add(kAlice, Spec("A3C"), 1, {"v100"});
  Job& partner = book.Add(kAlice, Spec("Transformer (batch size 16)"), 1, {"v100"});
  RoundTask task;
  task.worker_id = 10;
  MicroTaskSummary m;
  m.gpu_type = "v100";
  m.workers = {10};
  m.first = &task;
  m.checkpointed = 40;
  m.elapsed_s = 12.0;
  m.steps_trained = 60;
  m.training_s = 10.0;
  m.expired = true;
  Credited credited = book.CreditMicroTask(job, m, 5);
  EXPECT_EQ(credited.steps, 40u);
  EXPECT_FALSE(credited.learned_colocated);
  EXPECT_EQ(job.row.steps_done, 40u);
  EXPECT_DOUBLE_EQ(job.row.per_type["v100"].seconds, 12.0);
  EXPECT_DOUBLE_EQ(book.Estimate(job, "v100"), 6.0);
  EXPECT_TRUE(job.paused);  // its lease ran out: it waits on its GPUs
  EXPECT_EQ(book.CreditMicroTask(job, m, 6).steps, 0u) << "the same checkpoint again";

  m.checkpointed = 30;  // below what is credited: nothing is taken back
  m.shared = true;
  m.partner = partner.row.id;
  credited = book.CreditMicroTask(job, m, 7);
  EXPECT_EQ(credited.steps, 0u);
  EXPECT_TRUE(credited.learned_colocated);
  EXPECT_DOUBLE_EQ(book.ColocatedEstimate(job, partner, "v100"), 6.0);
  EXPECT_EQ(job.row.per_type["v100"].measurements, 2u) << "a shared sample is not its own";

  m.checkpointed = 1'000;  // past the total (100)
  journal.batch.events.clear();
  EXPECT_EQ(book.CreditMicroTask(job, m, 8).steps, 60u);
  EXPECT_EQ(job.row.steps_done, 100u);
  ASSERT_FALSE(journal.batch.events.empty());
  EXPECT_EQ(journal.batch.events.back().kind, "bad-report");
}

}  // namespace
}  // namespace gavel::daemon
