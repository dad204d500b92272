// themis: the partial-allocation auction against a hand-worked two-app example and against
// brute force (every split of one GPU type among apps of one-GPU jobs, where the greedy is
// exact), payments from their definition, and invariants of the whole policy on random
// problems (capacity never exceeded, shares in [0, 1], no job on a type it cannot use).
#include "gavel/policy/themis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "gavel/core/throughput_table.h"
#include "gavel/policy/registry.h"
#include "gavel/workload/generator.h"

namespace gavel::policy {
namespace {

struct Job {
  int app = -1;
  int scale_factor = 1;
  double steps = 100.0;
  double elapsed = 0.0;
};

// One type per count; every job runs everywhere at 1 step/s unless `throughput` says otherwise.
PolicyInput Input(const std::vector<double>& counts, const std::vector<Job>& jobs) {
  PolicyInput input;
  for (std::size_t j = 0; j < counts.size(); ++j) input.gpu_types.push_back(std::string(1, char('a' + j)));
  input.gpu_counts = counts;
  input.gpus_per_server.assign(counts.size(), 1);
  input.throughput = Matrix(jobs.size(), counts.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    PolicyJob row;
    row.id = JobId(i);
    row.app = jobs[i].app;
    row.scale_factor = jobs[i].scale_factor;
    row.steps_remaining = jobs[i].steps;
    row.time_since_start = Seconds(jobs[i].elapsed);
    input.jobs.push_back(row);
    for (std::size_t j = 0; j < counts.size(); ++j) input.throughput(i, j) = 1.0;
  }
  input.pair_throughput_first = Matrix(0, counts.size());
  input.pair_throughput_second = Matrix(0, counts.size());
  return input;
}

PolicyOutput Allocated(const std::string& name, const PolicyInput& input) {
  Result<std::unique_ptr<Policy>> policy = MakePolicy(name, PolicyOptions{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  Result<PolicyOutput> out = (*policy)->Allocate(input);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return *out;
}

TEST(ThemisTest, HandWorkedTwoAppAuction) {
  // 4 GPUs of one type. App A: two one-GPU jobs; app B: three; every job 100 s of work, both
  // just arrived, so 1/ρ is proportional to the GPUs won (ρ = (0 + W/r)/T_id).
  // Proportional fairness: max g_A·g_B over g_A ≤ 2, g_B ≤ 3, g_A + g_B ≤ 4 → (2, 2) (4 > 1·3).
  // Without A, B takes 3; without B, A takes its 2. Payments:
  //   c_A = v_B(2) / v_B(3) = 2/3,  c_B = v_A(2) / v_A(2) = 1.
  // A keeps 2/3 of its two GPUs; the 2/3 GPU it pays goes to B's unserved third job.
  const PolicyInput input = Input({4}, {{.app = 0}, {.app = 0}, {.app = 1}, {.app = 1}, {.app = 1}});
  const PolicyOutput out = Allocated("themis:f=0", input);
  EXPECT_NEAR(out.allocation(0, 0), 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(out.allocation(1, 0), 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(out.allocation(2, 0), 1.0, 1e-12);
  EXPECT_NEAR(out.allocation(3, 0), 1.0, 1e-12);
  EXPECT_NEAR(out.allocation(4, 0), 2.0 / 3.0, 1e-12);

  // The auction alone, same numbers.
  AuctionApp a{.jobs = {{1, {1.0}}, {1, {1.0}}}, .elapsed = 0, .work = 200, .isolated = 100};
  AuctionApp b{.jobs = {{1, {1.0}}, {1, {1.0}}, {1, {1.0}}}, .elapsed = 0, .work = 300,
               .isolated = 150};
  const AuctionResult r = PartialAllocationAuction({a, b}, {4});
  EXPECT_EQ(r.type_of[0], (std::vector<int>{0, 0}));
  EXPECT_EQ(r.type_of[1], (std::vector<int>{0, 0, -1}));
  EXPECT_NEAR(r.keep[0], 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.keep[1], 1.0, 1e-12);
}

TEST(ThemisTest, GeneratedHyperparameterSearchBidsAsOneApp) {
  // Two generated searches of two trials each (the workload's --hpo-fraction 1 --hpo-trials 2),
  // all arriving at 0, on 3 GPUs of one type, every app bidding. As two bidders: the greedy
  // gives each app one GPU, then the third to app 0 (equal gains, lower index); app 0's payment
  // is c = v_1(1 GPU) / v_1(2 GPUs) = 1/2 (valuations are proportional to the rate at elapsed
  // 0), so its two trials keep half a GPU each and the GPU it pays serves app 1's second trial.
  // Were every trial its own bidder, three would win a whole GPU at no payment (the fourth,
  // served only without one of them, does not count) and the fourth would get nothing.
  workload::GeneratorOptions options;
  options.hpo_fraction = 1.0;
  options.hpo_trials = 2;
  options.max_jobs = 2;
  auto table = ThroughputTable::LoadFile(std::string(GAVEL_SOURCE_DIR) + "/data/simulation_throughputs.json");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  auto jobs = workload::GenerateJobs(options, *table, 100);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 4u);
  std::vector<Job> rows;
  for (const workload::TraceJob& job : *jobs) {
    ASSERT_TRUE(job.app.has_value());
    rows.push_back(Job{.app = *job.app, .scale_factor = 1, .steps = job.total_steps, .elapsed = 0.0});
  }
  ASSERT_EQ(rows[0].app, rows[1].app);
  ASSERT_EQ(rows[2].app, rows[3].app);
  ASSERT_NE(rows[0].app, rows[2].app);
  PolicyOutput out = Allocated("themis:f=0", Input({3}, rows));
  EXPECT_NEAR(out.allocation(0, 0), 0.5, 1e-12);
  EXPECT_NEAR(out.allocation(1, 0), 0.5, 1e-12);
  EXPECT_NEAR(out.allocation(2, 0), 1.0, 1e-12);
  EXPECT_NEAR(out.allocation(3, 0), 1.0, 1e-12);
  // The same jobs without their app ids: four bidders.
  for (Job& row : rows) row.app = -1;
  out = Allocated("themis:f=0", Input({3}, rows));
  std::vector<double> shares;
  for (std::size_t i = 0; i < 4; ++i) shares.push_back(out.allocation(i, 0));
  std::sort(shares.begin(), shares.end());
  EXPECT_EQ(shares, (std::vector<double>{0.0, 1.0, 1.0, 1.0}));
}

TEST(ThemisTest, WaitingAppBidsFirstAndLeftoversFollowRho) {
  // 1 GPU, two single-job apps. Job 1 has waited 500 s of its 100 s: its ρ on a fair share
  // is larger, so with f = 0.5 only it bids and wins the GPU.
  const PolicyInput input = Input({1}, {{.elapsed = 0}, {.elapsed = 500}});
  PolicyOutput out = Allocated("themis:f=0.5", input);
  EXPECT_EQ(out.allocation(0, 0), 0.0);
  EXPECT_EQ(out.allocation(1, 0), 1.0);
  // f = 1: no auction; the leftover pass alone, largest ρ first, gives the same.
  out = Allocated("themis:f=1", input);
  EXPECT_EQ(out.allocation(1, 0), 1.0);
  EXPECT_EQ(out.allocation(0, 0), 0.0);
}

TEST(ThemisTest, AnAppGivesWhatItWinsToItsJobFurthestBehindFirst) {
  // One GPU, one app of two trials that arrived together 1,000 s ago: job 0 has 10,000 s of
  // work left, job 1 (an early-stopped trial) 100 s. The app's ρ is the same whichever runs;
  // job by job, on the app's share (1 GPU), ρ_0 = (1,000 + 10,000) / 10,000 = 1.1 and
  // ρ_1 = (1,000 + 100) / 100 = 11, so job 1 runs (before, the app's first job took it).
  const PolicyInput input = Input({1}, {{.app = 0, .steps = 10000.0, .elapsed = 1000.0},
                                        {.app = 0, .steps = 100.0, .elapsed = 1000.0}});
  for (const char* name : {"themis:f=0", "themis:f=1"}) {  // the auction, the leftovers
    const PolicyOutput out = Allocated(name, input);
    EXPECT_EQ(out.allocation(0, 0), 0.0) << name;
    EXPECT_EQ(out.allocation(1, 0), 1.0) << name;
  }
}

TEST(ThemisTest, OptionsAreChecked) {
  EXPECT_FALSE(MakePolicy("themis:f=1.5", PolicyOptions{}).ok());
  EXPECT_FALSE(MakePolicy("themis:f=-0.1", PolicyOptions{}).ok());
  EXPECT_FALSE(MakePolicy("themis:f=x", PolicyOptions{}).ok());
  EXPECT_FALSE(MakePolicy("themis:g=1", PolicyOptions{}).ok());
  EXPECT_TRUE(MakePolicy("themis:f=0.8", PolicyOptions{}).ok());
}

// Brute force: the best split of `capacity` one-GPU slots among apps whose jobs all run at
// rate 1, most apps served first, then the largest Σ log v; `excluded` gets nothing.
std::vector<int> BestSplit(const std::vector<AuctionApp>& apps, int capacity, int excluded) {
  std::vector<int> g(apps.size(), 0);
  std::vector<int> best;
  int best_served = -1;
  double best_sum = 0.0;
  const auto visit = [&](auto&& self, std::size_t a, int left) -> void {
    if (a == apps.size()) {
      int served = 0;
      double sum = 0.0;
      for (std::size_t k = 0; k < apps.size(); ++k) {
        if (g[k] == 0) continue;
        ++served;
        sum += std::log(AuctionValuation(apps[k], g[k]));
      }
      if (served > best_served || (served == best_served && sum > best_sum + 1e-12)) {
        best_served = served;
        best_sum = sum;
        best = g;
      }
      return;
    }
    const int most = static_cast<int>(a) == excluded ? 0 : static_cast<int>(apps[a].jobs.size());
    for (int take = 0; take <= std::min(most, left); ++take) {
      g[a] = take;
      self(self, a + 1, left - take);
    }
    g[a] = 0;
  };
  visit(visit, 0, capacity);
  return best;
}

TEST(ThemisTest, AuctionMatchesBruteForceOnOneTypeOfOneGpuJobs) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t count = 1 + rng() % 4;
    const int capacity = 1 + static_cast<int>(rng() % 7);
    std::vector<AuctionApp> apps(count);
    for (AuctionApp& app : apps) {
      app.jobs.assign(1 + rng() % 4, AuctionJob{1, {1.0}});
      app.elapsed = 1000.0 * u(rng);
      app.work = 10.0 + 1000.0 * u(rng);
      app.isolated = 10.0 + 1000.0 * u(rng);
    }
    const AuctionResult r = PartialAllocationAuction(apps, {capacity});
    const std::vector<int> best = BestSplit(apps, capacity, -1);
    for (std::size_t a = 0; a < count; ++a) {
      int won = 0;
      for (int type : r.type_of[a]) won += type == 0 ? 1 : 0;
      ASSERT_EQ(won, best[a]) << "trial " << trial << " app " << a;
      if (won == 0) {
        EXPECT_EQ(r.keep[a], 1.0);
        continue;
      }
      // c_a from its definition over the others served both with and without a.
      const std::vector<int> without = BestSplit(apps, capacity, static_cast<int>(a));
      double ratio = 1.0;
      for (std::size_t k = 0; k < count; ++k) {
        if (k == a || best[k] == 0 || without[k] == 0) continue;
        ratio *= AuctionValuation(apps[k], best[k]) / AuctionValuation(apps[k], without[k]);
      }
      EXPECT_NEAR(r.keep[a], std::min(1.0, ratio), 1e-9) << "trial " << trial << " app " << a;
      EXPECT_GT(r.keep[a], 0.0);
    }
  }
}

TEST(ThemisTest, ReplayedRerunsEqualStraightforwardReruns) {
  // The payments' replayed reruns (the full run's pops, simulating only the apps the winner's
  // absence moves) against rerunning the greedy from scratch: bit-identical winners
  // and payments on random congested auctions of several GPU types, multi-job apps, gangs of
  // 1-8 GPUs, and jobs that cannot run on some types.
  std::mt19937_64 rng(1212);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int paid = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t types = 1 + rng() % 3;
    std::vector<int> free;
    for (std::size_t j = 0; j < types; ++j) free.push_back(static_cast<int>(rng() % 12));
    std::vector<AuctionApp> apps(1 + rng() % 30);
    for (AuctionApp& app : apps) {
      for (std::size_t k = 0, count = 1 + rng() % 4; k < count; ++k) {
        AuctionJob job{.scale_factor = 1 << (rng() % 4), .rate = {}};
        for (std::size_t j = 0; j < types; ++j) job.rate.push_back(rng() % 5 == 0 ? 0.0 : 0.1 + u(rng));
        app.jobs.push_back(job);
      }
      app.elapsed = 1000.0 * u(rng);
      app.work = 10.0 + 1000.0 * u(rng);
      app.isolated = 10.0 + 1000.0 * u(rng);
    }
    const AuctionResult fast = PartialAllocationAuction(apps, free, AuctionReruns::kReplay);
    const AuctionResult slow = PartialAllocationAuction(apps, free, AuctionReruns::kStraightforward);
    ASSERT_EQ(fast.type_of, slow.type_of) << "trial " << trial;
    ASSERT_EQ(fast.keep, slow.keep) << "trial " << trial;
    for (double keep : fast.keep) paid += keep < 1.0 ? 1 : 0;
  }
  // The instances are congested enough that payments were actually charged and compared.
  EXPECT_GT(paid, 100);
}

TEST(ThemisTest, RandomProblemsRespectCapacityAndShares) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t types = 1 + rng() % 3;
    std::vector<double> counts;
    for (std::size_t j = 0; j < types; ++j) counts.push_back(double(1 + rng() % 8));
    std::vector<Job> jobs(1 + rng() % 12);
    for (Job& job : jobs) {
      job.app = static_cast<int>(rng() % 5) - 1;
      job.scale_factor = 1 << (rng() % 3);
      job.steps = 1.0 + 1000.0 * u(rng);
      job.elapsed = 1000.0 * u(rng);
    }
    PolicyInput input = Input(counts, jobs);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      for (std::size_t j = 0; j < types; ++j) {
        const bool fits = counts[j] >= jobs[i].scale_factor;
        input.throughput(i, j) = fits && rng() % 4 != 0 ? 0.1 + u(rng) : 0.0;
      }
    }
    const std::string f = std::to_string(double(rng() % 5) / 4.0);
    const PolicyOutput out = Allocated("themis:f=" + f, input);
    std::vector<double> used(types, 0.0);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      double row = 0.0;
      for (std::size_t j = 0; j < types; ++j) {
        const double x = out.allocation(i, j);
        EXPECT_GE(x, 0.0);
        if (input.throughput(i, j) == 0.0) {
          EXPECT_EQ(x, 0.0);
        }
        row += x;
        used[j] += x * jobs[i].scale_factor;
      }
      EXPECT_LE(row, 1.0 + 1e-9) << "trial " << trial;
    }
    for (std::size_t j = 0; j < types; ++j) EXPECT_LE(used[j], counts[j] + 1e-9) << trial;
  }
}

}  // namespace
}  // namespace gavel::policy
