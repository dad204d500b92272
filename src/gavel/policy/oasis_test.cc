#include "gavel/policy/oasis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gavel/core/utility.h"
#include "gavel/policy/registry.h"

namespace gavel::policy {
namespace {

// Every assignment of "idle or one choice" to every slot: the best payoff of completing at the
// first slot where the units add up, paying for every slot used up to then.
double BruteForcePayoff(const ScheduleProblem& p, bool* feasible) {
  const int slots = static_cast<int>(p.choices.size());
  std::vector<int> pick(static_cast<std::size_t>(slots), -1);
  double best = -1e300;
  *feasible = false;
  while (true) {
    int done = 0;
    double cost = 0.0;
    for (int t = 0; t < slots; ++t) {
      const int c = pick[static_cast<std::size_t>(t)];
      if (c >= 0) {
        done += p.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)].units;
        cost += p.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)].cost;
      }
      if (done >= p.units) {
        *feasible = true;
        best = std::max(best, p.utility(t) - cost);
        break;
      }
    }
    // Next assignment (odometer).
    int t = 0;
    while (t < slots) {
      int& c = pick[static_cast<std::size_t>(t)];
      if (c + 1 < static_cast<int>(p.choices[static_cast<std::size_t>(t)].size())) {
        ++c;
        break;
      }
      c = -1;
      ++t;
    }
    if (t == slots) return best;
  }
}

TEST(OasisBestSchedule, MatchesBruteForceOnTinyInstances) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> units_of(0, 4);
  std::uniform_real_distribution<double> cost_of(0.0, 3.0);
  for (int trial = 0; trial < 300; ++trial) {
    ScheduleProblem p;
    p.units = 1 + trial % 6;
    const int slots = 1 + trial % 5;
    p.choices.resize(static_cast<std::size_t>(slots));
    for (auto& choices : p.choices) {
      const int count = static_cast<int>(rng() % 4);
      for (int c = 0; c < count; ++c) choices.push_back(SlotChoice{units_of(rng), cost_of(rng), 0, c + 1});
    }
    const UtilityFunction u{trial % 2 == 0 ? UtilityFamily::kSigmoid : UtilityFamily::kLinear,
                            8.0, 3.0, 1.5};
    p.utility = [&](int t) { return u.At(t + 1.0); };
    bool feasible = false;
    const double expected = BruteForcePayoff(p, &feasible);
    const Schedule s = BestSchedule(p);
    ASSERT_EQ(s.feasible, feasible) << "trial " << trial;
    if (!feasible) continue;
    EXPECT_NEAR(s.payoff, expected, 1e-9) << "trial " << trial;
    // The schedule it returns achieves that payoff: its units add up and its cost is paid.
    int done = 0;
    double cost = 0.0;
    for (const SlotChoice& c : s.per_slot) {
      done += c.units;
      cost += c.units > 0 ? c.cost : 0.0;
    }
    EXPECT_GE(done, p.units);
    EXPECT_NEAR(cost, s.cost, 1e-9);
    EXPECT_NEAR(p.utility(s.finish_slot) - s.cost, s.payoff, 1e-9);
  }
}

TEST(OasisBestSchedule, WaitsForCheapSlotsOnlyWhenUtilityAllows) {
  // Slot 0 is dear, slot 1 cheap; finishing in slot 1 loses 1 of utility.
  ScheduleProblem p;
  p.units = 2;
  p.choices = {{SlotChoice{2, 5.0, 0, 2}}, {SlotChoice{2, 1.0, 0, 2}}};
  p.utility = [](int t) { return t == 0 ? 10.0 : 9.0; };
  Schedule s = BestSchedule(p);
  EXPECT_EQ(s.finish_slot, 1);
  EXPECT_DOUBLE_EQ(s.payoff, 8.0);
  p.utility = [](int t) { return t == 0 ? 10.0 : 4.0; };
  s = BestSchedule(p);
  EXPECT_EQ(s.finish_slot, 0);
  EXPECT_DOUBLE_EQ(s.payoff, 5.0);
}

// A cluster of `gpus` one-GPU servers of one type and `jobs` jobs that each need one GPU for
// `slots` slots of 100 s.
PolicyInput Problem(int gpus, int jobs, double utility_value, double midpoint) {
  PolicyInput input;
  input.gpu_types = {"v100"};
  input.gpu_counts = {static_cast<double>(gpus)};
  input.gpus_per_server = {1};
  input.throughput = Matrix(static_cast<std::size_t>(jobs), 1, 1.0);
  for (int i = 0; i < jobs; ++i) {
    PolicyJob job;
    job.id = JobId(i);
    job.steps_remaining = 300.0;  // 3 slots at 1 step/s
    job.time_since_start = Seconds(0.0);
    job.utility = UtilityFunction{UtilityFamily::kLinear, utility_value, midpoint, 1.0};
    input.jobs.push_back(job);
  }
  return input;
}

TEST(Oasis, AdmitsWhileCheapAndNeverOverCommitsAGpuType) {
  OasisOptions options;
  options.slot_seconds = 100.0;
  options.horizon_slots = 50;
  options.units = 6;
  const auto policy = MakeOasis(options);
  // 12 jobs on 2 GPUs: utility falls to 0 after 900 s, so at most 2 GPUs × 9 slots / 3 slots
  // = 6 jobs can earn anything; the rest must be rejected.
  const PolicyInput input = Problem(2, 12, 10.0, 900.0);
  const Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  int admitted = 0;
  double running = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (out->rejected[i] == 0) ++admitted;
    running += out->allocation(i, 0) * out->workers[i];
    EXPECT_TRUE(out->rejected[i] == 0 || out->allocation(i, 0) == 0.0);
  }
  EXPECT_GE(admitted, 1);
  EXPECT_LE(admitted, 6);
  EXPECT_LE(running, 2.0);  // no GPU promised twice
  EXPECT_EQ(running, 2.0);  // and none left idle while admitted jobs wait
}

TEST(Oasis, ChoosesElasticWorkerCountsInRange) {
  OasisOptions options;
  options.slot_seconds = 100.0;
  options.horizon_slots = 40;
  const auto policy = MakeOasis(options);
  PolicyInput input = Problem(4, 1, 10.0, 2000.0);
  PolicyJob& job = input.jobs[0];
  job.scale_factor = 1;
  job.min_workers = 1;
  job.max_workers = 4;
  job.throughput_by_workers = Matrix(4, 1);
  for (int k = 1; k <= 4; ++k) job.throughput_by_workers(static_cast<std::size_t>(k - 1), 0) = 0.9 * k;
  const Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->rejected[0], 0);
  EXPECT_GE(out->workers[0], 1);
  EXPECT_LE(out->workers[0], 4);
  EXPECT_EQ(out->allocation(0, 0), 1.0);
}

TEST(Oasis, OptionsAreChecked) {
  PolicyOptions options;
  options.params = {{"slot", "0"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"units", "x"}};
  EXPECT_FALSE(MakeOasis(options).ok());
  options.params = {{"horizon", "10"}, {"ps_ratio", "0.5"}};
  EXPECT_TRUE(MakeOasis(options).ok());
}

}  // namespace
}  // namespace gavel::policy
