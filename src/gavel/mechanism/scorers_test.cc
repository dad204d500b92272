#include "gavel/mechanism/scorers.h"

#include <gtest/gtest.h>

#include <string>

#include "gavel/mechanism/keep_gpus_scorer.h"
#include "gavel/mechanism/pair_scorer.h"
#include "gavel/mechanism/parts_test_support.h"
#include "gavel/mechanism/topology_scorer.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::kK80;
using testing::kV100;
using testing::MakeJobTable;

std::vector<std::string> Names(const ScorerList& list) {
  std::vector<std::string> names;
  for (const auto& scorer : list) names.emplace_back(scorer->name());
  return names;
}

TEST(ScorersTest, TheListHoldsWhatTheOptionsSelectAndOneRulePicks) {
  EXPECT_EQ(Names(MakeScorers({})),
            (std::vector<std::string>{"keep_gpus", "consolidation"}));
  const ScorerList all = MakeScorers(RealisationOptions{.topology_aware_placement = true,
                                                        .space_sharing = true,
                                                        .keep_last_gpus = true,
                                                        .restart_costs = true});
  EXPECT_EQ(Names(all), (std::vector<std::string>{"keep_gpus", "space_sharing_pairs",
                                                  "topology", "consolidation",
                                                  "restart_cost"}));
  // The placer takes the first that picks: topology when listed.
  for (const auto& scorer : all) {
    if (scorer->picks()) {
      EXPECT_EQ(scorer->name(), "topology");
      break;
    }
  }
  std::vector<std::string> filters;
  for (const Scorer* s : ChoiceFilters(all)) filters.emplace_back(s->name());
  EXPECT_EQ(filters, (std::vector<std::string>{"space_sharing_pairs", "restart_cost"}));
}

TEST(ScorersTest, PairsRunOnlyWhereBothMembersProgress) {
  JobTable table = MakeJobTable({{"v100", 1, 1}, {"k80", 1, 1}}, /*packing=*/true);
  AdmitOrDie(table, JobId(0), Job("A"));
  AdmitOrDie(table, JobId(1), Job("B"));
  const ScoreContext context{.table = table, .round = 0, .round_length = Seconds(360.0)};
  const PairScorer pairs;
  const ComboState& pair = table.combo(table.PairSlot(JobId(0), JobId(1)));
  EXPECT_TRUE(pairs.AdmitsChoice(pair, kV100, context));  // [1.5, 0.5]
  EXPECT_FALSE(pairs.AdmitsChoice(pair, kK80, context));  // [0, 0]
  EXPECT_TRUE(pairs.AdmitsChoice(table.combo(table.SlotOf(Combination::Single(JobId(1)))),
                                 kK80, context));  // singles are not its business
}

TEST(ScorersTest, TopologyDemandSumsThePairsHostNeeds) {
  JobTable table = MakeJobTable({{"v100", 2, 1}}, /*packing=*/true);
  JobDescription a = Job("A");
  a.cpus_per_gpu = 3.0;
  a.mem_gb_per_gpu = 10.0;
  JobDescription b = Job("A");
  b.cpus_per_gpu = 1.0;
  AdmitOrDie(table, JobId(0), a);
  AdmitOrDie(table, JobId(1), b);
  const ScoreContext context{.table = table, .round = 0, .round_length = Seconds(360.0)};
  const WorkerDemand d =
      TopologyScorer().Demand(table.combo(table.PairSlot(JobId(0), JobId(1))), context);
  EXPECT_EQ(d.cpus, 4.0);
  EXPECT_EQ(d.mem_gb, 10.0);
  EXPECT_GT(KeepGpusScorer().KeepScore(table.combo(0), context), 0.0);
}

}  // namespace
}  // namespace gavel::mechanism
