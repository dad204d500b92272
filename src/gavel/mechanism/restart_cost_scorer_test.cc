#include "gavel/mechanism/restart_cost_scorer.h"

#include <gtest/gtest.h>

#include "gavel/mechanism/parts_test_support.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::kK80;
using testing::kV100;
using testing::MakeJobTable;

// Job A runs at 1 step/s on a k80 and 2 on a v100; it ran last round (4) on the k80 and has
// `remaining` steps left. Moving to the v100 halves its remaining time but costs the restart:
// worth it only when remaining / 2 + restart < remaining.
bool AdmitsMove(double remaining, double restart, std::int64_t round = 5) {
  JobTable table = MakeJobTable({{"v100", 1, 1}, {"k80", 1, 1}});
  JobDescription d = Job("A", 1, remaining);
  d.restart_cost = Seconds(restart);
  const ActiveJob& job = AdmitOrDie(table, JobId(0), d);
  ComboState& c = table.combo(job.single_slot);
  c.last_round = 4;
  c.last_type = kK80;
  c.last_workers = {WorkerId(0)};
  const ScoreContext context{.table = table, .round = round, .round_length = Seconds(360.0)};
  const RestartCostScorer scorer;
  EXPECT_TRUE(scorer.AdmitsChoice(c, kK80, context));  // staying is always allowed
  return scorer.AdmitsChoice(c, kV100, context);
}

TEST(RestartCostScorerTest, MovesOnlyWhenTheGainExceedsTheRestart) {
  EXPECT_FALSE(AdmitsMove(150.0, 100.0));  // 75 + 100 s against 150 s
  EXPECT_FALSE(AdmitsMove(200.0, 100.0));  // 100 + 100 s: a tie keeps it
  EXPECT_TRUE(AdmitsMove(300.0, 100.0));   // 150 + 100 s against 300 s
  EXPECT_TRUE(AdmitsMove(150.0, 0.0));     // restarts are free
  EXPECT_TRUE(AdmitsMove(150.0, 100.0, /*round=*/7));  // it did not run last round
}

TEST(RestartCostScorerTest, KeepingGpusIsWorthTheRestartItAvoids) {
  JobTable table = MakeJobTable({{"v100", 1, 1}});
  JobDescription d = Job("A");
  d.restart_cost = Seconds(42.0);
  const ActiveJob& job = AdmitOrDie(table, JobId(0), d);
  const ScoreContext context{.table = table, .round = 1, .round_length = Seconds(360.0)};
  EXPECT_EQ(RestartCostScorer().KeepScore(table.combo(job.single_slot), context), 42.0);
}

}  // namespace
}  // namespace gavel::mechanism
