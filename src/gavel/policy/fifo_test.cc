#include "gavel/policy/fifo.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gavel/core/py_random.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

std::unique_ptr<Policy> MakeFifoWith(Variant variant, bool compat, std::uint64_t seed) {
  PolicyOptions options;
  options.compat_gavel = compat;
  options.seed = seed;
  return MakeFifo(variant, options);
}

// Σ_i s_i X[i][j] + Σ_p s_p X[p][j] <= c_j for every type.
void ExpectWithinCapacity(const PolicyInput& input, const PolicyOutput& out) {
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    double used = 0.0;
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      used += input.jobs[i].scale_factor * out.allocation(i, j);
    }
    for (std::size_t p = 0; p < out.pair_allocation.rows(); ++p) {
      used += input.jobs[static_cast<std::size_t>(input.pairs[p].first)].scale_factor *
              out.pair_allocation(p, j);
    }
    EXPECT_LE(used, input.gpu_counts[j] + 1e-9) << input.gpu_types[j];
  }
}

const std::vector<std::string> kThreeTypes = {"k80", "p100", "v100"};

// The original's FIFO (scheduler/policies/fifo.py), verified against it: 2 GPUs of each type, six
// 1-GPU jobs running at 1/2/3 steps/s on k80/p100/v100. The original always takes the last type
// with any free GPU (v100). Job 1 takes v100 (2 → 1). Job 2 takes v100 (1 → 0), and the removed
// entry of the type list is the one at the drawn index d2 among [k80, p100, v100]. Seed 0 draws
// d2 = 1 (CPython: Random(0).randrange(3) twice gives 1, 1), so p100 is removed and v100 stays last
// in the list; from then on v100 is never a candidate (count <= 0) but is still the last entry, so
// jobs 3-6 also get v100 (counts 2, 2, then v100 = -4) while k80 keeps free GPUs.
TEST(FifoTest, CompatReproducesTheVerifiedAllOnV100Example) {
  std::vector<TestJob> jobs;
  for (std::uint64_t id = 0; id < 6; ++id) jobs.push_back({id, 1, {1, 2, 3}});
  const PolicyInput input = MakeInput(kThreeTypes, {2, 2, 2}, jobs);
  auto fifo = MakeFifoWith(Variant::kAgnostic, /*compat=*/true, /*seed=*/0);
  const PolicyOutput out = Allocated(*fifo, input);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(TypeOf(out, i), 2) << "job " << i;
  EXPECT_EQ(out.status, AllocationStatus::kHeuristic);
  EXPECT_FALSE(out.objective.has_value());
}

// The same instance for many seeds, derived case by case from the draws (replayed here with
// an independent generator of the same seed):
//  * d2 != 2: as above, all six on v100.
//  * d2 == 2: v100 is removed, the list is [k80, p100] and p100 becomes the "last" type. Job 3
//    (draw d3 over 2 candidates) and job 4 (draw d4) take p100 (2 → 0), and job 4 removes
//    entry d4: if d4 == 1 (p100) the list is [k80], jobs 5 and 6 take k80 (one draw each over
//    one candidate); if d4 == 0 (k80) the list is [p100] with no free GPU, job 5 finds no
//    candidate and the loop stops: jobs 5 and 6 get nothing.
TEST(FifoTest, CompatTypeChoiceFollowsTheStaleLoopVariableForEverySeed) {
  std::vector<TestJob> jobs;
  for (std::uint64_t id = 0; id < 6; ++id) jobs.push_back({id, 1, {1, 2, 3}});
  const PolicyInput input = MakeInput(kThreeTypes, {2, 2, 2}, jobs);
  int all_v100_seeds = 0;
  int other_seeds = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    PyRandom replay(seed);
    replay.RandRange(3);
    const auto d2 = replay.RandRange(3);
    std::vector<int> expected;
    if (d2 != 2) {
      expected = {2, 2, 2, 2, 2, 2};
      ++all_v100_seeds;
    } else {
      replay.RandRange(2);
      const auto d4 = replay.RandRange(2);
      expected =
          d4 == 1 ? std::vector<int>{2, 2, 1, 1, 0, 0} : std::vector<int>{2, 2, 1, 1, -1, -1};
      ++other_seeds;
    }
    auto fifo = MakeFifoWith(Variant::kAgnostic, /*compat=*/true, seed);
    const PolicyOutput out = Allocated(*fifo, input);
    for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(TypeOf(out, i), expected[i]) << "seed " << seed;
  }
  EXPECT_GT(all_v100_seeds, 0);
  EXPECT_GT(other_seeds, 0);
}

// By default the drawn candidate is used: six jobs on six GPUs all run, two per type.
TEST(FifoTest, AgnosticDefaultUsesTheDrawnTypeAndRespectsCapacity) {
  std::vector<TestJob> jobs;
  for (std::uint64_t id = 0; id < 6; ++id) jobs.push_back({id, 1, {1, 2, 3}});
  const PolicyInput input = MakeInput(kThreeTypes, {2, 2, 2}, jobs);
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    auto fifo = MakeFifoWith(Variant::kAgnostic, /*compat=*/false, seed);
    const PolicyOutput out = Allocated(*fifo, input);
    std::vector<int> per_type(3, 0);
    for (std::size_t i = 0; i < 6; ++i) {
      const int type = TypeOf(out, i);
      ASSERT_GE(type, 0) << "seed " << seed << " job " << i;
      ++per_type[static_cast<std::size_t>(type)];
    }
    EXPECT_EQ(per_type, (std::vector<int>{2, 2, 2})) << "seed " << seed;
  }
}

// One type with 2 GPUs; jobs 1 (1 GPU), 2 (2 GPUs), 3 (1 GPU). Job 1 takes a GPU, job 2 needs
// two and only one is free, so the loop stops: job 3 waits although a GPU is free.
TEST(FifoTest, HeadOfLineBlocking) {
  const PolicyInput input = MakeInput({"v100"}, {2}, {{1, 1, {1.0}}, {2, 2, {1.5}}, {3, 1, {1.0}}});
  for (const Variant variant : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    for (const bool compat : {false, true}) {
      auto fifo = MakeFifoWith(variant, compat, 3);
      const PolicyOutput out = Allocated(*fifo, input);
      EXPECT_EQ(TypeOf(out, 0), 0);
      EXPECT_EQ(TypeOf(out, 1), -1);
      EXPECT_EQ(TypeOf(out, 2), -1);
    }
  }
}

// Agnostic FIFO keeps a job on its type across calls (1 k80, 1 v100):
//  call 1: jobs 1, 2 get one type each (which is random);
//  call 2: job 3 arrives; no GPU is free; jobs 1 and 2 keep their types;
//  call 3: job 1 has finished; job 3, the head of the queue, takes job 1's type and job 2
//          keeps its own.
TEST(FifoTest, AgnosticAssignmentsAreStickyAcrossCalls) {
  const std::vector<std::string> types = {"k80", "v100"};
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    auto fifo = MakeFifoWith(Variant::kAgnostic, false, seed);
    const PolicyOutput first =
        Allocated(*fifo, MakeInput(types, {1, 1}, {{1, 1, {1, 2}}, {2, 1, {1, 2}}}));
    const int type1 = TypeOf(first, 0);
    const int type2 = TypeOf(first, 1);
    ASSERT_GE(type1, 0);
    ASSERT_GE(type2, 0);
    EXPECT_NE(type1, type2);
    const PolicyOutput second = Allocated(
        *fifo, MakeInput(types, {1, 1}, {{1, 1, {1, 2}}, {2, 1, {1, 2}}, {3, 1, {1, 2}}}));
    EXPECT_EQ(TypeOf(second, 0), type1);
    EXPECT_EQ(TypeOf(second, 1), type2);
    EXPECT_EQ(TypeOf(second, 2), -1);
    const PolicyOutput third =
        Allocated(*fifo, MakeInput(types, {1, 1}, {{2, 1, {1, 2}}, {3, 1, {1, 2}}}));
    EXPECT_EQ(TypeOf(third, 0), type2);
    EXPECT_EQ(TypeOf(third, 1), type1);
  }
}

// The original hands a finished job's GPUs to the queue head before subtracting the running
// jobs that sort after it. One type with 2 GPUs: call 1 puts jobs 1 and 2 (1 GPU each) there.
// Call 2: job 1 has finished, job 3 needs 2 GPUs. The original sees 2 free GPUs when it visits
// job 1 (job 2 not yet counted), gives them to job 3, then counts job 2: 3 GPUs in use on a
// 2-GPU type. By default only 1 GPU is free, so job 3 waits.
TEST(FifoTest, FinishedJobsGpusAreHandedOverWithCorrectAccounting) {
  for (const bool compat : {false, true}) {
    auto fifo = MakeFifoWith(Variant::kAgnostic, compat, 0);
    const PolicyOutput first =
        Allocated(*fifo, MakeInput({"v100"}, {2}, {{1, 1, {1}}, {2, 1, {1}}}));
    EXPECT_EQ(TypeOf(first, 0), 0);
    EXPECT_EQ(TypeOf(first, 1), 0);
    const PolicyInput input = MakeInput({"v100"}, {2}, {{2, 1, {1}}, {3, 2, {1}}});
    const PolicyOutput second = Allocated(*fifo, input);
    EXPECT_EQ(TypeOf(second, 0), 0);
    EXPECT_EQ(TypeOf(second, 1), compat ? 0 : -1) << (compat ? "compat" : "default");
    if (!compat) ExpectWithinCapacity(input, second);
  }
}

// Perf: each job takes its fastest type among those with room, ties to the earlier name.
// Job 1 (1, 5, 5): p100 and v100 tie at 5 → p100. Job 2 (1, 5, 4): p100 is full → v100.
// Job 3 (9, 1, 1): k80 is its fastest anyway. Recomputed every call: when job 0 arrives
// with (1, 9, 1) it takes p100 and job 1 moves to v100, job 2 to k80, job 3 waits.
TEST(FifoTest, PerfPicksTheFastestFittingTypeAndIsRecomputed) {
  auto fifo = MakeFifoWith(Variant::kPerf, false, 0);
  const std::vector<TestJob> jobs = {{1, 1, {1, 5, 5}}, {2, 1, {1, 5, 4}}, {3, 1, {9, 1, 1}}};
  const PolicyOutput first = Allocated(*fifo, MakeInput(kThreeTypes, {1, 1, 1}, jobs));
  EXPECT_EQ(TypeOf(first, 0), 1);
  EXPECT_EQ(TypeOf(first, 1), 2);
  EXPECT_EQ(TypeOf(first, 2), 0);
  std::vector<TestJob> more = {{0, 1, {1, 9, 1}}};
  more.insert(more.end(), jobs.begin(), jobs.end());
  const PolicyOutput second = Allocated(*fifo, MakeInput(kThreeTypes, {1, 1, 1}, more));
  EXPECT_EQ(TypeOf(second, 0), 1);
  EXPECT_EQ(TypeOf(second, 1), 2);
  EXPECT_EQ(TypeOf(second, 2), 0);
  EXPECT_EQ(TypeOf(second, 3), -1);
}

// A job that cannot run on the type it would get is skipped without blocking the queue.
// Job 1 runs nowhere (its "fastest" candidate is k80 at 0), job 2 takes v100, job 3 k80.
TEST(FifoTest, PerfSkipsJobsThatCannotRunWithoutBlocking) {
  auto fifo = MakeFifoWith(Variant::kPerf, false, 0);
  const PolicyOutput out = Allocated(
      *fifo, MakeInput({"k80", "v100"}, {1, 1}, {{1, 1, {0, 0}}, {2, 1, {1, 2}}, {3, 1, {1, 2}}}));
  EXPECT_EQ(TypeOf(out, 0), -1);
  EXPECT_EQ(TypeOf(out, 1), 1);
  EXPECT_EQ(TypeOf(out, 2), 0);
}

// By default an agnostic job is never sent to a type where it cannot run: job 1 runs only on
// v100, so whatever the draw it gets v100 and job 2 k80.
TEST(FifoTest, AgnosticDefaultAvoidsTypesWhereTheJobCannotRun) {
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    auto fifo = MakeFifoWith(Variant::kAgnostic, false, seed);
    const PolicyOutput out =
        Allocated(*fifo, MakeInput({"k80", "v100"}, {1, 1}, {{1, 1, {0, 2}}, {2, 1, {1, 2}}}));
    EXPECT_EQ(TypeOf(out, 0), 1) << "seed " << seed;
    EXPECT_EQ(TypeOf(out, 1), 0) << "seed " << seed;
  }
}

// Packing (three v100s; jobs 1, 2, 3 of two GPUs each). Job 1 takes two GPUs; job 2 needs two
// and one is free, so it stops the loop. Pair (1,2) has normalised throughput 0.8 + 0.8 = 1.6
// and pair (1,3) 0.9 + 0.9 = 1.8, both above 1.5. By default job 2, first in line, packs with
// job 1; job 3 then finds no single running job and waits. The original drops job 2 from the
// queue when it stops the loop, so job 3 jumps ahead and packs with job 1.
TEST(FifoTest, PackingStartsWithTheBlockedJobByDefault) {
  PolicyInput input = MakeInput({"v100"}, {3}, {{1, 2, {10}}, {2, 2, {10}}, {3, 2, {10}}});
  AddPair(input, 0, 1, {8}, {8});
  AddPair(input, 0, 2, {9}, {9});
  AddPair(input, 1, 2, {9}, {9});
  for (const bool compat : {false, true}) {
    auto fifo = MakeFifoWith(Variant::kPacked, compat, 0);
    const PolicyOutput out = Allocated(*fifo, input);
    ASSERT_EQ(out.pair_allocation.rows(), 3u);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(TypeOf(out, i), -1);
    EXPECT_EQ(out.pair_allocation(0, 0), compat ? 0.0 : 1.0);
    EXPECT_EQ(out.pair_allocation(1, 0), compat ? 1.0 : 0.0);
    EXPECT_EQ(out.pair_allocation(2, 0), 0.0);
    ExpectWithinCapacity(input, out);
  }
}

// Two v100s hold jobs 1 and 2 (one GPU each); job 3 waits (no type has a free GPU, so the
// main loop never pops it) and is offered to the running jobs in order.
struct PackingCase {
  double with_job1[2];  // pair (1,3): co-located steps/s of job 1 and job 3 (alone: 10)
  double with_job2[2];  // pair (2,3)
  int partner;          // job index job 3 joins, or -1
};

TEST(FifoTest, PackingChoosesTheBestPartnerStrictlyAboveTheThreshold) {
  const PackingCase cases[] = {
      // 1.6 vs 0.9 + 0.85 = 1.75: the larger wins.
      {{8, 8}, {9, 8.5}, 1},
      // 1.6 vs 1.5: job 1.
      {{8, 8}, {7.5, 7.5}, 0},
      // 1.5 and 1.5: neither is above the threshold; job 3 waits.
      {{7.5, 7.5}, {7.5, 7.5}, -1},
      // 1.75 twice: the first running job in assignment order (job 1) keeps it.
      {{9, 8.5}, {9, 8.5}, 0},
  };
  for (const PackingCase& c : cases) {
    PolicyInput input = MakeInput({"v100"}, {2}, {{1, 1, {10}}, {2, 1, {10}}, {3, 1, {10}}});
    AddPair(input, 0, 1, {0}, {0});
    AddPair(input, 0, 2, {c.with_job1[0]}, {c.with_job1[1]});
    AddPair(input, 1, 2, {c.with_job2[0]}, {c.with_job2[1]});
    auto fifo = MakeFifoWith(Variant::kPacked, false, 0);
    const PolicyOutput out = Allocated(*fifo, input);
    EXPECT_EQ(TypeOf(out, 0), c.partner == 0 ? -1 : 0);
    EXPECT_EQ(TypeOf(out, 1), c.partner == 1 ? -1 : 0);
    EXPECT_EQ(TypeOf(out, 2), -1);
    EXPECT_EQ(out.pair_allocation(1, 0), c.partner == 0 ? 1.0 : 0.0);
    EXPECT_EQ(out.pair_allocation(2, 0), c.partner == 1 ? 1.0 : 0.0);
    ExpectWithinCapacity(input, out);
  }
}

// Random arrivals and completions over many calls. Checked every call, by default: entries are
// 0 or 1, a job holds at most one type or pair, capacity holds; agnostic jobs keep their type
// while they run; with every throughput positive, perf runs exactly a prefix of the queue
// and the first job left out fits on no type (head-of-line blocking).
TEST(FifoTest, InvariantsOverRandomCallSequences) {
  std::mt19937 rng(2024);
  const std::vector<double> counts = {4, 3, 2};
  for (const Variant variant : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    auto fifo = MakeFifoWith(variant, false, 5);
    std::vector<TestJob> active;
    std::uint64_t next_id = 0;
    std::map<std::uint64_t, int> held;  // job id → type held in the previous call
    for (int call = 0; call < 60; ++call) {
      std::erase_if(active, [&](const TestJob&) { return rng() % 4 == 0; });
      const int arrivals = static_cast<int>(rng() % 3);
      for (int a = 0; a < arrivals; ++a) {
        const int sizes[] = {1, 1, 2, 4};
        TestJob job{next_id++, sizes[rng() % 4], {}};
        for (int j = 0; j < 3; ++j) job.throughput.push_back(1.0 + static_cast<double>(rng() % 5));
        active.push_back(job);
      }
      PolicyInput input = MakeInput(kThreeTypes, counts, active);
      if (variant == Variant::kPacked) {
        for (std::size_t a = 0; a < active.size(); ++a) {
          for (std::size_t b = a + 1; b < active.size(); ++b) {
            if (active[a].scale_factor != active[b].scale_factor) continue;
            std::vector<double> f;
            std::vector<double> s;
            for (int j = 0; j < 3; ++j) {
              f.push_back(active[a].throughput[static_cast<std::size_t>(j)] * 0.8);
              s.push_back(active[b].throughput[static_cast<std::size_t>(j)] * 0.8);
            }
            AddPair(input, static_cast<int>(a), static_cast<int>(b), f, s);
          }
        }
      }
      const PolicyOutput out = Allocated(*fifo, input);
      ExpectWithinCapacity(input, out);
      std::vector<int> combos(active.size(), 0);
      std::vector<double> used(3, 0.0);
      for (std::size_t i = 0; i < active.size(); ++i) {
        const int type = TypeOf(out, i);
        if (type >= 0) {
          ++combos[i];
          used[static_cast<std::size_t>(type)] += active[i].scale_factor;
        }
      }
      for (std::size_t p = 0; p < out.pair_allocation.rows(); ++p) {
        for (std::size_t j = 0; j < 3; ++j) {
          const double x = out.pair_allocation(p, j);
          EXPECT_TRUE(x == 0.0 || x == 1.0);
          if (x == 1.0) {
            ++combos[static_cast<std::size_t>(input.pairs[p].first)];
            ++combos[static_cast<std::size_t>(input.pairs[p].second)];
            used[j] += active[static_cast<std::size_t>(input.pairs[p].first)].scale_factor;
          }
        }
      }
      for (std::size_t i = 0; i < active.size(); ++i) EXPECT_LE(combos[i], 1);

      if (variant == Variant::kAgnostic) {
        std::map<std::uint64_t, int> now;
        for (std::size_t i = 0; i < active.size(); ++i) {
          const int type = TypeOf(out, i);
          if (type < 0) continue;
          now[active[i].id] = type;
          const auto before = held.find(active[i].id);
          if (before != held.end()) {
            EXPECT_EQ(before->second, type) << "job " << active[i].id;
          }
        }
        held = now;
      }
      if (variant == Variant::kPerf) {
        std::size_t first_out = active.size();
        for (std::size_t i = 0; i < active.size(); ++i) {
          if (TypeOf(out, i) < 0 && first_out == active.size()) first_out = i;
          if (first_out < i) {
            EXPECT_EQ(TypeOf(out, i), -1) << "job jumped the queue";
          }
        }
        if (first_out < active.size()) {
          for (std::size_t j = 0; j < 3; ++j) {
            EXPECT_LT(counts[j] - used[j], active[first_out].scale_factor);
          }
        }
      }
    }
  }
}

TEST(FifoTest, EmptyInputGivesEmptyAllocation) {
  for (const Variant variant : {Variant::kAgnostic, Variant::kPerf, Variant::kPacked}) {
    auto fifo = MakeFifoWith(variant, false, 0);
    const PolicyOutput out = Allocated(*fifo, MakeInput(kThreeTypes, {1, 1, 1}, {}));
    EXPECT_EQ(out.allocation.rows(), 0u);
    EXPECT_EQ(out.allocation.cols(), 3u);
  }
}

}  // namespace
}  // namespace gavel::policy
