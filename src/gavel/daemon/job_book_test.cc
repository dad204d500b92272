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

}  // namespace
}  // namespace gavel::daemon
