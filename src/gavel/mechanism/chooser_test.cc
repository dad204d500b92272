#include "gavel/mechanism/chooser.h"

#include <gtest/gtest.h>

#include "gavel/core/py_random.h"
#include "gavel/mechanism/parts_test_support.h"

namespace gavel::mechanism {
namespace {

using testing::AdmitOrDie;
using testing::Job;
using testing::kK80;
using testing::kV100;
using testing::MakeJobTable;

struct Parts {
  JobTable table;
  TimeAccounting accounting;
  Chooser chooser;
  std::vector<int> allocated;
  Parts(std::vector<GpuTypeSpec> cluster, bool exhaustive, std::vector<const Scorer*> filters,
        bool packing = false)
      : table(MakeJobTable(std::move(cluster), packing)),
        accounting(table, AccountingOptions(exhaustive)),
        chooser(table, accounting, Options(exhaustive), std::move(filters)) {}
  static TimeAccountingOptions AccountingOptions(bool exhaustive) {
    TimeAccountingOptions options;
    options.exhaustive_scans = exhaustive;
    return options;
  }
  static ChooserOptions Options(bool exhaustive) {
    ChooserOptions options;
    options.exhaustive_scans = exhaustive;
    return options;
  }
  std::vector<Chosen> Choose(std::int64_t round = 0) {
    const ScoreContext context{.table = table, .round = round, .round_length = Seconds(360.0)};
    return chooser.Choose(chooser.TypeOrder(), allocated, context);
  }
};

// Jobs of random models get random allocations; the incremental chooser (a heap over the
// tracked combinations, a cursor over untracked pairs) must choose what the plain scan over
// every combination chooses.
TEST(ChooserTest, IncrementalChoiceEqualsThePlainScan) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    Parts lazy({{"v100", 3, 1}, {"k80", 2, 1}}, false, {}, /*packing=*/true);
    Parts plain({{"v100", 3, 1}, {"k80", 2, 1}}, true, {}, /*packing=*/true);
    PyRandom random(seed);
    for (int j = 0; j < 7; ++j) {
      const JobDescription d = Job(random.Random() < 0.5 ? "A" : "B");
      for (Parts* p : {&lazy, &plain}) p->accounting.Admitted(AdmitOrDie(p->table, JobId(j), d));
    }
    for (Parts* p : {&lazy, &plain}) p->accounting.Reset(Seconds(0.0));
    for (int j = 0; j < 7; ++j) {
      const double share = random.Random() < 0.3 ? 0.0 : random.Random();
      for (Parts* p : {&lazy, &plain}) {
        const int slot = p->table.SlotOf(Combination::Single(JobId(j)));
        ComboState& c = p->table.combo(slot);
        c.in_allocation = true;
        std::fill(c.allocation.begin(), c.allocation.end(), share);
        p->allocated.push_back(slot);
      }
    }
    plain.accounting.UpdatePriorities();
    const std::vector<Chosen> a = lazy.Choose();
    const std::vector<Chosen> b = plain.Choose();
    ASSERT_EQ(a.size(), b.size()) << "seed " << seed;
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(lazy.table.combo(a[k].slot).id, plain.table.combo(b[k].slot).id) << seed;
      EXPECT_EQ(a[k].type, b[k].type) << "seed " << seed;
    }
    int gpus = 0;
    for (const Chosen& c : a) gpus += c.scale_factor;
    EXPECT_LE(gpus, 5);
  }
}

// Keeps every job off the v100s.
class NoV100 final : public Scorer {
 public:
  std::string_view name() const override { return "no_v100"; }
  bool filters_choice() const override { return true; }
  bool AdmitsChoice(const ComboState&, int type, const ScoreContext&) const override {
    return type != kV100;
  }
};

TEST(ChooserTest, AFilterKeepsACombinationOffATypesQueue) {
  const NoV100 filter;
  for (bool with_filter : {false, true}) {
    Parts p({{"v100", 1, 1}, {"k80", 1, 1}}, false,
            with_filter ? std::vector<const Scorer*>{&filter} : std::vector<const Scorer*>{});
    p.accounting.Admitted(AdmitOrDie(p.table, JobId(0), Job("A")));
    const std::vector<Chosen> chosen = p.Choose();
    ASSERT_EQ(chosen.size(), 1u);
    // The user's type order puts v100 first; filtered, the job goes to the k80.
    EXPECT_EQ(chosen[0].type, with_filter ? kK80 : kV100);
  }
}

TEST(ChooserTest, HeldJobsAndTakenMembersAreNotChosen) {
  Parts p({{"v100", 2, 1}}, false, {});
  for (int j = 0; j < 3; ++j) p.accounting.Admitted(AdmitOrDie(p.table, JobId(j), Job("A")));
  ASSERT_TRUE(p.table.Hold(JobId(0), Seconds(100.0)).ok());
  const std::vector<Chosen> chosen = p.Choose();
  ASSERT_EQ(chosen.size(), 2u);
  for (const Chosen& c : chosen) {
    EXPECT_NE(p.table.combo(c.slot).id, Combination::Single(JobId(0)));
  }
}

}  // namespace
}  // namespace gavel::mechanism
