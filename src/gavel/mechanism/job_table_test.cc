#include "gavel/mechanism/job_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "gavel/mechanism/parts_test_support.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::kK80;
using testing::kV100;
using testing::MakeJobTable;

TEST(JobTableTest, AdmitsSinglesThenPairsInTheOriginalsInsertionOrder) {
  JobTable table = MakeJobTable({{"v100", 2, 1}, {"k80", 2, 1}}, /*packing=*/true);
  AdmitOrDie(table, JobId(0), Job("A"));
  AdmitOrDie(table, JobId(1), Job("B"));
  AdmitOrDie(table, JobId(2), Job("A", 2));  // no partner of its size
  ASSERT_EQ(table.order().size(), 4u);
  EXPECT_EQ(table.combo(table.order()[0]).id, Combination::Single(JobId(0)));
  EXPECT_EQ(table.combo(table.order()[1]).id, Combination::Single(JobId(1)));
  EXPECT_EQ(table.combo(table.order()[2]).id, Combination::Pair(JobId(0), JobId(1)));
  EXPECT_EQ(table.combo(table.order()[3]).id, Combination::Single(JobId(2)));
  // Throughputs from the table file: A alone 1.0 (k80) and 2.0 (v100); A with B [1.5, 0.5]
  // on v100 and nothing on k80.
  const ComboState& a = table.combo(table.SlotOf(Combination::Single(JobId(0))));
  EXPECT_EQ(a.tput_a[kK80], 1.0);
  EXPECT_EQ(a.tput_a[kV100], 2.0);
  const ComboState& pair = table.combo(table.PairSlot(JobId(1), JobId(0)));
  EXPECT_EQ(pair.tput_a[kV100], 1.5);
  EXPECT_EQ(pair.tput_b[kV100], 0.5);
  EXPECT_EQ(pair.tput_a[kK80], 0.0);
  EXPECT_LT(a.seq, pair.seq);
}

TEST(JobTableTest, ZeroesThroughputWhereTheJobIsLargerThanTheType) {
  JobTable table = MakeJobTable({{"v100", 2, 2}, {"k80", 1, 1}});
  const ActiveJob& job = AdmitOrDie(table, JobId(7), Job("A", 2));
  const ComboState& c = table.combo(job.single_slot);
  EXPECT_EQ(c.tput_a[kK80], 0.0);  // the table says 1.5, but one k80 cannot run it
  EXPECT_EQ(c.tput_a[kV100], 3.0);
  ASSERT_TRUE(table.UpdateThroughput(JobId(7), kV100, 2.5).ok());
  EXPECT_EQ(table.combo(job.single_slot).tput_a[kV100], 2.5);
}

TEST(JobTableTest, RefusesBadJobsNamingTheProblem) {
  JobTable table = MakeJobTable({{"v100", 1, 1}});
  EXPECT_EQ(table.Validate(JobId(0), Job("C")).status().code(), StatusCode::kNotFound);
  // Two GPUs on a one-GPU cluster: never runnable.
  EXPECT_EQ(table.Validate(JobId(0), Job("A", 2)).status().code(),
            StatusCode::kFailedPrecondition);
  JobDescription negative = Job("A");
  negative.restart_cost = Seconds(-1.0);
  const Status status = table.Validate(JobId(0), negative).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("restart cost"), std::string::npos);
  AdmitOrDie(table, JobId(0), Job("A"));
  EXPECT_EQ(table.Validate(JobId(0), Job("A")).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(JobTableTest, ErasingAJobTakesItsPairsFromItsPartners) {
  JobTable table = MakeJobTable({{"v100", 2, 1}}, /*packing=*/true);
  for (int j = 0; j < 3; ++j) AdmitOrDie(table, JobId(j), Job("A"));
  ASSERT_EQ(table.FindActive(JobId(0))->pair_slots.size(), 2u);
  table.Erase(JobId(1), /*dropped=*/true);
  EXPECT_FALSE(table.IsActive(JobId(1)));
  EXPECT_TRUE(table.records()[table.Index(JobId(1))].dropped);
  EXPECT_EQ(table.FindActive(JobId(0))->pair_slots.size(), 1u);
  EXPECT_EQ(table.PairSlot(JobId(0), JobId(1)), -1);
  EXPECT_GE(table.PairSlot(JobId(0), JobId(2)), 0);
  EXPECT_EQ(table.num_alive(), 3u);  // two singles and their pair
}

TEST(JobTableTest, CompactionReusesDeadSlotsOnlyAfterTheOrderDropsThem) {
  JobTable table = MakeJobTable({{"v100", 1, 1}});
  for (int j = 0; j < 100; ++j) AdmitOrDie(table, JobId(j), Job("A"));
  for (int j = 0; j < 80; ++j) table.Erase(JobId(j), /*dropped=*/false);
  ASSERT_TRUE(table.CompactionDue());
  table.CompactOrder();
  EXPECT_EQ(table.order().size(), 20u);
  const ActiveJob& back = AdmitOrDie(table, JobId(0), Job("A"));  // back under its old id
  EXPECT_LT(back.single_slot, 80);  // a reused slot
  EXPECT_EQ(table.order().size(), 21u);
  EXPECT_EQ(table.records().size(), 100u);  // its record is reused too
}

TEST(JobTableTest, BookProgressFinishesAJobAtItsLastStep) {
  JobTable table = MakeJobTable({{"v100", 2, 1}});
  AdmitOrDie(table, JobId(3), Job("A", 1, 100.0));
  EXPECT_FALSE(table.BookProgress(JobId(3), 0, 60.0, 30.0, 30.0, 1, Seconds(30.0)));
  EXPECT_TRUE(table.BookProgress(JobId(3), 0, 40.0, 20.0, 25.0, 1, Seconds(55.0)));
  const JobRecord& r = table.records()[table.Index(JobId(3))];
  EXPECT_EQ(r.steps_run, 100.0);
  ASSERT_TRUE(r.finish.has_value());
  EXPECT_EQ(r.finish->value(), 55.0);
  EXPECT_EQ(table.gpu_seconds(table.Index(JobId(3)), 0), 55.0);
}

// RecordStore against a plain vector: elements across many chunks, most forgotten in a
// scattered order (whole chunks freed, others partly), the rest keep their values; reading a
// forgotten one through at() aborts.
TEST(RecordStoreTest, KeepsWhatIsNotForgottenAcrossFreedChunks) {
  RecordStore<std::size_t> store;
  std::vector<std::size_t> plain;
  const std::size_t n = 5 * RecordStore<std::size_t>::kChunk + 17;
  for (std::size_t i = 0; i < n; ++i) {
    store.push_back(i * 31 + 7);
    plain.push_back(i * 31 + 7);
  }
  std::vector<bool> forgotten(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    // The first two chunks wholly, then every third element, and the last chunk's head.
    if (i < 2 * RecordStore<std::size_t>::kChunk || i % 3 == 0) {
      store.Forget(i);
      store.Forget(i);  // twice: nothing more happens
      forgotten[i] = true;
    }
  }
  ASSERT_EQ(store.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(store.forgotten(i), forgotten[i]);
    if (!forgotten[i]) {
      EXPECT_EQ(store.at(i), plain[i]) << i;
    }
  }
  store.push_back(99);  // grows on after forgetting
  EXPECT_EQ(store.at(n), 99u);
  EXPECT_DEATH((void)store.at(0), "forgotten");
}

// A departed job's record is forgotten: the table no longer knows its id, the others' records
// and GPU-seconds are untouched.
TEST(JobTableTest, ForgetsADepartedJobsRecordOnly) {
  JobTable table = MakeJobTable({{"v100", 2, 1}}, /*packing=*/false);
  AdmitOrDie(table, JobId(0), Job("A"));
  AdmitOrDie(table, JobId(1), Job("B"));
  EXPECT_TRUE(table.BookProgress(JobId(0), 0, 1e9, 10.0, 10.0, 1, Seconds(10.0)));
  EXPECT_FALSE(table.BookProgress(JobId(1), 0, 1.0, 20.0, 20.0, 1, Seconds(20.0)));
  table.Erase(JobId(0), /*dropped=*/false);
  table.Forget(JobId(0));
  EXPECT_TRUE(table.records().forgotten(0));
  EXPECT_THROW((void)table.Index(JobId(0)), std::out_of_range);
  EXPECT_EQ(table.Index(JobId(1)), 1u);
  EXPECT_EQ(table.gpu_seconds(1, 0), 20.0);
  EXPECT_EQ(table.records().size(), 2u);
}

// The id lookups (identity numbering while ids are 0, 1, 2, ... in admission order, a map
// after the first that is not) against a plain reference: a map from id to record index and
// a set of active ids, over random admissions, departures, forgettings and returns, with and
// without ids out of order.
TEST(JobTableTest, FindsJobsByIdLikeAPlainMap) {
  for (const bool scattered : {false, true}) {
    JobTable table = MakeJobTable({{"v100", 2, 1}}, /*packing=*/false);
    std::map<JobId, std::size_t> index_of;  // remembered ids
    std::set<JobId> active;
    std::size_t next_index = 0;
    std::uint64_t next_id = 0;
    std::mt19937_64 rng(scattered ? 11 : 7);
    const auto admit = [&](JobId id) {
      AdmitOrDie(table, id, Job("A"));
      if (!index_of.contains(id)) index_of[id] = next_index++;
      active.insert(id);
    };
    for (int step = 0; step < 3000; ++step) {
      const std::uint64_t op = rng() % 10;
      if (op < 4 || active.empty()) {
        // A new id: the next number, or (scattered, after a while) one far away.
        const bool jump = scattered && step > 1000 && rng() % 4 == 0;
        admit(JobId(jump ? 1'000'000 + rng() % 1'000'000 : next_id));
        if (!jump) ++next_id;
        while (index_of.contains(JobId(next_id))) ++next_id;
      } else if (op < 7) {
        const JobId id = *std::next(active.begin(), static_cast<long>(rng() % active.size()));
        table.Erase(id, /*dropped=*/false);
        active.erase(id);
      } else if (op < 9) {
        // Forget a departed job, or bring one back (forgotten or not).
        std::vector<JobId> departed;
        for (const auto& [id, index] : index_of) {
          if (!active.contains(id)) departed.push_back(id);
        }
        if (departed.empty()) continue;
        const JobId id = departed[rng() % departed.size()];
        if (rng() % 2 == 0) {
          table.Forget(id);
          index_of.erase(id);
        } else {
          admit(id);
        }
      } else {
        // A forgotten id returns: a new record at the end.
        if (next_id == 0) continue;
        const JobId id(rng() % next_id);
        if (index_of.contains(id)) continue;
        admit(id);
      }
      if (step % 97 != 0) continue;
      for (std::uint64_t v = 0; v < next_id + 3; ++v) {
        const JobId id(v);
        const auto known = index_of.find(id);
        if (known == index_of.end()) {
          EXPECT_THROW((void)table.Index(id), std::out_of_range) << v;
        } else {
          EXPECT_EQ(table.Index(id), known->second) << v;
        }
        EXPECT_EQ(table.IsActive(id), active.contains(id)) << v;
      }
      for (const auto& [id, index] : index_of) {
        EXPECT_EQ(table.Index(id), index);
        const ActiveJob* job = table.FindActive(id);
        ASSERT_EQ(job != nullptr, active.contains(id));
        if (job != nullptr) {
          EXPECT_EQ(job->id, id);
          EXPECT_EQ(job->record, index);
          EXPECT_EQ(table.SlotOf(Combination::Single(id)), job->single_slot);
        }
      }
    }
    EXPECT_EQ(table.active().size(), active.size());
    EXPECT_EQ(table.records().size(), next_index);
  }
}

}  // namespace
}  // namespace gavel::mechanism
