// AllocationService: answers from a prefetched solve of the same jobs, falls back to the latest
// allocation restricted to the jobs still there (and solves the new problem in the background),
// and solves synchronously only when nothing was ever solved.
#include "gavel/daemon/allocation_service.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace gavel::daemon {
namespace {

// Gives job i the allocation (i + 1) / 100 on every type, and counts its calls.
class CountingPolicy final : public policy::Policy {
 public:
  explicit CountingPolicy(std::atomic<int>* calls) : calls_(calls) {}
  Result<policy::PolicyOutput> Allocate(const policy::PolicyInput& input) override {
    ++*calls_;
    policy::PolicyOutput out;
    out.allocation = Matrix(input.num_jobs(), input.num_types());
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      for (std::size_t t = 0; t < input.num_types(); ++t) {
        out.allocation(i, t) = static_cast<double>(input.jobs[i].id.value() + 1) / 100.0;
      }
    }
    return out;
  }

 private:
  std::atomic<int>* calls_;
};

policy::PolicyInput Input(std::vector<std::uint64_t> ids) {
  policy::PolicyInput input;
  input.gpu_types = {"k80", "v100"};
  input.gpu_counts = {1, 1};
  input.gpus_per_server = {1, 1};
  for (std::uint64_t id : ids) {
    policy::PolicyJob job;
    job.id = JobId(id);
    input.jobs.push_back(job);
  }
  input.throughput = Matrix(ids.size(), 2, 1.0);
  return input;
}

TEST(AllocationServiceTest, FirstSolveIsSynchronousThenPrefetchedSolvesAreServed) {
  std::atomic<int> calls = 0;
  std::atomic<int> notified = 0;
  AllocationService service(std::make_unique<CountingPolicy>(&calls), /*background=*/true,
                            [&] { ++notified; });
  auto first = service.Allocate(Input({1, 2}));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(service.stats().synchronous_solves, 1u);

  service.Prefetch({Input({1, 2, 3}), Input({2, 3})});
  service.WaitIdle();
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(notified, 2);
  EXPECT_TRUE(service.TakeFreshResult());
  EXPECT_FALSE(service.TakeFreshResult());
  for (const auto& ids : {std::vector<std::uint64_t>{1, 2, 3}, std::vector<std::uint64_t>{2, 3}}) {
    auto served = service.Allocate(Input(ids));
    ASSERT_TRUE(served.ok());
    ASSERT_EQ(served->allocation.rows(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      EXPECT_DOUBLE_EQ(served->allocation(i, 1), static_cast<double>(ids[i] + 1) / 100.0);
    }
  }
  EXPECT_EQ(calls, 3) << "served from the prefetched solves";
  EXPECT_EQ(service.stats().served_fresh, 2u);
}

TEST(AllocationServiceTest, AnUnforeseenJobSetGetsTheLatestAllocationRestrictedAndANewSolve) {
  std::atomic<int> calls = 0;
  AllocationService service(std::make_unique<CountingPolicy>(&calls), /*background=*/true,
                            nullptr);
  ASSERT_TRUE(service.Allocate(Input({1, 2})).ok());
  auto stale = service.Allocate(Input({2, 5}));
  ASSERT_TRUE(stale.ok());
  EXPECT_DOUBLE_EQ(stale->allocation(0, 0), 0.03) << "job 2 keeps its share";
  EXPECT_DOUBLE_EQ(stale->allocation(1, 0), 0.0) << "job 5 was not in the latest solve";
  service.WaitIdle();
  EXPECT_EQ(calls, 2) << "the new job set is solved in the background";
  auto fresh = service.Allocate(Input({2, 5}));
  ASSERT_TRUE(fresh.ok());
  EXPECT_DOUBLE_EQ(fresh->allocation(1, 0), 0.06);
  EXPECT_EQ(service.stats().served_stale, 1u);
}

// The mid-round solves (kCacheOnly) are found when the RoundScheduler asks for their job set,
// but do not make the next round take a new allocation of the jobs in use; a solve asked for
// because something changed (kTakeWhenSolved) does.
TEST(AllocationServiceTest, OnlySolvesAskedToBeTakenAreFresh) {
  std::atomic<int> calls = 0;
  AllocationService service(std::make_unique<CountingPolicy>(&calls), /*background=*/true,
                            nullptr);
  ASSERT_TRUE(service.Allocate(Input({1, 2})).ok());
  service.Prefetch({Input({1, 2}), Input({2})}, AllocationService::PrefetchUse::kCacheOnly);
  service.WaitIdle();
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(service.TakeFreshResult()) << "a mid-round solve leaves the allocation in use";
  auto found = service.Allocate(Input({2}));
  ASSERT_TRUE(found.ok());
  EXPECT_DOUBLE_EQ(found->allocation(0, 0), 0.03);
  EXPECT_EQ(service.stats().served_fresh, 1u) << "the job set after a finish was solved ahead";

  service.Prefetch({Input({2, 3})}, AllocationService::PrefetchUse::kTakeWhenSolved);
  service.WaitIdle();
  EXPECT_TRUE(service.TakeFreshResult());
  EXPECT_EQ(calls, 4);
}

// Blocks every solve until opened; counts the solves begun.
class GatedPolicy final : public policy::Policy {
 public:
  Result<policy::PolicyOutput> Allocate(const policy::PolicyInput& input) override {
    ++begun;
    while (!open) std::this_thread::yield();
    policy::PolicyOutput out;
    out.allocation = Matrix(input.num_jobs(), input.num_types(), 0.5);
    return out;
  }
  std::atomic<int> begun = 0;
  std::atomic<bool> open = false;
};

// A change's solve still waiting when a mid-round prefetch replaces it: the replacement is
// taken instead, so the change is not lost.
TEST(AllocationServiceTest, ACacheOnlyPrefetchReplacingAPendingChangeIsTaken) {
  auto owned = std::make_unique<GatedPolicy>();
  GatedPolicy& policy = *owned;
  policy.open = true;
  AllocationService service(std::move(owned), /*background=*/true, nullptr);
  ASSERT_TRUE(service.Allocate(Input({1})).ok());
  policy.open = false;
  service.Prefetch({Input({1})}, AllocationService::PrefetchUse::kCacheOnly);
  while (policy.begun < 2) std::this_thread::yield();  // the background thread holds it
  service.Prefetch({Input({1, 2})}, AllocationService::PrefetchUse::kTakeWhenSolved);
  service.Prefetch({Input({1, 2})}, AllocationService::PrefetchUse::kCacheOnly);
  policy.open = true;
  service.WaitIdle();
  EXPECT_EQ(policy.begun, 3) << "the pending change was replaced, not solved twice";
  EXPECT_TRUE(service.TakeFreshResult());
}

TEST(AllocationServiceTest, WithoutBackgroundEverySolveIsSynchronous) {
  std::atomic<int> calls = 0;
  AllocationService service(std::make_unique<CountingPolicy>(&calls), /*background=*/false,
                            nullptr);
  service.Prefetch({Input({1})});
  ASSERT_TRUE(service.Allocate(Input({1})).ok());
  ASSERT_TRUE(service.Allocate(Input({1})).ok());
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace gavel::daemon
