#include "gavel/mechanism/placer.h"

#include <gtest/gtest.h>

#include "gavel/mechanism/parts_test_support.h"
#include "gavel/mechanism/scorers.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::MakeJobTable;

std::vector<WorkerId> Ids(std::initializer_list<int> ids) {
  std::vector<WorkerId> out;
  for (int id : ids) out.push_back(WorkerId(static_cast<std::uint64_t>(id)));
  return out;
}

struct Round {
  JobTable table;
  ScorerList scorers;
  Placer placer;
  Round(std::vector<GpuTypeSpec> cluster, RealisationOptions options)
      : table(MakeJobTable(std::move(cluster))),
        scorers(MakeScorers(options)),
        placer(table, PlacerOptions{}, AllScorers(scorers)) {}
  std::vector<Placed> Place(std::vector<Chosen> chosen, std::int64_t round) {
    const ScoreContext context{.table = table, .round = round, .round_length = Seconds(360.0)};
    const std::vector<int> order = table.layout().preference_order();
    return placer.Place(order, chosen, context);
  }
  Chosen Choose(JobId job) {
    const int slot = table.SlotOf(Combination::Single(job));
    return Chosen{slot, 0, table.combo(slot).scale_factor};
  }
};

// Two servers of two v100s. Job 0 (one GPU) ran last round on GPU 3; job 1 needs two.
TEST(PlacerTest, LargestFirstThenKeptGpusThenFirstFit) {
  for (bool keep : {true, false}) {
    RealisationOptions options;
    options.keep_last_gpus = keep;
    Round r({{"v100", 4, 2}}, options);
    AdmitOrDie(r.table, JobId(0), Job("A"));
    AdmitOrDie(r.table, JobId(1), Job("A", 2));
    AdmitOrDie(r.table, JobId(2), Job("A"));
    ComboState& ran = r.table.combo(r.table.SlotOf(Combination::Single(JobId(0))));
    ran.last_round = 4;
    ran.last_type = 0;
    ran.last_workers = Ids({3});
    const std::vector<Placed> placed =
        r.Place({r.Choose(JobId(0)), r.Choose(JobId(1)), r.Choose(JobId(2))}, 5);
    ASSERT_EQ(placed.size(), 3u);
    // The two-GPU job first, on the first server; then job 0 keeps GPU 3 (or, without
    // keep_gpus, fills from the first free GPU, 2), and job 2 takes what is left.
    EXPECT_EQ(placed[0].workers, Ids({0, 1}));
    EXPECT_EQ(r.table.combo(placed[1].slot).id, Combination::Single(JobId(0)));
    EXPECT_EQ(placed[1].workers, keep ? Ids({3}) : Ids({2}));
    EXPECT_EQ(placed[2].workers, keep ? Ids({2}) : Ids({3}));
  }
}

// Three servers of two v100s; job 0 keeps GPUs 1 and 2 (across servers 0 and 1). Job 1 needs
// two more: consolidation fills from the first free GPUs (0 and 3, two servers), topology
// finds a server with room for both (GPUs 4 and 5).
TEST(PlacerTest, TopologyPrefersOneServerWhereConsolidationFillsInOrder) {
  for (bool topology : {false, true}) {
    RealisationOptions options;
    options.topology_aware_placement = topology;
    Round r({{"v100", 6, 2}}, options);
    AdmitOrDie(r.table, JobId(0), Job("A", 2));
    AdmitOrDie(r.table, JobId(1), Job("A", 2));
    ComboState& ran = r.table.combo(r.table.SlotOf(Combination::Single(JobId(0))));
    ran.last_round = 0;
    ran.last_type = 0;
    ran.last_workers = Ids({1, 2});
    const std::vector<Placed> placed = r.Place({r.Choose(JobId(0)), r.Choose(JobId(1))}, 1);
    ASSERT_EQ(placed.size(), 2u);
    EXPECT_EQ(placed[0].workers, Ids({1, 2}));
    EXPECT_EQ(placed[1].workers, topology ? Ids({4, 5}) : Ids({0, 3}));
  }
}

TEST(PlacerTest, FirstFitTakesFreeGpusInServerOrder) {
  auto layout = ClusterLayout::Create({{"v100", 6, 3}});
  ASSERT_TRUE(layout.ok());
  ResourcePool pool(*layout);
  ASSERT_TRUE(pool.TryTake(Ids({1}), WorkerDemand{}));
  EXPECT_EQ(pool.TakeFirstFit(0, 3), Ids({0, 2, 3}));
  EXPECT_EQ(pool.TakeFirstFit(0, 3), std::nullopt);  // two left
  EXPECT_EQ(pool.TakeFirstFit(0, 2), Ids({4, 5}));
}

}  // namespace
}  // namespace gavel::mechanism
