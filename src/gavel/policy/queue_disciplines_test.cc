// tiresias_2das, tiresias_gittins, las_perf, yarn_cs, drf and tetris against hand-worked cases (the DRF
// paper's two-resource example, queue boundaries, promotion, head-of-line blocking, Gittins
// indices against their definition, Tetris' alignment) and invariants on random problems (capacity never exceeded, every job keeps its row, whole-GPU decisions).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gavel/policy/drf.h"
#include "gavel/policy/queue_discipline.h"
#include "gavel/policy/registry.h"
#include "gavel/policy/tiresias.h"

namespace gavel::policy {
namespace {

struct Job {
  int scale_factor = 1;
  double arrival = 0.0;  // seconds; `now` is 100,000
  double attained = 0.0;
  int running_type = -1;
  double waiting = 0.0;
  double cpus_per_gpu = 0.0;
  double mem_gb_per_gpu = 0.0;
  std::vector<double> speeds = {};  // steps/s per type; empty = 1 everywhere
};

constexpr double kNow = 100000.0;

// One GPU type per count, every job able to run everywhere at 1 step/s unless it gives its
// speeds.
PolicyInput Input(std::vector<double> counts, const std::vector<Job>& jobs) {
  PolicyInput input;
  const char* const names[] = {"a", "b", "c", "d"};
  for (std::size_t j = 0; j < counts.size(); ++j) input.gpu_types.push_back(names[j]);
  input.gpu_counts = counts;
  input.gpus_per_server.assign(counts.size(), 1);
  input.throughput = Matrix(jobs.size(), counts.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    PolicyJob row;
    row.id = JobId(i);
    row.scale_factor = jobs[i].scale_factor;
    row.time_since_start = Seconds(kNow - jobs[i].arrival);
    row.attained_gpu_seconds = jobs[i].attained;
    row.running_type = jobs[i].running_type;
    row.waiting = Seconds(jobs[i].waiting);
    row.cpus_per_gpu = jobs[i].cpus_per_gpu;
    row.mem_gb_per_gpu = jobs[i].mem_gb_per_gpu;
    input.jobs.push_back(row);
    for (std::size_t j = 0; j < counts.size(); ++j) {
      input.throughput(i, j) = jobs[i].speeds.empty() ? 1.0 : jobs[i].speeds[j];
    }
  }
  input.pair_throughput_first = Matrix(0, counts.size());
  input.pair_throughput_second = Matrix(0, counts.size());
  return input;
}

std::unique_ptr<Policy> Make(const std::string& name) {
  Result<std::unique_ptr<Policy>> policy = MakePolicy(name, PolicyOptions{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// A random problem for the invariant and reference tests: 1-3 types of 1-8 GPUs, up to
// `max_jobs` jobs of 1, 2 or 4 GPUs with random ages, attained service, running types, waits,
// host demands and remaining steps, speeds of 1-3 steps/s except where a job cannot run on a
// type (one in four, or a type smaller than its gang); hosts of random CPUs and memory, half
// of them unlimited (0). Small integers, so that ties and boundary hits happen.
struct RandomProblem {
  std::vector<double> counts;
  std::vector<Job> jobs;
  PolicyInput input;
};

RandomProblem DrawProblem(std::mt19937_64& rng, std::size_t max_jobs) {
  RandomProblem p;
  const std::size_t types = 1 + rng() % 3;
  for (std::size_t j = 0; j < types; ++j) p.counts.push_back(static_cast<double>(1 + rng() % 8));
  p.jobs.resize(rng() % (max_jobs + 1));
  for (Job& job : p.jobs) {
    job.scale_factor = 1 << (rng() % 3);
    job.arrival = static_cast<double>(rng() % 1000);
    job.attained = static_cast<double>(rng() % 10000);
    job.running_type = static_cast<int>(rng() % (types + 1)) - 1;
    job.waiting = static_cast<double>(rng() % 5000);
    job.cpus_per_gpu = static_cast<double>(rng() % 4);
    job.mem_gb_per_gpu = static_cast<double>(rng() % 8);
  }
  p.input = Input(p.counts, p.jobs);
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    p.input.jobs[i].steps_remaining = static_cast<double>(1 + rng() % 50);
    for (std::size_t j = 0; j < types; ++j) {
      const bool unable = rng() % 4 == 0 || p.jobs[i].scale_factor > p.counts[j];
      p.input.throughput(i, j) = unable ? 0.0 : static_cast<double>(1 + rng() % 3);
    }
  }
  p.input.host_cpus = rng() % 2 == 0 ? 0.0 : static_cast<double>(rng() % 20);
  p.input.host_mem_gb = rng() % 2 == 0 ? 0.0 : static_cast<double>(rng() % 40);
  return p;
}

// Row sums: 1 where the job runs (on one type), 0 where it waits.
std::vector<double> Runs(const PolicyInput& input, const std::string& name) {
  const Result<PolicyOutput> out = Make(name)->Allocate(input);
  EXPECT_TRUE(out.ok());
  std::vector<double> runs;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    double sum = 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) sum += out->allocation(i, j);
    runs.push_back(sum);
  }
  return runs;
}

TEST(TiresiasTest, QueueBoundariesAreAtTheThresholds) {
  const TiresiasOptions two;  // the default: one threshold at 3,600 GPU-seconds
  EXPECT_EQ(TiresiasQueueOf(two, 0.0), 0);
  EXPECT_EQ(TiresiasQueueOf(two, 3599.999), 0);
  EXPECT_EQ(TiresiasQueueOf(two, 3600.0), 1);  // reaching the threshold demotes
  EXPECT_EQ(TiresiasQueueOf(two, 1e12), 1);
  TiresiasOptions three;
  three.thresholds = {100.0, 1000.0};
  EXPECT_EQ(TiresiasQueueOf(three, 99.0), 0);
  EXPECT_EQ(TiresiasQueueOf(three, 100.0), 1);
  EXPECT_EQ(TiresiasQueueOf(three, 999.0), 1);
  EXPECT_EQ(TiresiasQueueOf(three, 1000.0), 2);
}

TEST(TiresiasTest, HigherQueueFirstFifoInsideAQueueSkippingWhatDoesNotFit) {
  // 4 GPUs. A arrived first but attained 5,000 GPU-s (queue 2); B, C, D in queue 1 in arrival
  // order. B takes 1 GPU, C 2, D (2) no longer fits and is skipped, A (1) takes the last one.
  const PolicyInput input = Input({4}, {{.scale_factor = 1, .arrival = 0, .attained = 5000},
                                        {.scale_factor = 1, .arrival = 10},
                                        {.scale_factor = 2, .arrival = 20, .attained = 100},
                                        {.scale_factor = 2, .arrival = 30}});
  EXPECT_EQ(Runs(input, "tiresias_2das"), (std::vector<double>{1, 1, 1, 0}));
  // With the threshold above A's service all four share queue 1: FIFO gives A, B, C.
  EXPECT_EQ(Runs(input, "tiresias_2das:thresholds=6000"), (std::vector<double>{1, 1, 1, 0}));
  const PolicyInput later = Input({4}, {{.scale_factor = 2, .arrival = 0},
                                        {.scale_factor = 2, .arrival = 10},
                                        {.scale_factor = 2, .arrival = 5, .attained = 4000}});
  // Job 2 arrived before job 1 but is demoted: jobs 0 and 1 run.
  EXPECT_EQ(Runs(later, "tiresias_2das"), (std::vector<double>{1, 1, 0}));
  // One queue only: plain FIFO by arrival, jobs 0 and 2.
  EXPECT_EQ(Runs(later, "tiresias_2das:queues=1"), (std::vector<double>{1, 0, 1}));
}

// The type each job was given (−1: none), from an allocation of whole GPUs of one type.
std::vector<int> Types(const PolicyInput& input, const std::string& name) {
  const Result<PolicyOutput> out = Make(name)->Allocate(input);
  EXPECT_TRUE(out.ok());
  std::vector<int> types(input.num_jobs(), -1);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (out->allocation(i, j) > 0.0) types[i] = static_cast<int>(j);
    }
  }
  return types;
}

// Three types of 2 GPUs: jobs 0 and 1 (demoted) run on a and b; jobs 2, 3, 4 are new.
PolicyInput ThreeTypesTwoRunningThreeNew() {
  return Input({2, 2, 2}, {{.arrival = 0, .attained = 5000, .running_type = 0},
                           {.arrival = 1, .attained = 5000, .running_type = 1},
                           {.arrival = 10},
                           {.arrival = 11},
                           {.arrival = 12}});
}

TEST(TiresiasTest, NewcomerTakesFreeGpusRatherThanPreemptingOrMovingARunningJob) {
  // Types a and b, one GPU each. Job 0 was demoted (queue 1) and runs on a; job 1 is new
  // (queue 0, placed first). Both types have one free GPU, so "most free GPUs" alone ties and
  // picks a, moving job 0 to b (a needless migration: on a heterogeneous cluster, often to a
  // slower type). a's GPU is held by job 0, so job 1 goes to b and job 0 stays on a.
  const PolicyInput spare = Input({1, 1}, {{.arrival = 0, .attained = 5000, .running_type = 0},
                                           {.arrival = 10}});
  EXPECT_EQ(Types(spare, "tiresias_2das"), (std::vector<int>{0, 1}));
  // Without a spare GPU the newcomer still preempts the demoted job (LAS needs it).
  const PolicyInput full = Input({1}, {{.arrival = 0, .attained = 5000, .running_type = 0},
                                       {.arrival = 10}});
  EXPECT_EQ(Types(full, "tiresias_2das"), (std::vector<int>{-1, 0}));
  // Three types of 2: jobs 0 and 1 (demoted) run on a and b; of three newcomers the first
  // takes c (2 GPUs nobody holds), the next two the one spare GPU left on each type (a before
  // b: the first of equals); nobody moves, and it is what yarn_cs does.
  const PolicyInput three = ThreeTypesTwoRunningThreeNew();
  EXPECT_EQ(Types(three, "tiresias_2das"), (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_EQ(Types(three, "yarn_cs"), (std::vector<int>{0, 1, 2, 0, 1}));
}

// tiresias_2das_perf on types a (fast) and b, one GPU each. Job 0 (first in the queue) runs
// at 2 and 1 step/s, job 1 at 10 and 1. prop = (2+1)/2 = 1.5 and (10+1)/2 = 5.5; normalised
// throughputs (4/3, 2/3) and (20/11, 2/11); the means over both jobs are 1.576 on a and 0.424
// on b, so job 0's advantage is larger on b (1.57 against 0.85) and it leaves a to job 1, which
// gains five times as much there. 2DAS gives job 0 the first of the equally free types, a.
// Brute force over the two assignments: the perf one has the larger total throughput.
TEST(TiresiasTest, PerfVariantStartsEachJobWhereItGainsMostRelativeToTheOthers) {
  PolicyInput input = Input({1, 1}, {{.arrival = 0}, {.arrival = 10}});
  input.throughput(0, 0) = 2.0;
  input.throughput(1, 0) = 10.0;
  const Matrix advantage = ComparativeAdvantage(input);
  const double mean_a = (2.0 / 1.5 + 10.0 / 5.5) / 2.0;
  const double mean_b = (1.0 / 1.5 + 1.0 / 5.5) / 2.0;
  EXPECT_NEAR(advantage(0, 0), (2.0 / 1.5) / mean_a, 1e-12);
  EXPECT_NEAR(advantage(0, 1), (1.0 / 1.5) / mean_b, 1e-12);
  EXPECT_NEAR(advantage(1, 0), (10.0 / 5.5) / mean_a, 1e-12);
  EXPECT_NEAR(advantage(1, 1), (1.0 / 5.5) / mean_b, 1e-12);

  const std::vector<int> perf = Types(input, "tiresias_2das_perf");
  const std::vector<int> agnostic = Types(input, "tiresias_2das");
  EXPECT_EQ(perf, (std::vector<int>{1, 0}));
  EXPECT_EQ(agnostic, (std::vector<int>{0, 1}));
  const auto total = [&](const std::vector<int>& types) {
    return input.throughput(0, static_cast<std::size_t>(types[0])) +
           input.throughput(1, static_cast<std::size_t>(types[1]));
  };
  double best = 0.0;
  for (const std::vector<int>& assignment : {std::vector<int>{0, 1}, std::vector<int>{1, 0}}) {
    best = std::max(best, total(assignment));
  }
  EXPECT_EQ(total(perf), best);
  EXPECT_LT(total(agnostic), best);

  // A running job keeps its type while it fits, however much another type suits it: job 0
  // runs on a, so job 1 takes b.
  input.jobs[0].running_type = 0;
  EXPECT_EQ(Types(input, "tiresias_2das_perf"), (std::vector<int>{0, 1}));
}

// Where every job runs at the same speed everywhere, the perf variant is 2DAS: the same jobs on
// the same types (the held-GPUs cases above).
TEST(TiresiasTest, PerfVariantIsTwoDasOnAHomogeneousView) {
  const PolicyInput three = ThreeTypesTwoRunningThreeNew();
  EXPECT_EQ(Types(three, "tiresias_2das_perf"), (std::vector<int>{0, 1, 2, 0, 1}));
  const PolicyInput full = Input({1}, {{.arrival = 0, .attained = 5000, .running_type = 0},
                                       {.arrival = 10}});
  EXPECT_EQ(Types(full, "tiresias_2das_perf"), (std::vector<int>{-1, 0}));
}

TEST(TiresiasTest, StarvedJobIsPromotedAndDemotedAgainAfterAThresholdMore) {
  // One GPU. A (demoted, waiting 1,500 s) and B (new, queue 1).
  std::vector<Job> jobs = {{.arrival = 0, .attained = 5000, .waiting = 1500},
                           {.arrival = 50}};
  EXPECT_EQ(Runs(Input({1}, jobs), "tiresias_2das"), (std::vector<double>{0, 1}));
  const std::unique_ptr<Policy> policy = Make("tiresias_2das:starve=1000");
  const auto runs = [&](const std::vector<Job>& now) {
    const Result<PolicyOutput> out = policy->Allocate(Input({1}, now));
    return std::vector<double>{out->allocation(0, 0), out->allocation(1, 0)};
  };
  EXPECT_EQ(runs(jobs), (std::vector<double>{1, 0}));  // promoted: first in queue 1 by arrival
  // Running now, 3,599 GPU-s after its promotion: still queue 1.
  jobs[0] = {.arrival = 0, .attained = 8599, .running_type = 0};
  jobs[1].waiting = 900;
  EXPECT_EQ(runs(jobs), (std::vector<double>{1, 0}));
  // 3,600 GPU-s after its promotion: demoted, B runs.
  jobs[0].attained = 8600;
  jobs[1].waiting = 1000 - 1;
  EXPECT_EQ(runs(jobs), (std::vector<double>{0, 1}));
}

// The Gittins index straight from its definition: each completed job's service a sample of
// probability 1/n; P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a] by summing over samples.
double BruteGittins(const std::vector<double>& samples, double a, double delta) {
  double alive = 0.0;
  double finish = 0.0;
  double spent = 0.0;
  for (double s : samples) {
    if (s <= a) continue;
    alive += 1.0;
    if (s - a <= delta) finish += 1.0;
    spent += std::min(s - a, delta);
  }
  if (alive == 0.0) return 0.0;
  return (finish / alive) / (spent / alive);
}

TEST(TiresiasGittinsTest, IndexMatchesItsDefinitionOnSmallDistributions) {
  ServiceDistribution hand;
  for (double s : {10.0, 1.0, 2.0}) hand.Add(s);
  // a = 0, Δ = 2: two of three finish, spending 1 + 2 + 2 = 5 → (2/3) / (5/3) = 0.4.
  EXPECT_NEAR(hand.GittinsIndex(0.0, 2.0), 0.4, 1e-12);
  // a = 2: only the 10 is left; unbounded quantum → 1 / 8.
  EXPECT_NEAR(hand.GittinsIndex(2.0, std::numeric_limits<double>::infinity()), 0.125, 1e-12);
  EXPECT_EQ(hand.GittinsIndex(10.0, 5.0), 0.0);  // nobody got further: no information
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    ServiceDistribution d;
    std::vector<double> samples;
    for (std::size_t k = 0, n = 1 + rng() % 8; k < n; ++k) {
      samples.push_back(double(1 + rng() % 20));  // integers: ties and boundary hits happen
      d.Add(samples.back());
    }
    const double a = double(rng() % 22);
    const double delta =
        rng() % 5 == 0 ? std::numeric_limits<double>::infinity() : double(1 + rng() % 15);
    EXPECT_NEAR(d.GittinsIndex(a, delta), BruteGittins(samples, a, delta), 1e-12)
        << "trial " << trial;
  }
}

TEST(TiresiasGittinsTest, CompletedJobsServiceOrdersAQueue) {
  // Four jobs complete with 100, 100, 100 and 10,000 GPU-s. Then on one GPU, A (arrived first,
  // 150 GPU-s: past the short mode, 1/9,850 by Gittins) and B (50 GPU-s: 4/10,100) wait in one
  // queue. 2DAS is FIFO and runs A; 2D-Gittins runs B, more likely to finish soon.
  const std::unique_ptr<Policy> policy = Make("tiresias_gittins:queues=1");
  ASSERT_TRUE(policy->Allocate(Input({1}, {{.attained = 100},
                                           {.attained = 100},
                                           {.attained = 100},
                                           {.attained = 10000}}))
                  .ok());
  PolicyInput waiting = Input({1}, {{.arrival = 0, .attained = 150}, {.arrival = 10, .attained = 50}});
  waiting.jobs[0].id = JobId(10);
  waiting.jobs[1].id = JobId(11);
  const Result<PolicyOutput> out = policy->Allocate(waiting);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->allocation(0, 0), 0.0);
  EXPECT_EQ(out->allocation(1, 0), 1.0);
  EXPECT_EQ(Runs(waiting, "tiresias_2das:queues=1"), (std::vector<double>{1, 0}));
  // Without history (a fresh policy) 2D-Gittins is 2DAS: FIFO.
  EXPECT_EQ(Runs(waiting, "tiresias_gittins:queues=1"), (std::vector<double>{1, 0}));
}

TEST(TetrisTest, AlignmentPacksTheJobThatFillsTheFreeResources) {
  // 4 GPUs, nothing else limited; srtf=0: packing alone. A (1 GPU): alignment (1/4)·(4/4) =
  // 0.25; B (4 GPUs): 1·1 = 1. B starts and fills the cluster, A waits (FIFO would do the
  // opposite: A first, then B no longer fits).
  const PolicyInput input = Input({4}, {{.scale_factor = 1}, {.scale_factor = 4}});
  EXPECT_EQ(Runs(input, "tetris:srtf=0"), (std::vector<double>{0, 1}));
  // Host CPUs: 4 GPUs, 4 CPUs. A (2 GPUs × 2 CPUs): 0.5·1 + 1·1 = 1.5; B and C (2 GPUs, no
  // CPU): 0.5. A first; then 2 GPUs and no CPU are free: B (2/4 · 2/4 = 0.25) before C (same
  // score, later id). C no longer fits.
  PolicyInput host = Input({4}, {{.scale_factor = 2, .cpus_per_gpu = 0},
                                 {.scale_factor = 2, .cpus_per_gpu = 0},
                                 {.scale_factor = 2, .cpus_per_gpu = 2}});
  host.host_cpus = 4;
  EXPECT_EQ(Runs(host, "tetris:srtf=0"), (std::vector<double>{1, 0, 1}));
}

TEST(TetrisTest, ShortestRemainingWorkBreaksEqualAlignment) {
  // One GPU, two one-GPU jobs of equal alignment; B has 10 steps left, A 1,000: B starts.
  PolicyInput input = Input({1}, {{}, {}});
  input.jobs[0].steps_remaining = 1000;
  input.jobs[1].steps_remaining = 10;
  EXPECT_EQ(Runs(input, "tetris"), (std::vector<double>{0, 1}));
  EXPECT_EQ(Runs(input, "tetris:srtf=0"), (std::vector<double>{1, 0}));  // tie: earlier id
  // Not preemptive: A running keeps its GPU.
  input.jobs[0].running_type = 0;
  EXPECT_EQ(Runs(input, "tetris"), (std::vector<double>{1, 0}));
  EXPECT_FALSE(MakePolicy("tetris:srtf=-1", PolicyOptions{}).ok());
}

// Tetris by its definition: running jobs keep their type, then a full scan of every (waiting
// job, type) pair per pick, the largest alignment + ε·shortness first (ties: earlier job, type).
std::vector<int> TetrisByFullScan(const PolicyInput& in, double srtf) {
  const std::size_t m = in.num_jobs();
  const std::size_t n = in.num_types();
  std::vector<double> gpus(in.gpu_counts);
  double cpus = in.host_cpus;
  double mem = in.host_mem_gb;
  std::vector<int> type(m, -1);
  const auto s = [&](std::size_t i) { return double(in.jobs[i].scale_factor); };
  const auto fits = [&](std::size_t i, std::size_t j) {
    return in.throughput(i, j) > 0.0 && gpus[j] >= s(i) &&
           (in.host_cpus <= 0 || cpus >= s(i) * in.jobs[i].cpus_per_gpu) &&
           (in.host_mem_gb <= 0 || mem >= s(i) * in.jobs[i].mem_gb_per_gpu);
  };
  const auto take = [&](std::size_t i, std::size_t j) {
    type[i] = static_cast<int>(j);
    gpus[j] -= s(i);
    cpus -= s(i) * in.jobs[i].cpus_per_gpu;
    mem -= s(i) * in.jobs[i].mem_gb_per_gpu;
  };
  for (std::size_t i = 0; i < m; ++i) {
    const int r = in.jobs[i].running_type;
    if (r >= 0 && fits(i, static_cast<std::size_t>(r))) take(i, static_cast<std::size_t>(r));
  }
  double longest = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (type[i] < 0 && in.throughput(i, j) > 0) {
        longest = std::max(longest, s(i) * in.jobs[i].steps_remaining / in.throughput(i, j));
      }
    }
  }
  const auto shortness = [&](std::size_t i, std::size_t j) {
    return longest > 0 ? 1.0 - s(i) * in.jobs[i].steps_remaining / in.throughput(i, j) / longest
                       : 0.0;
  };
  const auto alignment = [&](std::size_t i, std::size_t j) {
    double a = s(i) / in.gpu_counts[j] * gpus[j] / in.gpu_counts[j];
    if (in.host_cpus > 0) a += s(i) * in.jobs[i].cpus_per_gpu / in.host_cpus * cpus / in.host_cpus;
    if (in.host_mem_gb > 0) {
      a += s(i) * in.jobs[i].mem_gb_per_gpu / in.host_mem_gb * mem / in.host_mem_gb;
    }
    return a;
  };
  const std::vector<int> running = type;
  double sum_a = 0.0;
  double sum_s = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (running[i] < 0 && fits(i, j)) {
        sum_a += alignment(i, j);
        sum_s += shortness(i, j);
      }
    }
  }
  const double epsilon = sum_s > 0 ? srtf * sum_a / sum_s : 0.0;
  while (true) {
    std::size_t bi = m, bj = n;
    double best = 0.0;
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (type[i] >= 0 || !fits(i, j)) continue;
        const double score = alignment(i, j) + epsilon * shortness(i, j);
        if (bi == m || score > best) {
          bi = i;
          bj = j;
          best = score;
        }
      }
    }
    if (bi == m) break;
    take(bi, bj);
  }
  return type;
}

TEST(TetrisTest, MatchesAFullScanOnRandomProblems) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const RandomProblem problem = DrawProblem(rng, 14);
    const PolicyInput& input = problem.input;
    const std::vector<Job>& jobs = problem.jobs;
    const std::size_t types = problem.counts.size();
    const double srtf = double(rng() % 3);
    const std::vector<int> want = TetrisByFullScan(input, srtf);
    const Result<PolicyOutput> out =
        Make("tetris:srtf=" + std::to_string(srtf))->Allocate(input);
    ASSERT_TRUE(out.ok());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      for (std::size_t j = 0; j < types; ++j) {
        EXPECT_EQ(out->allocation(i, j), want[i] == static_cast<int>(j) ? 1.0 : 0.0)
            << "trial " << trial << " job " << i;
      }
    }
  }
}

TEST(YarnCapacityTest, RunningJobsKeepTheirGpusAndTheQueueBlocksAtItsHead) {
  // 4 GPUs: R (2 GPUs, arrived last) runs; H (4 GPUs, first in the queue) does not fit, and S
  // (1 GPU) behind it must not start although a GPU pair is free.
  const PolicyInput input = Input({4}, {{.scale_factor = 4, .arrival = 0},
                                        {.scale_factor = 1, .arrival = 10},
                                        {.scale_factor = 2, .arrival = 20, .running_type = 0}});
  EXPECT_EQ(Runs(input, "yarn_cs"), (std::vector<double>{0, 0, 1}));
  // Nothing running: arrival order, H takes all four GPUs, S waits.
  const PolicyInput idle = Input({4}, {{.scale_factor = 4, .arrival = 0},
                                       {.scale_factor = 1, .arrival = 10},
                                       {.scale_factor = 2, .arrival = 20}});
  EXPECT_EQ(Runs(idle, "yarn_cs"), (std::vector<double>{1, 0, 0}));
  // Tiresias on the first case preempts nobody's turn by arrival: H first, all GPUs.
  EXPECT_EQ(Runs(input, "tiresias_2das"), (std::vector<double>{1, 0, 0}));
}

TEST(DrfTest, PaperExampleNineCpusEighteenGigabytes) {
  // DRF paper §4: <1 CPU, 4 GB> and <3 CPUs, 1 GB> on <9 CPUs, 18 GB> → 3 and 2 tasks.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> tasks =
      ProgressiveFilling({{1, 4}, {3, 1}}, {9, 18}, {inf, inf}, {1, 1});
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_NEAR(tasks[0], 3.0, 1e-9);
  EXPECT_NEAR(tasks[1], 2.0, 1e-9);
  // Weighted: B weighs 2 → equal weighted dominant shares x_A·4/18 = x_B·(3/9)/2, CPU full.
  const std::vector<double> weighted =
      ProgressiveFilling({{1, 4}, {3, 1}}, {9, 18}, {inf, inf}, {1, 2});
  EXPECT_NEAR(weighted[0] + 3 * weighted[1], 9.0, 1e-9);
  EXPECT_NEAR(weighted[0] * 4.0 / 18.0, weighted[1] * (3.0 / 9.0) / 2.0, 1e-9);
}

TEST(DrfTest, GpusOnlyEqualisesSharesUntilAJobIsFull) {
  // 4 GPUs; jobs of 1, 2 and 4 GPUs. The 1-GPU job reaches x = 1 at level 1/4; the others
  // continue to x = 3/4 and 3/8 (1 + 1.5 + 1.5 = 4 GPUs).
  const PolicyInput input =
      Input({4}, {{.scale_factor = 1}, {.scale_factor = 2}, {.scale_factor = 4}});
  EXPECT_EQ(Runs(input, "drf").size(), 3u);
  const std::vector<double> x = Runs(input, "drf");
  EXPECT_NEAR(x[0], 1.0, 1e-9);
  EXPECT_NEAR(x[1], 0.75, 1e-9);
  EXPECT_NEAR(x[2], 0.375, 1e-9);
}

TEST(DrfTest, HostResourcesLimitTheCpuHeavyJobs) {
  // 10 GPUs of one type, 8 host CPUs and 18 GB. Three jobs like the paper's user A (1 GPU,
  // 1 CPU, 4 GB: dominant share memory 4/18) and two like user B (1 GPU, 3 CPUs, 1 GB:
  // dominant share CPU 3/8). At level L, x_A = L·18/4 and x_B = L·8/3. The A-jobs reach x = 1
  // at L = 2/9 (CPU used 3 + 2·3·16/27 = 6.56); the B-jobs then fill the CPU alone:
  // 3 + 2·3·x_B = 8 → x_B = 5/6. Memory (12 + 2·5/6) and GPUs stay below capacity.
  PolicyInput input = Input({10}, {{.cpus_per_gpu = 1, .mem_gb_per_gpu = 4},
                                   {.cpus_per_gpu = 1, .mem_gb_per_gpu = 4},
                                   {.cpus_per_gpu = 1, .mem_gb_per_gpu = 4},
                                   {.cpus_per_gpu = 3, .mem_gb_per_gpu = 1},
                                   {.cpus_per_gpu = 3, .mem_gb_per_gpu = 1}});
  input.host_cpus = 8;
  input.host_mem_gb = 18;
  const std::vector<double> x = Runs(input, "drf");
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(x[static_cast<std::size_t>(i)], 1.0, 1e-9);
  EXPECT_NEAR(x[3], 5.0 / 6.0, 1e-9);
  EXPECT_NEAR(x[4], 5.0 / 6.0, 1e-9);
  // Without host limits the 10 GPUs let all five jobs run all the time.
  input.host_cpus = 0;
  input.host_mem_gb = 0;
  for (double v : Runs(input, "drf")) EXPECT_NEAR(v, 1.0, 1e-9);
}

TEST(QueueDisciplinesTest, RandomProblemsNeverExceedCapacityOrLoseAJob) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 300; ++trial) {
    const RandomProblem problem = DrawProblem(rng, 11);
    const PolicyInput& input = problem.input;
    const std::vector<Job>& jobs = problem.jobs;
    const std::vector<double>& counts = problem.counts;
    const std::size_t types = counts.size();
    const std::size_t m = jobs.size();
    for (const std::string name :
         {"tiresias_2das", "tiresias_2das:queues=3,thresholds=100;1000,starve=2000", "yarn_cs",
          "tiresias_2das_perf",
          "drf", "tiresias_gittins", "tetris"}) {
      const Result<PolicyOutput> out = Make(name)->Allocate(input);
      ASSERT_TRUE(out.ok()) << name;
      ASSERT_EQ(out->allocation.rows(), m) << name;  // no job lost
      double cpus = 0.0;
      double mem = 0.0;
      for (std::size_t j = 0; j < types; ++j) {
        double used = 0.0;
        for (std::size_t i = 0; i < m; ++i) {
          const double x = out->allocation(i, j);
          EXPECT_GE(x, 0.0);
          EXPECT_LE(x, 1.0 + 1e-12);
          if (input.throughput(i, j) <= 0.0) {
            EXPECT_EQ(x, 0.0) << name;
          }
          if (name != "drf") {
            EXPECT_TRUE(x == 0.0 || x == 1.0) << name;
          }
          used += jobs[i].scale_factor * x;
          cpus += jobs[i].scale_factor * jobs[i].cpus_per_gpu * x;
          mem += jobs[i].scale_factor * jobs[i].mem_gb_per_gpu * x;
        }
        EXPECT_LE(used, counts[j] + 1e-9) << name << " type " << j;
      }
      for (std::size_t i = 0; i < m; ++i) {
        double row = 0.0;
        for (std::size_t j = 0; j < types; ++j) row += out->allocation(i, j);
        EXPECT_LE(row, 1.0 + 1e-9) << name;
      }
      if (name == "drf") {
        if (input.host_cpus > 0) {
          EXPECT_LE(cpus, input.host_cpus + 1e-6);
        }
        if (input.host_mem_gb > 0) {
          EXPECT_LE(mem, input.host_mem_gb + 1e-6);
        }
      }
      if (name == "yarn_cs") {
        // Where the running jobs of each type fit there together (as after any real round),
        // every one of them keeps its type: no preemption.
        std::vector<double> running(types, 0.0);
        bool consistent = true;
        for (std::size_t i = 0; i < m; ++i) {
          const int t = jobs[i].running_type;
          if (t < 0) continue;
          running[static_cast<std::size_t>(t)] += jobs[i].scale_factor;
          consistent = consistent && input.throughput(i, static_cast<std::size_t>(t)) > 0.0;
        }
        for (std::size_t j = 0; j < types; ++j) consistent = consistent && running[j] <= counts[j];
        for (std::size_t i = 0; consistent && i < m; ++i) {
          if (jobs[i].running_type < 0) continue;
          EXPECT_EQ(out->allocation(i, static_cast<std::size_t>(jobs[i].running_type)), 1.0);
        }
      }
    }
  }
}

TEST(PolicyOptionsTest, SyntaxAndKeysAreCheckedWithClearErrors) {
  EXPECT_TRUE(FindPolicy("tiresias_2das:queues=3,thresholds=3600;36000,starve=7200").ok());
  EXPECT_TRUE(MakePolicy("tiresias_2das:queues=3,thresholds=3600;36000", {}).ok());
  EXPECT_TRUE(MakePolicy("tiresias_2das:queues=3:thresholds=3600;36000", {}).ok());  // sweep's
  const auto error = [](const std::string& name) {
    const Result<std::unique_ptr<Policy>> policy = MakePolicy(name, {});
    EXPECT_FALSE(policy.ok()) << name;
    return policy.ok() ? std::string() : policy.status().ToString();
  };
  EXPECT_NE(error("tiresias_2das:colour=red").find("colour"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:colour=red").find("queues,thresholds,starve"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:queues=3").find("thresholds"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:thresholds=50;40").find("thresholds"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:queues=2,thresholds=1;2").find("queues=2"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:starve=-1").find("starve"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:queues=0").find("queues"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:queues").find("key=value"), std::string::npos);
  EXPECT_NE(error("tiresias_2das:starve=1,starve=2").find("twice"), std::string::npos);
  EXPECT_NE(error("drf:x=1").find("takes no options"), std::string::npos);
  EXPECT_FALSE(FindPolicy("nosuch:queues=1").ok());
  EXPECT_TRUE(MakePolicy("allox_alpha=0.5", {}).ok());  // the older spelling still works
}

// las_perf (las_perf.h): each rule worked by hand, identical to tiresias_2das (an independent
// implementation of the same order) where every type runs a job as fast, and invariants on
// random heterogeneous problems. The queues' rules are tested with calm rounds off
// (`calm=0`): most of these cases have room for every job, where calm rounds would decide;
// calm rounds have tests of their own below.

PolicyOutput Allocation(const PolicyInput& input, const std::string& name) {
  Result<PolicyOutput> out = Make(name)->Allocate(input);
  EXPECT_TRUE(out.ok()) << name;
  return *out;
}

TEST(LasPerfTest, NewJobTakesTheFastestTypeWithRoomNotTheEmptiest) {
  // a: 2 GPUs at 3 steps/s, b: 4 GPUs at 1. tiresias_2das takes the most free GPUs (b).
  const PolicyInput input = Input({2, 4}, {{.speeds = {3, 1}}});
  EXPECT_EQ(Types(input, "las_perf:calm=0"), (std::vector<int>{0}));
  EXPECT_EQ(Types(input, "tiresias_2das"), (std::vector<int>{1}));
}

// Trades, worked by hand. A job's expected remaining work, in seconds on its fastest type, is
// its wall-clock service times its relative speed where it ran, at least 1,800 s; its run time
// on a type is that over its relative speed there. A trade must save more than 3,600 s per
// job it restarts (one at least).
TEST(LasPerfTest, RoomComesBeforeSpeedThenATradeGivesTheFastGpuToWhoSavesTime) {
  // One GPU each. Job 0 (queue 1: 5,000 GPU-s) runs on a; job 1 is new (queue 0, placed
  // first) and 4x faster on a, but a's GPU is held by job 0: job 1 takes b, job 0 stays.
  // Trade, every job expected to have `min_remaining` = 1,800 s left at least: job 1 would
  // save 1,800 × 4 − 1,800 = 5,400 s on a; job 0 runs as fast on b (loses 0); one restart
  // (job 0): 5,400 > 3,600, they trade; 5,400 is not > 5,400.
  const PolicyInput input =
      Input({1, 1}, {{.arrival = 0, .attained = 5000, .running_type = 0, .speeds = {1, 1}},
                     {.arrival = 10, .speeds = {4, 1}}});
  const std::string policy = "las_perf:calm=0,min_remaining=1800";
  EXPECT_EQ(Types(input, policy + ",trade=0"), (std::vector<int>{0, 1}));
  EXPECT_EQ(Types(input, policy), (std::vector<int>{1, 0}));
  EXPECT_EQ(Types(input, policy + ",trade=5400"), (std::vector<int>{0, 1}));
  EXPECT_EQ(Types(input, policy + ",trade=5399"), (std::vector<int>{1, 0}));
}

TEST(LasPerfTest, RunningJobMovesToIdleGpusOnlyWhenTheyAreUpgradeTimesFaster) {
  // Job 0 runs on b at 1 step/s; a's GPU is idle.
  PolicyInput input = Input({1, 1}, {{.running_type = 1, .speeds = {1.5, 1}}});
  EXPECT_EQ(Types(input, "las_perf:calm=0"), (std::vector<int>{0}));            // 1.5 >= 1.2
  EXPECT_EQ(Types(input, "las_perf:calm=0,upgrade=2"), (std::vector<int>{1}));  // 1.5 < 2
  EXPECT_EQ(Types(input, "las_perf:calm=0,upgrade=0"), (std::vector<int>{1}));  // never
  EXPECT_EQ(Types(input, "las_perf:calm=0,upgrade=1.5"), (std::vector<int>{0}));  // at the bound
  input.throughput(0, 0) = 1.1;
  EXPECT_EQ(Types(input, "las_perf:calm=0"), (std::vector<int>{1}));  // 1.1 < 1.2: not worth it

  // a's GPU is held by job 1, running there and placed after job 0 (queue 1): no room, no
  // upgrade. A trade would save job 0 (`min_remaining` = 1,800 s) 1,800 × 3 − 1,800 = 3,600 s
  // (job 1 loses nothing) for two restarts: not > 2 × 3,600, but > 2 × 1,000.
  const PolicyInput held =
      Input({1, 1}, {{.arrival = 0, .running_type = 1, .speeds = {3, 1}},
                     {.arrival = 10, .attained = 5000, .running_type = 0, .speeds = {1, 1}}});
  EXPECT_EQ(Types(held, "las_perf:calm=0,min_remaining=1800"), (std::vector<int>{1, 0}));
  EXPECT_EQ(Types(held, "las_perf:calm=0,min_remaining=1800,trade=1000"),
            (std::vector<int>{0, 1}));
}

// a and b, 2 GPUs each. Job 0, a 2-GPU gang, has run 10 h on b at a quarter of its speed on
// a: expected remaining 36,000 × 0.25 = 9,000 s on a, 36,000 s on b. Jobs 1 and 2 (1 GPU,
// new: `min_remaining` = 1,800 s expected) run twice as fast on a and took it first (queue
// 0). The gang takes a if they move to b: it saves 27,000 s, they lose 2 × 1,800; brute
// force over the two feasible assignments: expected run times 36,000 + 2 × 1,800 = 39,600 s
// as placed, 9,000 + 2 × 3,600 = 16,200 s traded.
TEST(LasPerfTest, GangTakesTheFastTypeFromSmallJobsWhenThatSavesTimePerRestart) {
  std::vector<Job> jobs = {
      {.scale_factor = 2, .arrival = 0, .attained = 72000, .running_type = 1, .speeds = {4, 1}},
      {.arrival = 10, .speeds = {2, 1}},
      {.arrival = 20, .speeds = {2, 1}}};
  const std::string policy = "las_perf:calm=0,min_remaining=1800";
  EXPECT_EQ(Types(Input({2, 2}, jobs), policy + ",trade=0"), (std::vector<int>{1, 0, 0}));
  // 23,400 s saved for one restart (the gang's).
  EXPECT_EQ(Types(Input({2, 2}, jobs), policy), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(Types(Input({2, 2}, jobs), policy + ",trade=23400"), (std::vector<int>{1, 0, 0}));
  // Jobs 1 and 2 running on a as well: three restarts; 23,400 > 3 × 7,000, not > 3 × 8,000.
  jobs[1].running_type = jobs[2].running_type = 0;
  EXPECT_EQ(Types(Input({2, 2}, jobs), policy + ",trade=7000"), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(Types(Input({2, 2}, jobs), policy + ",trade=8000"), (std::vector<int>{1, 0, 0}));
}

// A young job is expected to need the workload's mean duration (`min_remaining`, 60,000 s),
// not the little it has run. One GPU each. Job 0 (8,000 GPU-s: queue 1) runs on a, 1.25
// times its speed on b; job 1 is new (queue 0, placed first), 4 times faster on a than on
// b, and takes b (a is held). A trade (job 1 to a, job 0 to b; one restart, job 0's) saves
// 3 R1 − 0.25 R0 s of expected run time: with a half-hour floor R1 = 1,800 and R0 = 8,000,
// 5,400 − 2,000 = 3,400 < 3,600, no trade; by default R1 = R0 = 60,000: 165,000 s, a trade.
// If both have the mean job's 60,000 s of work left at their speed on a, the half-hour
// floor's placement finishes them in 60,000 (job 0) + 240,000 (job 1, a quarter speed) s,
// the trade in 75,000 + 60,000 s and one restart.
TEST(LasPerfTest, YoungJobsAreExpectedToRunTheMeanDurationSoTradesPay) {
  const PolicyInput input =
      Input({1, 1}, {{.arrival = 0, .attained = 8000, .running_type = 0, .speeds = {1, 0.8}},
                     {.arrival = 10, .speeds = {4, 1}}});
  const std::vector<int> half_hour = Types(input, "las_perf:min_remaining=1800");
  const std::vector<int> mean = Types(input, "las_perf");
  EXPECT_EQ(half_hour, (std::vector<int>{0, 1}));
  EXPECT_EQ(mean, (std::vector<int>{1, 0}));
  const double work = 60000.0;  // seconds at each job's speed on a
  const double restart = 600.0;
  const auto total = [&](const std::vector<int>& types) {
    double sum = 0.0;
    for (std::size_t i = 0; i < 2; ++i) {
      const int running = input.jobs[i].running_type;
      const bool moved = running >= 0 && types[i] != running;
      const double speed = input.throughput(i, static_cast<std::size_t>(types[i]));
      sum += (moved ? restart : 0.0) + work * input.throughput(i, 0) / speed;
    }
    return sum;
  };
  EXPECT_NEAR(total(half_hour), 300000.0, 1e-6);
  EXPECT_NEAR(total(mean), 135600.0, 1e-6);
}

TEST(LasPerfTest, NewJobWaitsForAFasterTypeUntilItsPatienceRunsOut) {
  // a (1 GPU) runs job 0, which cannot run on b (no trade); job 1 runs at 10 steps/s on a and
  // 1 on b: 1/10 of its fastest, below slow = 0.2, so it leaves b idle until it has waited
  // `patience` (10 h).
  std::vector<Job> jobs = {{.arrival = 0, .running_type = 0, .speeds = {1, 0}},
                           {.arrival = 10, .waiting = 3600, .speeds = {10, 1}}};
  EXPECT_EQ(Types(Input({1, 1}, jobs), "las_perf:calm=0"), (std::vector<int>{0, -1}));
  EXPECT_EQ(Types(Input({1, 1}, jobs), "las_perf:calm=0,slow=0"), (std::vector<int>{0, 1}));
  EXPECT_EQ(Types(Input({1, 1}, jobs), "las_perf:calm=0,slow=0.1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(Types(Input({1, 1}, jobs), "las_perf:calm=0,patience=3600"), (std::vector<int>{0, 1}));
  jobs[1].waiting = 36000;
  EXPECT_EQ(Types(Input({1, 1}, jobs), "las_perf:calm=0"), (std::vector<int>{0, 1}));
}

TEST(LasPerfTest, GangThatFitsNowhereWaitsAndASmallerJobBehindItRuns) {
  // a and b, 4 GPUs each. Jobs 0 and 1 (3 GPUs) run on a and b; job 2 needs 4 (one is free on
  // each type: it waits, all or nothing); job 3 (1 GPU, after it) takes one of the free GPUs.
  const PolicyInput input =
      Input({4, 4}, {{.scale_factor = 3, .arrival = 0, .running_type = 0, .speeds = {1, 1}},
                     {.scale_factor = 3, .arrival = 1, .running_type = 1, .speeds = {1, 1}},
                     {.scale_factor = 4, .arrival = 2, .speeds = {1, 1}},
                     {.scale_factor = 1, .arrival = 3, .speeds = {1, 1}}});
  const std::vector<int> types = Types(input, "las_perf:calm=0");
  EXPECT_EQ(types[0], 0);
  EXPECT_EQ(types[1], 1);
  EXPECT_EQ(types[2], -1);
  EXPECT_NE(types[3], -1);
  const PolicyOutput out = Allocation(input, "las_perf:calm=0");
  for (std::size_t t = 0; t < 2; ++t) EXPECT_EQ(out.allocation(2, t), 0.0);
}

TEST(LasPerfTest, OptionsAreCheckedByName) {
  for (const std::string bad :
       {"las_perf:upgrade=0.5", "las_perf:trade=-1", "las_perf:min_remaining=0",
        "las_perf:slow=2", "las_perf:patience=x", "las_perf:calm=-1", "las_perf:queues=3",
        "las_perf:bogus=1"}) {
    const Result<std::unique_ptr<Policy>> policy = MakePolicy(bad, PolicyOptions{});
    ASSERT_FALSE(policy.ok()) << bad;
    const std::string key = bad.substr(9, bad.find('=') - 9);
    EXPECT_NE(policy.status().ToString().find(key), std::string::npos)
        << bad << ": " << policy.status().ToString();
  }
  EXPECT_TRUE(MakePolicy("las_perf:queues=3,thresholds=100;1000,starve=60,upgrade=0,trade=0,"
                         "min_remaining=60,slow=0,patience=0,calm=0",
                         PolicyOptions{})
                  .ok());
}

// Random problems: 1-3 types of 1-8 GPUs, up to 14 jobs of 1, 2 or 4 GPUs, some running,
// some demoted, some unable to run on some types.
PolicyInput RandomInput(std::mt19937_64& rng, bool heterogeneous) {
  const std::size_t types = 1 + rng() % 3;
  std::vector<double> counts;
  for (std::size_t t = 0; t < types; ++t) counts.push_back(static_cast<double>(1 + rng() % 8));
  std::vector<Job> jobs;
  const std::size_t m = rng() % 15;
  for (std::size_t i = 0; i < m; ++i) {
    Job job;
    job.scale_factor = 1 << (rng() % 3);
    job.arrival = static_cast<double>(rng() % 1000);
    job.attained = static_cast<double>(rng() % 10000);
    job.running_type = static_cast<int>(rng() % (types + 1)) - 1;
    job.waiting = static_cast<double>(rng() % 100000);
    for (std::size_t t = 0; t < types; ++t) {
      const bool cannot = rng() % 4 == 0 || job.scale_factor > counts[t];
      job.speeds.push_back(cannot ? 0.0
                           : heterogeneous ? 0.5 + static_cast<double>(rng() % 100) / 10.0
                                           : 1.0);
    }
    jobs.push_back(job);
  }
  return Input(counts, jobs);
}

TEST(LasPerfTest, IsTiresias2dasWhereEveryTypeRunsAJobAsFast) {
  std::mt19937_64 rng(27);
  for (int trial = 0; trial < 300; ++trial) {
    const PolicyInput input = RandomInput(rng, /*heterogeneous=*/false);
    EXPECT_EQ(Types(input, "las_perf:calm=0"), Types(input, "tiresias_2das:starve=86400"))
        << "trial " << trial;
    // Giving the queues keeps the default promotion.
    EXPECT_EQ(Types(input, "las_perf:calm=0,thresholds=3600"), Types(input, "las_perf:calm=0"))
        << "trial " << trial;
    EXPECT_EQ(Types(input, "las_perf:calm=0,starve=2000"),
              Types(input, "tiresias_2das:starve=2000"))
        << "trial " << trial;
  }
}

TEST(LasPerfTest, RandomProblemsKeepGangsWholeAndCapacityAndTradesSaveTime) {
  std::mt19937_64 rng(2027);
  int traded_trials = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const PolicyInput input = RandomInput(rng, /*heterogeneous=*/true);
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    const PolicyOutput out = Allocation(input, "las_perf:calm=0");
    ASSERT_EQ(out.allocation.rows(), m);
    std::vector<double> free = input.gpu_counts;
    std::vector<int> type(m, -1);
    for (std::size_t i = 0; i < m; ++i) {
      int ones = 0;
      for (std::size_t t = 0; t < n; ++t) {
        const double x = out.allocation(i, t);
        ASSERT_TRUE(x == 0.0 || x == 1.0) << "trial " << trial;
        if (x == 0.0) continue;
        ++ones;
        type[i] = static_cast<int>(t);
        EXPECT_GT(input.throughput(i, t), 0.0) << "trial " << trial;
        free[t] -= input.jobs[i].scale_factor;
      }
      EXPECT_LE(ones, 1) << "trial " << trial;  // a gang on one type, all its GPUs
    }
    for (std::size_t t = 0; t < n; ++t) EXPECT_GE(free[t], 0.0) << "trial " << trial;
    // A job that waits fits in no type's leftover GPUs (it was skipped for want of room,
    // and trades keep every type's use), except types too slow for it while it is patient.
    for (std::size_t i = 0; i < m; ++i) {
      if (type[i] >= 0) continue;
      double fastest = 0.0;
      for (std::size_t t = 0; t < n; ++t) fastest = std::max(fastest, input.throughput(i, t));
      for (std::size_t t = 0; t < n; ++t) {
        const bool too_slow = input.throughput(i, t) < 0.2 * fastest &&
                              input.jobs[i].waiting.value() < 36000.0;
        EXPECT_TRUE(input.throughput(i, t) <= 0.0 || too_slow ||
                    free[t] < input.jobs[i].scale_factor)
            << "trial " << trial << " job " << i;
      }
    }
    // Trades move placed jobs only, each lowering their expected run time in total; jobs
    // skipped may then take GPUs a trade left free. So every job placed without trades is
    // placed with them, in no more expected time, and in less by more than one trade's
    // threshold where any of them moved.
    const std::vector<int> untraded = Types(input, "las_perf:calm=0,trade=0");
    const auto relative = [&](std::size_t i, int t) {
      double best = 0.0;
      for (std::size_t u = 0; u < n; ++u) best = std::max(best, input.throughput(i, u));
      return input.throughput(i, static_cast<std::size_t>(t)) / best;
    };
    const auto expected = [&](const std::vector<int>& types) {
      double total = 0.0;
      for (std::size_t i = 0; i < m; ++i) {
        if (untraded[i] < 0) continue;
        const PolicyJob& job = input.jobs[i];
        const double ran = job.attained_gpu_seconds / job.scale_factor;
        const double left =
            std::max(60000.0, job.running_type >= 0 ? ran * relative(i, job.running_type) : ran);
        total += left / relative(i, types[i]);
      }
      return total;
    };
    bool moved = false;
    for (std::size_t i = 0; i < m; ++i) {
      if (untraded[i] < 0) continue;
      EXPECT_GE(type[i], 0) << "trial " << trial << " job " << i;
      moved = moved || type[i] != untraded[i];
    }
    EXPECT_LE(expected(type), expected(untraded) * (1 + 1e-12)) << "trial " << trial;
    if (moved) {
      ++traded_trials;
      EXPECT_LT(expected(type), expected(untraded) - 3600.0) << "trial " << trial;
    }
  }
  EXPECT_GT(traded_trials, 25);  // the trades were exercised
}

// Calm rounds. The held-out case they were built for (12:6:18, 0.2 jobs/h, seed 44 in
// bench/README.md): a job runs on b at 1 step/s while a's GPU, 1.19 times faster for it,
// stands idle. By hand, with 360,000 steps left and a restart of 600 s: staying takes
// 360,000 s, moving 600 + 360,000 / 1.19 = 303,121 s. The queues' rule (move into room only
// at `upgrade` = 1.2 times) stays; a calm round (nothing contends) moves it.
TEST(LasPerfTest, CalmRoundMovesARunningJobToAnyFasterFreeTypeWhereTheQueuesWouldNot) {
  const PolicyInput input = Input({1, 1}, {{.running_type = 1, .speeds = {1.19, 1}}});
  EXPECT_EQ(Types(input, "las_perf:calm=0"), (std::vector<int>{1}));
  EXPECT_EQ(Types(input, "las_perf"), (std::vector<int>{0}));
  const double steps = 360000.0;
  const double restart = 600.0;
  const auto finish = [&](int type) {
    const double speed = input.throughput(0, static_cast<std::size_t>(type));
    return (type == 1 ? 0.0 : restart) + steps / speed;
  };
  EXPECT_NEAR(finish(1), 360000.0, 1e-6);
  EXPECT_NEAR(finish(0), 303121.0, 1.0);
  EXPECT_LT(finish(Types(input, "las_perf")[0]), finish(Types(input, "las_perf:calm=0")[0]));
}

// A round is calm when every job finds room oldest first on its fastest type with room, at
// no less than half (`calm_speed`) its best speed there. Job 0 (old, demoted) runs on b at
// 1 step/s, a's GPU idle and 1.19 times faster; job 1 arrives, 2 steps/s on a and 1 on b.
// Oldest first, job 0 takes a and job 1 b, half its best speed: calm, so that is the round,
// where the queues place the newcomer first, on a (room), and keep job 0 on b. At 0.99
// steps/s on b job 1 would run below half its best: the round is contended and the queues
// decide; and for `calm` seconds after a contended round they keep deciding.
TEST(LasPerfTest, CalmRoundsAreFirstComeOnTheFastestFreeTypeUntilJobsContend) {
  std::vector<Job> jobs = {
      {.arrival = 0, .attained = 5000, .running_type = 1, .speeds = {1.19, 1}},
      {.arrival = 10, .speeds = {2, 1}}};
  const PolicyInput calm = Input({1, 1}, jobs);
  EXPECT_EQ(Types(calm, "las_perf"), (std::vector<int>{0, 1}));
  EXPECT_EQ(Types(calm, "las_perf:calm=0"), (std::vector<int>{1, 0}));
  EXPECT_EQ(Types(calm, "las_perf:calm_speed=0.51"), (std::vector<int>{1, 0}));
  jobs[1].speeds = {2, 0.99};
  const PolicyInput contended = Input({1, 1}, jobs);
  EXPECT_EQ(Types(contended, "las_perf"), (std::vector<int>{1, 0}));
  EXPECT_EQ(Types(contended, "las_perf:calm_speed=0.49"), (std::vector<int>{0, 1}));

  // One policy over rounds: contended at t = 0, calm after. By default the first calm round
  // is run calm (t = 360, one round later): job 0 moves to a, 1.19 times faster (worth it
  // for a job with more than a restart's work left: the first test). With `calm=86400` the
  // queues keep deciding for a day after the contended round: at t = 3,600 job 0 stays on b
  // (1.19 < upgrade), and only at t = 86,400 does it move.
  const auto types_at = [&](const std::string& name, const std::vector<double>& times) {
    const std::unique_ptr<Policy> policy = Make(name);
    PolicyInput round = contended;
    round.now_seconds = 0.0;
    EXPECT_TRUE(policy->Allocate(round).ok());
    PolicyInput quiet = Input({1, 1}, {{.arrival = 0, .running_type = 1, .speeds = {1.19, 1}}});
    std::vector<int> types;
    for (double t : times) {
      quiet.now_seconds = t;
      Result<PolicyOutput> out = policy->Allocate(quiet);
      EXPECT_TRUE(out.ok());
      types.push_back(out.ok() && out->allocation(0, 0) == 1.0 ? 0 : 1);
    }
    return types;
  };
  EXPECT_EQ(types_at("las_perf", {360.0}), (std::vector<int>{0}));
  EXPECT_EQ(types_at("las_perf:calm=86400", {360.0, 3600.0, 86400.0}),
            (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(types_at("las_perf:calm=3600", {360.0, 3599.0, 3600.0}),
            (std::vector<int>{1, 1, 0}));
}

// Against oasis, an independent implementation of the same calm order (without utilities it
// admits every job and runs them oldest first, each on the fastest type with free GPUs): on
// random problems where that order gives every job room at no less than half its best
// speed, las_perf (fresh, so no contended round before) allocates exactly as oasis; where
// it does not, exactly as the queues (calm=0).
TEST(LasPerfTest, CalmRoundsAreOasisWithoutUtilitiesAndContendedOnesTheQueues) {
  std::mt19937_64 rng(2028);
  int calm_trials = 0;
  int contended_trials = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const PolicyInput input = RandomInput(rng, /*heterogeneous=*/true);
    const std::vector<int> oasis = Types(input, "oasis");
    bool calm = true;
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      double best = 0.0;
      for (std::size_t t = 0; t < input.num_types(); ++t) {
        best = std::max(best, input.throughput(i, t));
      }
      calm = calm && oasis[i] >= 0 &&
             input.throughput(i, static_cast<std::size_t>(oasis[i])) >= 0.5 * best;
    }
    if (calm) {
      ++calm_trials;
      EXPECT_EQ(Types(input, "las_perf"), oasis) << "trial " << trial;
    } else {
      ++contended_trials;
      EXPECT_EQ(Types(input, "las_perf"), Types(input, "las_perf:calm=0")) << "trial " << trial;
    }
  }
  EXPECT_GT(calm_trials, 50);
  EXPECT_GT(contended_trials, 50);
}

}  // namespace
}  // namespace gavel::policy
