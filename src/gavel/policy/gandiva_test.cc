#include "gavel/policy/gandiva.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/py_random.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

// Adds every pair of equal scale factor; each member runs at `fraction` of its own throughput
// while sharing.
void AddAllPairs(PolicyInput& input, double fraction) {
  for (std::size_t a = 0; a < input.num_jobs(); ++a) {
    for (std::size_t b = a + 1; b < input.num_jobs(); ++b) {
      if (input.jobs[a].scale_factor != input.jobs[b].scale_factor) continue;
      std::vector<double> f;
      std::vector<double> s;
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        f.push_back(input.throughput(a, j) * fraction);
        s.push_back(input.throughput(b, j) * fraction);
      }
      AddPair(input, static_cast<int>(a), static_cast<int>(b), f, s);
    }
  }
}

std::unique_ptr<Policy> MakeGandivaWith(std::uint64_t seed, bool compat = false) {
  PolicyOptions options;
  options.seed = seed;
  options.compat_gavel = compat;
  return MakeGandiva(options);
}

// Index of the pair (a, b) in input.pairs (a < b job indices).
std::size_t PairIndex(const PolicyInput& input, std::size_t a, std::size_t b) {
  for (std::size_t p = 0; p < input.pairs.size(); ++p) {
    if (static_cast<std::size_t>(input.pairs[p].first) == std::min(a, b) &&
        static_cast<std::size_t>(input.pairs[p].second) == std::max(a, b)) {
      return p;
    }
  }
  ADD_FAILURE() << "no pair " << a << "," << b;
  return 0;
}

// The pair of indices into a list of `size` jobs that random.sample(list, 2) picks next.
std::pair<std::size_t, std::size_t> NextSample(PyRandom& rng, std::size_t size) {
  const std::vector<std::size_t> drawn = rng.SampleIndices(size, 2);
  return {std::min(drawn[0], drawn[1]), std::max(drawn[0], drawn[1])};
}

// 2 k80 + 2 v100; jobs A (1 GPU), B (2 GPUs), C (1 GPU) ask for 4 GPUs, which fit: no packing,
// each job gets c_j / (3 s_i) of each type, scaled to a row sum of at most 1.
// A, C: (2/3, 2/3), sum 4/3 → (1/2, 1/2). B: (1/3, 1/3), sum 2/3, kept.
TEST(GandivaTest, JobsThatFitShareEquallyWithoutPacking) {
  PolicyInput input =
      MakeInput({"k80", "v100"}, {2, 2}, {{1, 1, {1, 2}}, {2, 2, {2, 4}}, {3, 1, {1, 3}}});
  AddAllPairs(input, 0.9);
  auto gandiva = MakeGandivaWith(0);
  const PolicyOutput out = Allocated(*gandiva, input);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_DOUBLE_EQ(out.allocation(0, j), 0.5);
    EXPECT_DOUBLE_EQ(out.allocation(1, j), 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(out.allocation(2, j), 0.5);
  }
  ASSERT_EQ(out.pair_allocation.rows(), 1u);  // only (A, C) has equal scale factors
  EXPECT_EQ(out.pair_allocation(0, 0), 0.0);
  EXPECT_EQ(out.pair_allocation(0, 1), 0.0);
  EXPECT_EQ(out.status, AllocationStatus::kHeuristic);
  EXPECT_FALSE(out.objective.has_value());
}

// One v100, jobs 1-3 of one GPU each (oversubscribed), every pair at 0.6 of the members'
// throughputs (normalised 1.2 >= 1, so pairs are kept).
//  call 1: the first draw of sample([1,2,3], 2) pairs two jobs (equal scale factors); one job
//          is left, so the loop ends. Two combinations share the v100: 1/2 each.
//  call 2: the pair is kept; the single is dropped and re-assigned alone without a draw: the
//          same allocation.
//  call 3: job 4 arrives; the unassigned list is [left-over job, job 4] and sample of two
//          out of two pairs them: two pairs at 1/2 each.
TEST(GandivaTest, OversubscribedJobsArePairedAtRandomAndPairsPersist) {
  const std::vector<TestJob> three = {{1, 1, {4}}, {2, 1, {5}}, {3, 1, {6}}};
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    PyRandom replay(seed);
    const auto [x, y] = NextSample(replay, 3);
    const std::size_t alone = 3 - x - y;  // the index not drawn

    auto gandiva = MakeGandivaWith(seed);
    PolicyInput input = MakeInput({"v100"}, {1}, three);
    AddAllPairs(input, 0.6);
    for (int call = 0; call < 2; ++call) {
      const PolicyOutput out = Allocated(*gandiva, input);
      for (std::size_t p = 0; p < 3; ++p) {
        EXPECT_DOUBLE_EQ(out.pair_allocation(p, 0), p == PairIndex(input, x, y) ? 0.5 : 0.0)
            << "seed " << seed << " call " << call;
      }
      for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_DOUBLE_EQ(out.allocation(i, 0), i == alone ? 0.5 : 0.0) << "seed " << seed;
      }
      ExpectValidAllocation(input, out, {.time = 1e-12, .capacity = 1e-9});
    }

    std::vector<TestJob> four = three;
    four.push_back({4, 1, {7}});
    PolicyInput grown = MakeInput({"v100"}, {1}, four);
    AddAllPairs(grown, 0.6);
    const PolicyOutput out = Allocated(*gandiva, grown);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out.allocation(i, 0), 0.0);
    for (std::size_t p = 0; p < grown.pairs.size(); ++p) {
      const bool chosen = p == PairIndex(grown, x, y) || p == PairIndex(grown, alone, 3);
      EXPECT_DOUBLE_EQ(out.pair_allocation(p, 0), chosen ? 0.5 : 0.0) << "seed " << seed;
    }
    ExpectValidAllocation(grown, out, {.time = 1e-12, .capacity = 1e-9});
  }
}

// The keep rule sums packed/isolated over both members AND every GPU type. With one k80 and
// one v100, three 1-GPU jobs and every member at 0.3 of its speed while sharing, a pair is
// worth 0.6 of a job on each type (worse than taking turns), yet it scores 4 × 0.3 = 1.2 >= 1
// and is kept: call 2 makes no draw and repeats call 1's pair. At 0.2 it scores 0.8 < 1 and is
// dropped: call 2 draws again from all three jobs. Expected pairs come from replaying the
// draws; seeds where the two draws differ tell the cases apart.
TEST(GandivaTest, PairsScoringBelowOneSummedOverAllTypesAreRedrawn) {
  const std::vector<TestJob> jobs = {{1, 1, {10, 10}}, {2, 1, {10, 10}}, {3, 1, {10, 10}}};
  int discriminating = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    PyRandom replay(seed);
    const auto first_draw = NextSample(replay, 3);
    const auto second_draw = NextSample(replay, 3);
    if (first_draw != second_draw) ++discriminating;
    for (const double fraction : {0.3, 0.2}) {
      PolicyInput input = MakeInput({"k80", "v100"}, {1, 1}, jobs);
      AddAllPairs(input, fraction);
      auto gandiva = MakeGandivaWith(seed);
      Allocated(*gandiva, input);
      const PolicyOutput out = Allocated(*gandiva, input);
      const auto expected = fraction == 0.3 ? first_draw : second_draw;
      const std::size_t expected_pair = PairIndex(input, expected.first, expected.second);
      for (std::size_t p = 0; p < 3; ++p) {
        // Two combinations (a pair and a single): 1/2 of each type, row sum 1.
        EXPECT_DOUBLE_EQ(out.pair_allocation(p, 0), p == expected_pair ? 0.5 : 0.0)
            << "seed " << seed << " fraction " << fraction;
      }
    }
  }
  EXPECT_GT(discriminating, 0);
}

// One type with 2 GPUs; A needs 1 GPU, B needs 2 (3 > 2: oversubscribed). Both draws pick
// {A, B}, whose scale factors differ, so both run alone: m = 2 combinations, A gets
// 2/2/1 = 1, B gets 2/2/2 = 1/2 (A uses 1 GPU, B 2 × 1/2 = 1: the 2 GPUs exactly).
TEST(GandivaTest, JobsOfDifferentScaleFactorsNeverShare) {
  const PolicyInput input = MakeInput({"v100"}, {2}, {{1, 1, {1}}, {2, 2, {2}}});
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    auto gandiva = MakeGandivaWith(seed);
    const PolicyOutput out = Allocated(*gandiva, input);
    EXPECT_DOUBLE_EQ(out.allocation(0, 0), 1.0);
    EXPECT_DOUBLE_EQ(out.allocation(1, 0), 0.5);
    EXPECT_EQ(out.pair_allocation.rows(), 0u);
  }
}

// Jobs whose co-located throughput is unknown (no pair in the input) are never paired: two
// 1-GPU jobs on one GPU run alone at 1/2 each.
TEST(GandivaTest, JobsWithoutAKnownPairRunAlone) {
  const PolicyInput input = MakeInput({"v100"}, {1}, {{1, 1, {1}}, {2, 1, {2}}});
  auto gandiva = MakeGandivaWith(3);
  const PolicyOutput out = Allocated(*gandiva, input);
  EXPECT_DOUBLE_EQ(out.allocation(0, 0), 0.5);
  EXPECT_DOUBLE_EQ(out.allocation(1, 0), 0.5);
}

TEST(GandivaTest, EmptyInputGivesEmptyAllocation) {
  auto gandiva = MakeGandivaWith(0);
  const PolicyOutput out = Allocated(*gandiva, MakeInput({"k80", "v100"}, {1, 1}, {}));
  EXPECT_EQ(out.allocation.rows(), 0u);
  EXPECT_EQ(out.allocation.cols(), 2u);
}

// Over random sequences of arrivals and departures: two policies with one seed give the same
// allocations (determinism), and every allocation is feasible.
TEST(GandivaTest, DeterministicForASeedAndAlwaysFeasible) {
  std::mt19937 rng(99);
  const std::vector<std::string> types = {"k80", "p100", "v100"};
  const std::vector<double> counts = {2, 1, 2};
  for (const bool compat : {false, true}) {
    auto first = MakeGandivaWith(42, compat);
    auto second = MakeGandivaWith(42, compat);
    std::vector<TestJob> active;
    std::uint64_t next_id = 0;
    for (int call = 0; call < 60; ++call) {
      std::erase_if(active, [&](const TestJob&) { return rng() % 4 == 0; });
      const int arrivals = static_cast<int>(rng() % 3);
      for (int a = 0; a < arrivals; ++a) {
        TestJob job{next_id++, rng() % 3 == 0 ? 2 : 1, {}};
        for (int j = 0; j < 3; ++j) job.throughput.push_back(1.0 + static_cast<double>(rng() % 9));
        active.push_back(job);
      }
      PolicyInput input = MakeInput(types, counts, active);
      AddAllPairs(input, call % 3 == 0 ? 0.1 : 0.7);
      const PolicyOutput a = Allocated(*first, input);
      const PolicyOutput b = Allocated(*second, input);
      EXPECT_EQ(a.allocation.data(), b.allocation.data()) << "call " << call;
      EXPECT_EQ(a.pair_allocation.data(), b.pair_allocation.data()) << "call " << call;
      ExpectValidAllocation(input, a, {.time = 1e-12, .capacity = 1e-9});
    }
  }
}

}  // namespace
}  // namespace gavel::policy
