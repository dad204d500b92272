#include "gavel/policy/gandiva_introspective.h"

#include <gtest/gtest.h>

#include <random>

namespace gavel::policy {
namespace {

std::unique_ptr<Policy> Make() {
  auto policy = MakeGandivaIntrospective(PolicyOptions{});
  GAVEL_CHECK(policy.ok());
  return std::move(*policy);
}

// `jobs` one-GPU jobs at 1 step/s on `gpus` GPUs of one type; waiting[i] seconds waited.
PolicyInput Problem(int gpus, const std::vector<double>& waiting) {
  PolicyInput input;
  input.gpu_types = {"v100"};
  input.gpu_counts = {static_cast<double>(gpus)};
  input.gpus_per_server = {1};
  input.throughput = Matrix(waiting.size(), 1, 1.0);
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    PolicyJob job;
    job.id = JobId(i);
    job.waiting = Seconds(waiting[i]);
    input.jobs.push_back(job);
  }
  input.pair_throughput_first = Matrix(0, 1);
  input.pair_throughput_second = Matrix(0, 1);
  return input;
}

void AddPair(PolicyInput& input, int a, int b, double first, double second) {
  input.pairs.push_back(JobPair{a, b});
  Matrix f(input.pairs.size(), 1);
  Matrix s(input.pairs.size(), 1);
  for (std::size_t p = 0; p + 1 < input.pairs.size(); ++p) {
    f(p, 0) = input.pair_throughput_first(p, 0);
    s(p, 0) = input.pair_throughput_second(p, 0);
  }
  f(input.pairs.size() - 1, 0) = first;
  s(input.pairs.size() - 1, 0) = second;
  input.pair_throughput_first = f;
  input.pair_throughput_second = s;
}

TEST(GandivaIntrospective, TimeSlicesByLongestWait) {
  const auto policy = Make();
  // One GPU, three jobs: the one that waited longest runs; the running one (waited 0) yields.
  const Result<PolicyOutput> out = policy->Allocate(Problem(1, {0.0, 700.0, 300.0}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->allocation(0, 0), 0.0);
  EXPECT_EQ(out->allocation(1, 0), 1.0);
  EXPECT_EQ(out->allocation(2, 0), 0.0);
}

TEST(GandivaIntrospective, AWaitingJobTakesFreeGpusRatherThanMovingARunningOne) {
  // Types a and b, one GPU each; job 0 runs on a, job 1 waited (placed first). Both types
  // have a free GPU, so "most free" alone ties and picks a, moving job 0 to b for nothing.
  const auto policy = Make();
  PolicyInput input = Problem(1, {0.0, 500.0});
  input.gpu_types = {"a", "b"};
  input.gpu_counts = {1.0, 1.0};
  input.gpus_per_server = {1, 1};
  input.throughput = Matrix(2, 2, 1.0);
  input.pair_throughput_first = Matrix(0, 2);
  input.pair_throughput_second = Matrix(0, 2);
  input.jobs[0].running_type = 0;
  const Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->allocation(0, 0), 1.0);  // job 0 stays on a
  EXPECT_EQ(out->allocation(1, 1), 1.0);  // job 1 starts on b
  // One GPU only: time slicing suspends the running job for the one that waited.
  const auto sliced = Make();
  PolicyInput one = Problem(1, {0.0, 500.0});
  one.jobs[0].running_type = 0;
  const Result<PolicyOutput> turn = sliced->Allocate(one);
  ASSERT_TRUE(turn.ok());
  EXPECT_EQ(turn->allocation(0, 0), 0.0);
  EXPECT_EQ(turn->allocation(1, 0), 1.0);
}

TEST(GandivaIntrospective, PacksThenUnpacksAPairMeasuredSlow) {
  const auto policy = Make();
  PolicyInput slow = Problem(1, {0.0, 10.0});
  AddPair(slow, 0, 1, 0.3, 0.3);  // 0.6 of apart: worse than time slicing
  Result<PolicyOutput> out = policy->Allocate(slow);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->pair_allocation(0, 0), 1.0);  // packed: it cannot know before trying
  EXPECT_EQ(out->allocation(0, 0) + out->allocation(1, 0), 0.0);
  out = policy->Allocate(slow);  // it ran: measured, unpacked, one job runs alone
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->pair_allocation(0, 0), 0.0);
  EXPECT_EQ(out->allocation(0, 0) + out->allocation(1, 0), 1.0);
  out = policy->Allocate(slow);  // and never packed again
  EXPECT_EQ(out->pair_allocation(0, 0), 0.0);

  const auto other = Make();
  PolicyInput good = Problem(1, {0.0, 10.0});
  AddPair(good, 0, 1, 0.7, 0.6);  // 1.3 of apart: kept
  for (int round = 0; round < 3; ++round) {
    out = other->Allocate(good);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->pair_allocation(0, 0), 1.0) << round;
  }
}

TEST(GandivaIntrospective, ElasticJobsGrowWhenIdleAndShrinkWhenBusy) {
  const auto policy = Make();
  PolicyInput input = Problem(4, {0.0});
  PolicyJob& job = input.jobs[0];
  job.min_workers = 1;
  job.max_workers = 4;
  job.throughput_by_workers = Matrix(4, 1);
  const double tput[] = {1.0, 1.8, 2.4, 2.4};  // a 4th worker gains nothing
  for (int k = 0; k < 4; ++k) job.throughput_by_workers(static_cast<std::size_t>(k), 0) = tput[k];
  Result<PolicyOutput> out = policy->Allocate(input);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->workers[0], 3);
  // Four more one-GPU jobs make it oversubscribed: the elastic job shrinks to 1.
  PolicyInput busy = Problem(4, {0.0, 5.0, 5.0, 5.0, 5.0});
  busy.jobs[0] = job;
  out = policy->Allocate(busy);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->workers[0], 1);
}

TEST(GandivaIntrospective, NeverOvercommitsAType) {
  std::mt19937 rng(3);
  const auto policy = Make();
  for (int trial = 0; trial < 200; ++trial) {
    const int jobs = 1 + static_cast<int>(rng() % 8);
    std::vector<double> waiting;
    for (int i = 0; i < jobs; ++i) waiting.push_back(static_cast<double>(rng() % 1000));
    PolicyInput input = Problem(1 + static_cast<int>(rng() % 4), waiting);
    for (int a = 0; a < jobs; ++a) {
      for (int b = a + 1; b < jobs; ++b) {
        if (rng() % 2 == 0) AddPair(input, a, b, 0.1 * (rng() % 10), 0.1 * (rng() % 10));
      }
    }
    const Result<PolicyOutput> out = policy->Allocate(input);
    ASSERT_TRUE(out.ok());
    double used = 0.0;
    std::vector<int> runs(static_cast<std::size_t>(jobs), 0);
    for (int i = 0; i < jobs; ++i) {
      used += out->allocation(static_cast<std::size_t>(i), 0);
      runs[static_cast<std::size_t>(i)] += out->allocation(static_cast<std::size_t>(i), 0) > 0 ? 1 : 0;
    }
    for (std::size_t p = 0; p < input.pairs.size(); ++p) {
      used += out->pair_allocation(p, 0);
      if (out->pair_allocation(p, 0) > 0) {
        ++runs[static_cast<std::size_t>(input.pairs[p].first)];
        ++runs[static_cast<std::size_t>(input.pairs[p].second)];
      }
    }
    EXPECT_LE(used, input.gpu_counts[0]);
    for (int r : runs) EXPECT_LE(r, 1);  // no job in two places
    // Work conserving: no GPU idles while a job runs nowhere.
    const bool someone_waits = std::find(runs.begin(), runs.end(), 0) != runs.end();
    if (someone_waits) {
      EXPECT_EQ(used, input.gpu_counts[0]);
    }
  }
}

}  // namespace
}  // namespace gavel::policy
