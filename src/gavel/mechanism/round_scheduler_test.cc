#include "gavel/mechanism/round_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "gavel/core/elastic.h"
#include "gavel/core/py_random.h"
#include "gavel/core/snapshot.h"
#include "gavel/mechanism/parts_test_support.h"

namespace gavel::mechanism {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A hand-made table: models A and B at scale factor 1 (and A at 2) on v100 and k80.
std::shared_ptr<const ThroughputTable> SmallTable() { return testing::PartsTable(); }

// A policy whose allocation is a function of the input; counts its calls.
class FakePolicy final : public policy::Policy {
 public:
  using Rule = std::function<void(const policy::PolicyInput&, policy::PolicyOutput&)>;
  FakePolicy(Rule rule, int* calls) : rule_(std::move(rule)), calls_(calls) {}
  Result<policy::PolicyOutput> Allocate(const policy::PolicyInput& input) override {
    ++*calls_;
    policy::PolicyOutput out;
    out.allocation = Matrix(input.num_jobs(), input.num_types());
    out.pair_allocation = Matrix(input.pairs.size(), input.num_types());
    rule_(input, out);
    return out;
  }

 private:
  Rule rule_;
  int* calls_;
};

// Every job gets `share` of every type.
FakePolicy::Rule Share(double share) {
  return [share](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    for (std::size_t i = 0; i < in.num_jobs(); ++i) {
      for (std::size_t j = 0; j < in.num_types(); ++j) out.allocation(i, j) = share;
    }
  };
}

struct Fixture {
  ManualClock clock;
  int policy_calls = 0;
  std::unique_ptr<RoundScheduler> scheduler;

  Fixture(std::vector<GpuTypeSpec> cluster, FakePolicy::Rule rule, Compat compat = {},
          PolicyTraits traits = {}, SchedulerOptions options = {},
          std::shared_ptr<const ThroughputTable> table = SmallTable()) {
    auto layout = ClusterLayout::Create(cluster);
    GAVEL_CHECK(layout.ok());
    options.policy = "fake";
    options.compat = compat;
    auto created = RoundScheduler::CreateWithPolicy(
        std::move(*layout), std::move(table), options, &clock,
        std::make_unique<FakePolicy>(std::move(rule), &policy_calls), traits);
    GAVEL_CHECK_MSG(created.ok(), created.status().ToString().c_str());
    scheduler = std::move(*created);
  }

  JobId Add(const std::string& model, int sf, double steps, double arrival,
            double restart_cost = 0.0) {
    JobDescription d;
    d.type = JobTypeKey{model, sf};
    d.total_steps = steps;
    d.arrival = Seconds(arrival);
    d.restart_cost = Seconds(restart_cost);
    const JobId id(scheduler->num_jobs());
    const Status added = scheduler->AddJob(id, d);
    GAVEL_CHECK_MSG(added.ok(), added.ToString().c_str());
    return id;
  }

  RoundPlan Plan(double now) {
    clock.Set(Seconds(now));
    auto plan = scheduler->PlanRound();
    GAVEL_CHECK_MSG(plan.ok(), plan.status().ToString().c_str());
    return *plan;
  }

  // Every GPU of every assignment reports its share of the lease after `elapsed` seconds.
  std::vector<ReportOutcome> Finish(const RoundPlan& plan, double elapsed) {
    std::vector<ReportOutcome> outcomes;
    for (const Assignment& a : plan.assignments) {
      const double gpus = static_cast<double>(a.workers.size());
      for (std::size_t g = 0; g < a.workers.size(); ++g) {
        WorkerReport r;
        r.combination = a.combination;
        r.worker = a.workers[g];
        for (double s : a.max_steps) r.steps.push_back(s / gpus);
        r.elapsed.assign(a.max_steps.size(), Seconds(elapsed));
        r.finished_at = plan.start + Seconds(elapsed);
        auto outcome = scheduler->OnWorkerDone(r);
        GAVEL_CHECK_MSG(outcome.ok(), outcome.status().ToString().c_str());
        outcomes.push_back(*outcome);
      }
    }
    return outcomes;
  }
};

std::vector<JobId> RunningJobs(const RoundPlan& plan) {
  std::vector<JobId> jobs;
  for (const Assignment& a : plan.assignments) {
    for (int i = 0; i < a.combination.size(); ++i) jobs.push_back(a.combination.member(i));
  }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

TEST(ClusterLayoutTest, NumbersWorkersTypeAfterTypeInSortedOrder) {
  auto layout = ClusterLayout::Create({{"v100", 4, 2}, {"p100", 3, 1}, {"k80", 5, 2}});
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->type_names(), (std::vector<std::string>{"k80", "p100", "v100"}));
  // k80 keeps two whole servers of two (the fifth GPU is dropped, as in the original).
  EXPECT_EQ(layout->gpu_count(0), 4);
  EXPECT_EQ(layout->servers(0), (std::vector<std::vector<WorkerId>>{{WorkerId(0), WorkerId(1)},
                                                                    {WorkerId(2), WorkerId(3)}}));
  EXPECT_EQ(layout->servers(1).size(), 3u);
  EXPECT_EQ(layout->servers(1)[0], std::vector<WorkerId>{WorkerId(4)});
  EXPECT_EQ(layout->servers(2)[1], (std::vector<WorkerId>{WorkerId(9), WorkerId(10)}));
  EXPECT_EQ(layout->num_workers(), 11);
  EXPECT_EQ(layout->TypeOf(WorkerId(9)), 2);
  // The user's order: v100, p100, k80.
  EXPECT_THAT(layout->preference_order(), ElementsAre(2, 1, 0));
}

TEST(ClusterLayoutTest, RejectsBadClusters) {
  EXPECT_FALSE(ClusterLayout::Create({}).ok());
  EXPECT_FALSE(ClusterLayout::Create({{"v100", 0, 1}}).ok());
  EXPECT_FALSE(ClusterLayout::Create({{"v100", 2, 1}, {"v100", 2, 1}}).ok());
  EXPECT_FALSE(ClusterLayout::Create({{"v100", -1, 1}, {"k80", 2, 1}}).ok());
  EXPECT_FALSE(ClusterLayout::Create({{"v100", 2, 0}}).ok());
  // A type with no whole server leaves the cluster.
  auto layout = ClusterLayout::Create({{"v100", 1, 2}, {"k80", 2, 1}});
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->type_names(), std::vector<std::string>{"k80"});
}

TEST(CombinationTest, SinglesSortBeforePairsAndPairsLexicographically) {
  const Combination s3 = Combination::Single(JobId(3));
  const Combination s9 = Combination::Single(JobId(9));
  const Combination p12 = Combination::Pair(JobId(2), JobId(1));
  const Combination p13 = Combination::Pair(JobId(1), JobId(3));
  const Combination p20 = Combination::Pair(JobId(2), JobId(0));
  EXPECT_TRUE(s3 < s9);
  EXPECT_TRUE(s9 < p12);
  EXPECT_FALSE(p12 < s9);
  EXPECT_TRUE(p20 < p12);  // (0, 2) < (1, 2)
  EXPECT_TRUE(p12 < p13);  // (1, 2) < (1, 3)
  EXPECT_EQ(p12.member(0), JobId(1));
  EXPECT_EQ(p12.ToString(), "(1, 2)");
  EXPECT_EQ(s3.ToString(), "3");
  EXPECT_EQ(p13.IndexOf(JobId(3)), 1);
  EXPECT_EQ(p13.IndexOf(JobId(2)), -1);
}

TEST(CompatTest, ParsesNamesAndGavel) {
  EXPECT_TRUE(Compat::Parse("gavel")->all());
  EXPECT_FALSE(Compat::Parse("none")->any());
  auto some = Compat::Parse("floor_step_split,idle_gap_booking");
  ASSERT_TRUE(some.ok());
  EXPECT_TRUE(some->floor_step_split && some->idle_gap_booking && !some->policy);
  EXPECT_THAT(some->Names(), ElementsAre("idle_gap_booking", "floor_step_split"));
  auto all_but = Compat::Parse("gavel,-policy");
  ASSERT_TRUE(all_but.ok());
  EXPECT_TRUE(!all_but->policy && all_but->floor_step_split && all_but->any() && !all_but->all());
  auto bad = Compat::Parse("policy,nonsense");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("nonsense"));
}

// The original's priorities worked by hand: two jobs with allocation 0.5 on one GPU. Round 0:
// both have the 180 s credit out of 360 s, priority 1 each, the tie goes to the first job. Then the job that
// ran has 540/720 (priority 0.67) and the other 180/720 (priority 2), and so on: they alternate.
TEST(RoundSchedulerTest, TwoHalfSharesAlternateOnOneGpu) {
  Fixture f({{"v100", 1, 1}}, Share(0.5));
  const JobId a = f.Add("A", 1, 1e6, 0.0);
  const JobId b = f.Add("B", 1, 1e6, 0.0);
  std::vector<JobId> ran;
  for (int round = 0; round < 6; ++round) {
    const RoundPlan plan = f.Plan(360.0 * round);
    ASSERT_EQ(plan.assignments.size(), 1u);
    ran.push_back(plan.assignments[0].combination.member(0));
    f.Finish(plan, 360.0);
  }
  EXPECT_THAT(ran, ElementsAre(a, b, a, b, a, b));
  EXPECT_EQ(f.policy_calls, 1);  // nothing changed after the first round
  EXPECT_EQ(f.scheduler->stats().rounds, 6);
}

TEST(RoundSchedulerTest, LeaseIsTheRoundsWholeStepsCappedByWhatRemains) {
  Fixture f({{"v100", 1, 1}}, Share(1.0));
  // A runs 2 steps/s on v100: 720 steps a round; 1000.5 steps need two rounds.
  const JobId a = f.Add("A", 1, 1000.5, 0.0);
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_THAT(plan.assignments[0].max_steps, ElementsAre(720.0));
  EXPECT_THAT(plan.assignments[0].expected_throughput, ElementsAre(2.0));
  EXPECT_EQ(plan.assignments[0].lease_duration, Seconds(360.0));
  f.Finish(plan, 360.0);
  plan = f.Plan(360.0);
  EXPECT_THAT(plan.assignments[0].max_steps, ElementsAre(280.5));
  const auto outcomes = f.Finish(plan, 140.25);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_THAT(outcomes[0].completed, ElementsAre(a));
  const JobRecord& r = f.scheduler->record(a);
  EXPECT_EQ(r.steps_run, 1000.5);
  EXPECT_EQ(r.finish, Seconds(500.25));
  EXPECT_EQ(r.jct(), Seconds(500.25));
  EXPECT_EQ(r.first_start, Seconds(0.0));
  EXPECT_FALSE(f.scheduler->IsActive(a));
  // Busy time: 360 + 140.25 on the one GPU.
  EXPECT_DOUBLE_EQ(f.scheduler->worker_busy_seconds()[0], 500.25);
  EXPECT_DOUBLE_EQ(f.scheduler->gpu_seconds(a, 0), 500.25);
}

// Under the original's rule a job that arrives between resets has no allocation and
// is not placed, though a GPU is free; by default it runs from the next round.
TEST(RoundSchedulerTest, NewJobWaitsForTheNextResetOnlyUnderCompat) {
  for (const bool compat : {true, false}) {
    SCOPED_TRACE(compat ? "compat" : "default");
    Fixture f({{"v100", 3, 1}}, Share(1.0 / 3.0), compat ? Compat::Gavel() : Compat::None());
    f.Add("A", 1, 1e7, 0.0);
    RoundPlan plan = f.Plan(0.0);  // resets at 0
    f.Finish(plan, 360.0);
    f.Add("A", 1, 1e7, 300.0);
    plan = f.Plan(360.0);  // compat: a reset at 0 counts as none, so this one resets too
    EXPECT_EQ(plan.assignments.size(), 2u);
    f.Finish(plan, 360.0);
    const JobId late = f.Add("B", 1, 1e7, 400.0);
    double t = 720.0;
    std::optional<double> started;
    while (!started && t < 5000.0) {
      plan = f.Plan(t);
      for (JobId j : RunningJobs(plan)) {
        if (j == late) started = t;
      }
      f.Finish(plan, 360.0);
      t += 360.0;
    }
    ASSERT_TRUE(started.has_value());
    // Compat: the next reset is due 1920 s after the one at 360, at the round at 2520.
    EXPECT_EQ(*started, compat ? 2520.0 : 720.0);
    EXPECT_EQ(f.policy_calls, 3);  // compat: at 0, 360, 2520; default: at 0, 360, 720
  }
}

TEST(RoundSchedulerTest, MultiGpuJobsGoFirstOntoWholeServersAndKeepTheirGpus) {
  Fixture f({{"v100", 4, 2}}, Share(1.0));
  const JobId s1 = f.Add("A", 1, 1e7, 0.0);
  const JobId big = f.Add("A", 2, 1e7, 0.0);
  const JobId s2 = f.Add("B", 1, 1e7, 0.0);
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 3u);
  std::map<JobId, std::vector<WorkerId>> placed;
  for (const Assignment& a : plan.assignments) placed[a.combination.member(0)] = a.workers;
  EXPECT_EQ(placed[big], (std::vector<WorkerId>{WorkerId(0), WorkerId(1)}));
  EXPECT_EQ(placed[s1], std::vector<WorkerId>{WorkerId(2)});
  EXPECT_EQ(placed[s2], std::vector<WorkerId>{WorkerId(3)});
  const auto outcomes = f.Finish(plan, 360.0);
  // The 2-GPU micro-task completes with its second report only.
  int complete = 0;
  for (const ReportOutcome& o : outcomes) complete += o.micro_task_complete ? 1 : 0;
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(f.scheduler->record(big).steps_run, std::trunc(3.0 * 360.0));

  plan = f.Plan(360.0);
  for (const Assignment& a : plan.assignments) {
    EXPECT_EQ(a.workers, placed[a.combination.member(0)]);
    EXPECT_TRUE(a.lease_extended);
  }
  EXPECT_EQ(f.scheduler->stats().lease_extensions, 3);
  EXPECT_EQ(f.scheduler->stats().lease_extension_opportunities, 3);
}

TEST(RoundSchedulerTest, AJobThatFailsFiveTimesInARowIsDropped) {
  Fixture f({{"v100", 1, 1}}, Share(1.0));
  const JobId a = f.Add("A", 1, 1e6, 0.0);
  auto fail = [&](const RoundPlan& plan) {
    WorkerReport r;
    r.combination = plan.assignments.at(0).combination;
    r.worker = plan.assignments.at(0).workers.at(0);
    r.steps = {0.0};
    r.elapsed = {Seconds(360.0)};
    r.finished_at = plan.start + Seconds(360.0);
    auto outcome = f.scheduler->OnWorkerDone(r);
    GAVEL_CHECK(outcome.ok());
    return *outcome;
  };
  double t = 0.0;
  for (int i = 0; i < 4; ++i, t += 360.0) EXPECT_FALSE(fail(f.Plan(t)).succeeded);
  f.Finish(f.Plan(t), 360.0);  // a success resets the count
  t += 360.0;
  ReportOutcome last;
  for (int i = 0; i < 5; ++i, t += 360.0) last = fail(f.Plan(t));
  EXPECT_THAT(last.dropped, ElementsAre(a));
  EXPECT_TRUE(f.scheduler->record(a).dropped);
  EXPECT_FALSE(f.scheduler->record(a).jct().has_value());
  EXPECT_EQ(f.scheduler->stats().failed_micro_tasks, 9);
  EXPECT_FALSE(f.scheduler->IsActive(a));
}

TEST(RoundSchedulerTest, AFailedMultiGpuMicroTaskCreditsNothing) {
  Fixture f({{"v100", 2, 1}}, Share(1.0));
  const JobId big = f.Add("A", 2, 1e6, 0.0);
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  // One GPU reported progress, then the micro-task failed as a whole.
  WorkerReport r;
  r.combination = plan.assignments[0].combination;
  r.worker = plan.assignments[0].workers[0];
  r.steps = {100.0};
  r.elapsed = {Seconds(360.0)};
  r.finished_at = Seconds(360.0);
  ASSERT_TRUE(f.scheduler->OnWorkerDone(r).ok());
  auto failed = f.scheduler->OnMicroTaskFailed(r.combination, Seconds(360.0));
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_TRUE(failed->micro_task_complete);
  EXPECT_FALSE(failed->succeeded);
  EXPECT_EQ(f.scheduler->record(big).steps_run, 0.0);
  EXPECT_FALSE(f.scheduler->HasRunningMicroTasks());
  EXPECT_EQ(f.scheduler->OnMicroTaskFailed(r.combination, Seconds(360.0)).status().code(),
            StatusCode::kFailedPrecondition);
  // The next round runs it again on the same GPUs.
  plan = f.Plan(360.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_TRUE(plan.assignments[0].lease_extended);
}

TEST(RoundSchedulerTest, FifoLikePoliciesNeverRunAZeroPriorityJob) {
  auto first_only = [](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    out.allocation(0, 0) = 1.0;  // type 0 = v100 (the only type)
    (void)in;
  };
  for (const bool skips : {true, false}) {
    PolicyTraits traits;
    traits.skips_zero_priority = skips;
    Fixture f({{"v100", 2, 1}}, first_only, Compat::None(), traits);
    f.Add("A", 1, 1e6, 0.0);
    f.Add("A", 1, 1e6, 0.0);
    const RoundPlan plan = f.Plan(0.0);
    // Without the FIFO rule, the job with no allocation fills the idle GPU.
    EXPECT_EQ(plan.assignments.size(), skips ? 1u : 2u);
  }
}

TEST(RoundSchedulerTest, PackedPairsRunTogetherAtTheirColocatedThroughputs) {
  auto pair_only = [](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    ASSERT_EQ(in.pairs.size(), 1u);
    out.pair_allocation(0, 0) = 1.0;
  };
  PolicyTraits traits;
  traits.packing = true;
  Fixture f({{"v100", 1, 1}}, pair_only, Compat::None(), traits);
  const JobId a = f.Add("A", 1, 1e6, 0.0);
  const JobId b = f.Add("B", 1, 1e6, 0.0);
  const RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  const Assignment& pair = plan.assignments[0];
  EXPECT_EQ(pair.combination, Combination::Pair(a, b));
  EXPECT_THAT(pair.expected_throughput, ElementsAre(1.5, 0.5));
  EXPECT_THAT(pair.max_steps, ElementsAre(540.0, 180.0));
  f.Finish(plan, 360.0);
  EXPECT_EQ(f.scheduler->record(a).steps_run, 540.0);
  EXPECT_EQ(f.scheduler->record(b).steps_run, 180.0);
}

TEST(RoundSchedulerTest, RejectsBadJobsAndReports) {
  Fixture f({{"v100", 2, 1}}, Share(0.5));
  JobDescription unknown;
  unknown.type = JobTypeKey{"C", 1};
  unknown.total_steps = 10;
  EXPECT_EQ(f.scheduler->AddJob(JobId(0), unknown).code(), StatusCode::kNotFound);
  JobDescription no_steps;
  no_steps.type = JobTypeKey{"A", 1};
  no_steps.total_steps = 0.0;
  EXPECT_EQ(f.scheduler->AddJob(JobId(0), no_steps).code(), StatusCode::kInvalidArgument);
  JobDescription too_big;
  too_big.type = JobTypeKey{"A", 2};
  too_big.total_steps = 10;
  Fixture one_gpu({{"v100", 1, 1}}, Share(1.0));
  EXPECT_THAT(one_gpu.scheduler->AddJob(JobId(0), too_big).message(),
              HasSubstr("can never run on this cluster"));

  f.Add("A", 1, 1e6, 0.0);
  const RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  WorkerReport r;
  r.combination = Combination::Single(JobId(7));
  r.worker = WorkerId(0);
  r.steps = {1.0};
  r.elapsed = {Seconds(1.0)};
  EXPECT_EQ(f.scheduler->OnWorkerDone(r).status().code(), StatusCode::kFailedPrecondition);
  r.combination = plan.assignments[0].combination;
  r.worker = WorkerId(plan.assignments[0].workers[0].value() == 0 ? 1 : 0);
  EXPECT_EQ(f.scheduler->OnWorkerDone(r).status().code(), StatusCode::kInvalidArgument);
  r.worker = plan.assignments[0].workers[0];
  r.steps = {1.0, 2.0};
  EXPECT_EQ(f.scheduler->OnWorkerDone(r).status().code(), StatusCode::kInvalidArgument);
}

TEST(RoundSchedulerTest, RegistryPolicyNeedsPricesWhenItSaysSo) {
  ManualClock clock;
  auto layout = ClusterLayout::Create({{"v100", 1, 1}});
  ASSERT_TRUE(layout.ok());
  SchedulerOptions options;
  options.policy = "max_sum_throughput_normalized_by_cost_perf";
  auto s = RoundScheduler::Create(*layout, SmallTable(), options, &clock);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("prices"));
  options.policy = "no_such_policy";
  EXPECT_EQ(RoundScheduler::Create(*layout, SmallTable(), options, &clock).status().code(),
            StatusCode::kNotFound);
}

// ---- Changes from a live cluster (the daemon's operations) ----

// Every active job gets 1/n of every type; records the problems the policy saw.
FakePolicy::Rule EvenShares(std::vector<policy::PolicyInput>* seen) {
  return [seen](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    seen->push_back(in);
    for (std::size_t i = 0; i < in.num_jobs(); ++i) {
      for (std::size_t j = 0; j < in.num_types(); ++j) {
        out.allocation(i, j) = 1.0 / static_cast<double>(in.num_jobs());
      }
    }
  };
}

// Three jobs with a third each on one GPU, worked by hand: all start with the
// 180-s credit (priority 1), so a, b, c run in turn. c is cancelled while it runs at 720 s:
// a and b keep exactly what they received (540 s each out of 1,260 s booked), and the new
// allocation (a half each) gives both priority 0.5 / (540 / 1260) — a rebuilt scheduler would
// have restarted them at the 180-s credit. c is in no later plan.
TEST(RoundSchedulerChangesTest, RemoveJobKeepsTheOthersAccountingAndDropsItsRunningTask) {
  std::vector<policy::PolicyInput> seen;
  Fixture f({{"v100", 1, 1}}, EvenShares(&seen));
  const JobId a = f.Add("A", 1, 1e7, 0.0);
  const JobId b = f.Add("B", 1, 1e7, 0.0);
  const JobId c = f.Add("A", 1, 1e7, 0.0);
  RoundPlan plan = f.Plan(0.0);
  EXPECT_THAT(RunningJobs(plan), ElementsAre(a));
  f.Finish(plan, 360.0);
  plan = f.Plan(360.0);
  EXPECT_THAT(RunningJobs(plan), ElementsAre(b));
  f.Finish(plan, 360.0);
  plan = f.Plan(720.0);
  ASSERT_THAT(RunningJobs(plan), ElementsAre(c));
  const JobAccounting a_before = *f.scheduler->AccountingOf(a);
  const JobAccounting b_before = *f.scheduler->AccountingOf(b);

  ASSERT_TRUE(f.scheduler->RemoveJob(c).ok());
  EXPECT_FALSE(f.scheduler->IsActive(c));
  EXPECT_FALSE(f.scheduler->HasRunningMicroTasks());  // c's micro-task was abandoned
  EXPECT_TRUE(f.scheduler->record(c).removed);
  EXPECT_TRUE(f.scheduler->record(c).done());
  EXPECT_FALSE(f.scheduler->record(c).jct().has_value());
  EXPECT_FALSE(f.scheduler->AccountingOf(c).has_value());
  EXPECT_EQ(f.scheduler->RemoveJob(c).code(), StatusCode::kNotFound);
  // Its late report is refused like any report of a micro-task that is not running.
  WorkerReport late;
  late.combination = Combination::Single(c);
  late.worker = WorkerId(0);
  late.steps = {100.0};
  late.elapsed = {Seconds(360.0)};
  EXPECT_EQ(f.scheduler->OnWorkerDone(late).status().code(), StatusCode::kFailedPrecondition);

  // The others' accounting is untouched, and nothing of c's abandoned round is booked.
  const JobAccounting a_after = *f.scheduler->AccountingOf(a);
  EXPECT_EQ(a_after.time_received, a_before.time_received);
  EXPECT_EQ(a_after.deficit, a_before.deficit);
  EXPECT_EQ(a_after.priority, a_before.priority);
  EXPECT_EQ(f.scheduler->AccountingOf(b)->time_received, b_before.time_received);
  EXPECT_THAT(a_after.time_received, ElementsAre(540.0));
  EXPECT_THAT(f.scheduler->AccountingOf(b)->time_received, ElementsAre(540.0));
  EXPECT_THAT(f.scheduler->type_time(), ElementsAre(1260.0));

  // The next round solves for a and b only and keeps their memory.
  ASSERT_EQ(f.policy_calls, 1);
  plan = f.Plan(1080.0);
  EXPECT_EQ(f.policy_calls, 2);
  ASSERT_EQ(seen.back().num_jobs(), 2u);
  EXPECT_EQ(seen.back().jobs[1].id, b);
  EXPECT_DOUBLE_EQ(f.scheduler->AccountingOf(a)->priority[0], 0.5 / (540.0 / 1260.0));
  EXPECT_DOUBLE_EQ(f.scheduler->AccountingOf(b)->priority[0], 0.5 / (540.0 / 1260.0));
  EXPECT_THAT(RunningJobs(plan), ElementsAre(a));  // the tie goes to the first job
  std::vector<JobId> ran;
  for (double t = 1080.0; t < 1080.0 + 6 * 360.0; t += 360.0) {
    if (t > 1080.0) plan = f.Plan(t);
    for (JobId j : RunningJobs(plan)) ran.push_back(j);
    f.Finish(plan, 360.0);
  }
  EXPECT_THAT(ran, ElementsAre(a, b, a, b, a, b));
}

TEST(RoundSchedulerChangesTest, UpdateThroughputFeedsPlansAndTheNextAllocation) {
  std::vector<policy::PolicyInput> seen;
  // Types in layout order: k80 (0), v100 (1); A runs 1 step/s on k80 and 2 on v100.
  Fixture f({{"v100", 1, 1}, {"k80", 1, 1}}, EvenShares(&seen));
  const JobId a = f.Add("A", 1, 1e7, 0.0);
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].gpu_type, 1);
  EXPECT_THAT(plan.assignments[0].expected_throughput, ElementsAre(2.0));
  f.Finish(plan, 360.0);

  ASSERT_TRUE(f.scheduler->UpdateThroughput(a, 1, 3.0).ok());
  EXPECT_THAT(f.scheduler->AccountingOf(a)->throughput, ElementsAre(1.0, 3.0));
  plan = f.Plan(360.0);
  EXPECT_EQ(f.policy_calls, 1);  // an estimate alone asks for no solve
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_THAT(plan.assignments[0].expected_throughput, ElementsAre(3.0));
  EXPECT_THAT(plan.assignments[0].max_steps, ElementsAre(1080.0));
  EXPECT_TRUE(plan.assignments[0].lease_extended);
  f.Finish(plan, 360.0);

  f.scheduler->RequestReallocation();
  plan = f.Plan(720.0);
  ASSERT_EQ(f.policy_calls, 2);
  EXPECT_EQ(seen.back().throughput(0, 0), 1.0);  // the table's, where nothing was measured
  EXPECT_EQ(seen.back().throughput(0, 1), 3.0);
  f.Finish(plan, 360.0);

  // An estimate of 0: the job is never placed on that type.
  ASSERT_TRUE(f.scheduler->UpdateThroughput(a, 1, 0.0).ok());
  plan = f.Plan(1080.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].gpu_type, 0);

  EXPECT_EQ(f.scheduler->UpdateThroughput(a, 2, 1.0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.scheduler->UpdateThroughput(a, 0, -1.0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.scheduler->UpdateThroughput(a, 0, std::nan("")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.scheduler->UpdateThroughput(JobId(9), 0, 1.0).code(), StatusCode::kNotFound);

  // A type with fewer GPUs than the job needs keeps throughput 0 whatever the estimate.
  Fixture g({{"v100", 2, 2}, {"k80", 1, 1}}, Share(1.0));
  const JobId big = g.Add("A", 2, 1e7, 0.0);
  ASSERT_TRUE(g.scheduler->UpdateThroughput(big, 0, 5.0).ok());
  EXPECT_THAT(g.scheduler->AccountingOf(big)->throughput, ElementsAre(0.0, 3.0));
}

// Two half shares on one GPU; a is held until 1,000 s, so b runs at 0, 360 and 720 (without
// the hold the tie at 0 would go to a). At 1,080 a is back with priority
// 0.5 / (180 / 1440) = 4 against b's 0.5 / (1260 / 1440) and runs.
TEST(RoundSchedulerChangesTest, AHeldJobIsNotPlannedUntilReleased) {
  Fixture f({{"v100", 1, 1}}, Share(0.5));
  const JobId a = f.Add("A", 1, 1e7, 0.0);
  const JobId b = f.Add("B", 1, 1e7, 0.0);
  ASSERT_TRUE(f.scheduler->HoldJob(a, Seconds(1000.0)).ok());
  EXPECT_TRUE(f.scheduler->IsHeld(a));
  for (double t : {0.0, 360.0, 720.0}) {
    const RoundPlan plan = f.Plan(t);
    EXPECT_THAT(RunningJobs(plan), ElementsAre(b)) << "at " << t;
    f.Finish(plan, 360.0);
  }
  EXPECT_TRUE(f.scheduler->IsHeld(a));
  RoundPlan plan = f.Plan(1080.0);
  EXPECT_FALSE(f.scheduler->IsHeld(a));
  EXPECT_THAT(RunningJobs(plan), ElementsAre(a));
  EXPECT_DOUBLE_EQ(f.scheduler->AccountingOf(a)->priority[0], 4.0);
  EXPECT_EQ(f.policy_calls, 1);  // holding asks for no solve
  f.Finish(plan, 360.0);

  // Held until released by hand.
  ASSERT_TRUE(f.scheduler->HoldJob(b, Seconds(1e9)).ok());
  for (double t : {1440.0, 1800.0, 2160.0}) {
    plan = f.Plan(t);
    EXPECT_THAT(RunningJobs(plan), ElementsAre(a)) << "at " << t;
    f.Finish(plan, 360.0);
  }
  ASSERT_TRUE(f.scheduler->ReleaseJob(b).ok());
  EXPECT_FALSE(f.scheduler->IsHeld(b));
  plan = f.Plan(2520.0);
  EXPECT_THAT(RunningJobs(plan), ElementsAre(b));  // far behind a by now
  f.Finish(plan, 360.0);

  EXPECT_EQ(f.scheduler->HoldJob(JobId(7), Seconds(1.0)).code(), StatusCode::kNotFound);
  EXPECT_EQ(f.scheduler->ReleaseJob(JobId(7)).code(), StatusCode::kNotFound);
  // A job that leaves is no longer held.
  ASSERT_TRUE(f.scheduler->HoldJob(a, Seconds(1e9)).ok());
  ASSERT_TRUE(f.scheduler->RemoveJob(a).ok());
  EXPECT_FALSE(f.scheduler->IsHeld(a));
}

// One v100 with a and b (a half each), 540 s received each. A v100 and a k80 join: both keep
// their 540 s on v100 and start the k80 as after a reset (180 s each). b keeps its GPU under
// its new id (a lease extension). Then the k80 and b's v100 leave: the v100 accounting stays.
TEST(RoundSchedulerChangesTest, GpusJoinAndLeaveWithoutResettingTheAccounting) {
  std::vector<policy::PolicyInput> seen;
  Fixture f({{"v100", 1, 1}}, EvenShares(&seen));
  const JobId a = f.Add("A", 1, 1e7, 0.0);
  const JobId b = f.Add("B", 1, 1e7, 0.0);
  RoundPlan plan = f.Plan(0.0);
  f.Finish(plan, 360.0);
  plan = f.Plan(360.0);
  ASSERT_THAT(RunningJobs(plan), ElementsAre(b));
  f.Finish(plan, 360.0);

  auto bigger = ClusterLayout::Create({{"v100", 2, 1}, {"k80", 1, 1}});
  ASSERT_TRUE(bigger.ok());
  // New ids: k80 = 0, v100 = 1 and 2; the old v100 (0) is now 1.
  const std::vector<std::optional<WorkerId>> grow = {WorkerId(1)};
  ASSERT_TRUE(f.scheduler->ChangeCluster(*bigger, grow).ok());
  EXPECT_EQ(f.scheduler->layout().num_workers(), 3);
  EXPECT_THAT(f.scheduler->AccountingOf(a)->time_received, ElementsAre(180.0, 540.0));
  EXPECT_THAT(f.scheduler->AccountingOf(b)->time_received, ElementsAre(180.0, 540.0));
  EXPECT_THAT(f.scheduler->type_time(), ElementsAre(360.0, 1080.0));
  EXPECT_THAT(f.scheduler->AccountingOf(a)->throughput, ElementsAre(1.0, 2.0));
  EXPECT_THAT(f.scheduler->worker_busy_seconds(), ElementsAre(0.0, 720.0, 0.0));
  EXPECT_THAT(f.scheduler->AccountingOf(a)->deficit, ElementsAre(0.0, 0.0));

  plan = f.Plan(720.0);
  ASSERT_EQ(f.policy_calls, 2);  // the cluster changed: a new solve
  EXPECT_EQ(seen.back().gpu_counts, (std::vector<double>{1.0, 2.0}));
  ASSERT_EQ(plan.assignments.size(), 2u);
  std::map<JobId, Assignment> by_job;
  for (const Assignment& x : plan.assignments) by_job[x.combination.member(0)] = x;
  EXPECT_EQ(by_job[b].workers, std::vector<WorkerId>{WorkerId(1)});
  EXPECT_TRUE(by_job[b].lease_extended);
  EXPECT_EQ(by_job[a].workers, std::vector<WorkerId>{WorkerId(2)});
  EXPECT_FALSE(by_job[a].lease_extended);

  // Not while micro-tasks run.
  auto smaller = ClusterLayout::Create({{"v100", 1, 1}});
  ASSERT_TRUE(smaller.ok());
  const std::vector<std::optional<WorkerId>> shrink = {std::nullopt, std::nullopt, WorkerId(0)};
  EXPECT_EQ(f.scheduler->ChangeCluster(*smaller, shrink).code(), StatusCode::kFailedPrecondition);
  f.Finish(plan, 360.0);
  EXPECT_THAT(f.scheduler->AccountingOf(a)->time_received, ElementsAre(180.0, 900.0));

  // Bad successor lists change nothing.
  const std::vector<std::optional<WorkerId>> too_short = {WorkerId(0)};
  EXPECT_EQ(f.scheduler->ChangeCluster(*smaller, too_short).code(), StatusCode::kInvalidArgument);
  const std::vector<std::optional<WorkerId>> twice = {std::nullopt, WorkerId(0), WorkerId(0)};
  EXPECT_EQ(f.scheduler->ChangeCluster(*smaller, twice).code(), StatusCode::kInvalidArgument);
  const std::vector<std::optional<WorkerId>> out_of_range = {std::nullopt, WorkerId(5),
                                                             std::nullopt};
  EXPECT_EQ(f.scheduler->ChangeCluster(*smaller, out_of_range).code(),
            StatusCode::kInvalidArgument);
  const std::vector<std::optional<WorkerId>> wrong_type = {WorkerId(0), std::nullopt, std::nullopt};
  EXPECT_EQ(f.scheduler->ChangeCluster(*smaller, wrong_type).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.scheduler->layout().num_workers(), 3);

  // The k80 and b's v100 leave; a's v100 (2) becomes 0.
  ASSERT_TRUE(f.scheduler->ChangeCluster(*smaller, shrink).ok());
  EXPECT_THAT(f.scheduler->AccountingOf(a)->time_received, ElementsAre(900.0));
  EXPECT_THAT(f.scheduler->AccountingOf(b)->time_received, ElementsAre(900.0));
  EXPECT_THAT(f.scheduler->type_time(), ElementsAre(1800.0));
  EXPECT_THAT(f.scheduler->worker_busy_seconds(), ElementsAre(360.0));
  plan = f.Plan(1080.0);
  ASSERT_THAT(RunningJobs(plan), ElementsAre(a));  // equal priorities: the first job
  EXPECT_EQ(plan.assignments[0].workers, std::vector<WorkerId>{WorkerId(0)});
  EXPECT_TRUE(plan.assignments[0].lease_extended);
  EXPECT_DOUBLE_EQ(f.scheduler->AccountingOf(a)->priority[0], 0.5 / (900.0 / 1800.0));
}

// A 2-GPU job on a type that shrinks below two GPUs gets throughput 0 there and waits; it runs
// again when the type grows back.
TEST(RoundSchedulerChangesTest, AJobTooLargeForWhatIsLeftWaitsForGpusToReturn) {
  Fixture f({{"v100", 2, 1}}, Share(1.0));
  const JobId big = f.Add("A", 2, 1e7, 0.0);
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  f.Finish(plan, 360.0);
  auto one = ClusterLayout::Create({{"v100", 1, 1}});
  ASSERT_TRUE(one.ok());
  const std::vector<std::optional<WorkerId>> shrink = {WorkerId(0), std::nullopt};
  ASSERT_TRUE(f.scheduler->ChangeCluster(*one, shrink).ok());
  EXPECT_TRUE(f.scheduler->IsActive(big));
  EXPECT_THAT(f.scheduler->AccountingOf(big)->throughput, ElementsAre(0.0));
  EXPECT_TRUE(f.Plan(360.0).assignments.empty());
  auto two = ClusterLayout::Create({{"v100", 2, 1}});
  ASSERT_TRUE(two.ok());
  const std::vector<std::optional<WorkerId>> grow = {WorkerId(0)};
  ASSERT_TRUE(f.scheduler->ChangeCluster(*two, grow).ok());
  EXPECT_THAT(f.scheduler->AccountingOf(big)->throughput, ElementsAre(3.0));
  plan = f.Plan(720.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].workers.size(), 2u);
}

// Invariants over random workloads with a real policy: no GPU is booked twice in a round, every
// assignment uses GPUs of its own type and as many as its scale factor, and a job that
// completes has run exactly its total steps.
TEST(RoundSchedulerTest, RandomWorkloadsKeepTheInvariants) {
  auto table_or = ThroughputTable::LoadFile(DefaultThroughputsFile());
  ASSERT_TRUE(table_or.ok()) << table_or.status().ToString();
  auto table = std::make_shared<const ThroughputTable>(std::move(*table_or));
  std::vector<JobTypeKey> keys;
  for (const JobTypeKey& k : table->job_types()) {
    if (k.scale_factor <= 2) keys.push_back(k);
  }
  for (const bool compat : {false, true}) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE("seed " + std::to_string(seed) + (compat ? " compat" : ""));
      PyRandom rng(seed);
      ManualClock clock;
      auto layout = ClusterLayout::Create({{"v100", 4, 2}, {"p100", 3, 1}, {"k80", 2, 1}});
      ASSERT_TRUE(layout.ok());
      SchedulerOptions options;
      options.policy = "max_min_fairness_perf";
      options.compat = compat ? Compat::Gavel() : Compat::None();
      options.seed = seed;
      auto created = RoundScheduler::Create(*layout, table, options, &clock);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      RoundScheduler& s = **created;
      double now = 0.0;
      std::set<JobId> completed;
      for (int round = 0; round < 300; ++round) {
        clock.Set(Seconds(now));
        if (round < 40 && rng.Random() < 0.5) {
          JobDescription d;
          d.type = keys[rng.ChoiceIndex(keys.size())];
          d.total_steps = 50.0 + 5000.0 * rng.Random();
          d.arrival = Seconds(now);
          ASSERT_TRUE(s.AddJob(JobId(s.num_jobs()), d).ok());
        }
        auto plan = s.PlanRound();
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        std::set<WorkerId> booked;
        double round_end = now;
        for (const Assignment& a : plan->assignments) {
          EXPECT_EQ(static_cast<int>(a.workers.size()),
                    s.record(a.combination.member(0)).scale_factor);
          for (WorkerId w : a.workers) {
            EXPECT_TRUE(booked.insert(w).second) << "worker " << w.value() << " booked twice";
            EXPECT_EQ(s.layout().TypeOf(w), a.gpu_type);
          }
          double finish = now;
          for (std::size_t i = 0; i < a.max_steps.size(); ++i) {
            EXPECT_GE(a.max_steps[i], 0.0);
            finish = std::max(finish, now + a.max_steps[i] / a.expected_throughput[i]);
          }
          round_end = std::max(round_end, finish);
          for (std::size_t g = 0; g < a.workers.size(); ++g) {
            WorkerReport r;
            r.combination = a.combination;
            r.worker = a.workers[g];
            for (double steps : a.max_steps) {
              r.steps.push_back(steps / static_cast<double>(a.workers.size()));
            }
            r.elapsed.assign(a.max_steps.size(), Seconds(finish - now));
            r.finished_at = Seconds(finish);
            auto outcome = s.OnWorkerDone(r);
            ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
            for (JobId j : outcome->completed) completed.insert(j);
          }
        }
        now = round_end > now ? round_end : now + 360.0;
      }
      EXPECT_GT(completed.size(), 5u);
      for (JobId j : completed) {
        const JobRecord& r = s.record(j);
        EXPECT_NEAR(r.steps_run, r.total_steps, 1e-9 * r.total_steps);
        EXPECT_GE(r.jct()->value(), 0.0);
      }
    }
  }
}


JobDescription Describe(const std::string& model, int sf, double steps) {
  JobDescription d;
  d.type = JobTypeKey{model, sf};
  d.total_steps = steps;
  return d;
}

// The caller's ids key everything: plans, records, holds, the policy's rows; an id that left
// may come back with a fresh record; an active id cannot be admitted twice.
TEST(RoundSchedulerCallerIdsTest, PlansAndRecordsSpeakTheCallersIds) {
  std::vector<JobId> policy_rows;
  Fixture f({{"v100", 1, 1}}, [&](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    policy_rows.clear();
    for (std::size_t i = 0; i < in.num_jobs(); ++i) {
      policy_rows.push_back(in.jobs[i].id);
      out.allocation(i, 0) = 1.0 / static_cast<double>(in.num_jobs());
    }
  });
  ASSERT_TRUE(f.scheduler->AddJob(JobId(7), Describe("A", 1, 1e6)).ok());
  ASSERT_TRUE(f.scheduler->AddJob(JobId(42), Describe("B", 1, 1e6)).ok());
  EXPECT_EQ(f.scheduler->AddJob(JobId(42), Describe("B", 1, 1e6)).code(),
            StatusCode::kFailedPrecondition);
  RoundPlan plan = f.Plan(0.0);
  EXPECT_THAT(policy_rows, ElementsAre(JobId(7), JobId(42)));
  EXPECT_THAT(RunningJobs(plan), ElementsAre(JobId(7)));  // ties go to the first admitted
  f.Finish(plan, 360.0);
  EXPECT_DOUBLE_EQ(f.scheduler->record(JobId(7)).steps_run, 720.0);  // 2 steps/s x 360 s
  ASSERT_TRUE(f.scheduler->RemoveJob(JobId(7)).ok());
  EXPECT_TRUE(f.scheduler->record(JobId(7)).removed);
  // Back under the same id, with progress made elsewhere: a fresh record that counts it.
  JobDescription again = Describe("A", 1, 1e6);
  again.steps_done = 1000.0;
  ASSERT_TRUE(f.scheduler->AddJob(JobId(7), again).ok());
  EXPECT_FALSE(f.scheduler->record(JobId(7)).removed);
  EXPECT_DOUBLE_EQ(f.scheduler->record(JobId(7)).steps_run, 1000.0);
  EXPECT_EQ(f.scheduler->num_jobs(), 2u);
  again.steps_done = 2e6;
  ASSERT_TRUE(f.scheduler->RemoveJob(JobId(7)).ok());
  EXPECT_EQ(f.scheduler->AddJob(JobId(7), again).code(), StatusCode::kInvalidArgument);
}

// A whole micro-task reported at once books exactly what its GPUs' reports would have.
TEST(RoundSchedulerCallerIdsTest, AWholeMicroTaskBooksLikeItsGpusReports) {
  Fixture per_gpu({{"v100", 2, 2}}, Share(1.0));
  Fixture whole({{"v100", 2, 2}}, Share(1.0));
  for (Fixture* f : {&per_gpu, &whole}) f->Add("A", 2, 1e4, 0.0);
  const RoundPlan a = per_gpu.Plan(0.0);
  const RoundPlan b = whole.Plan(0.0);
  ASSERT_EQ(a.assignments.size(), 1u);
  per_gpu.Finish(a, 300.0);
  MicroTaskResult result;
  result.combination = b.assignments.at(0).combination;
  result.steps = {b.assignments[0].max_steps[0]};
  result.elapsed = {Seconds(300.0)};
  result.finished_at = Seconds(300.0);
  auto outcome = whole.scheduler->OnMicroTaskDone(result);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->succeeded);
  EXPECT_EQ(whole.scheduler->record(JobId(0)).steps_run,
            per_gpu.scheduler->record(JobId(0)).steps_run);
  EXPECT_EQ(whole.scheduler->gpu_seconds(JobId(0), 0), per_gpu.scheduler->gpu_seconds(JobId(0), 0));
  EXPECT_EQ(whole.scheduler->worker_busy_seconds(), per_gpu.scheduler->worker_busy_seconds());
  EXPECT_EQ(whole.scheduler->AccountingOf(JobId(0))->time_received,
            per_gpu.scheduler->AccountingOf(JobId(0))->time_received);
  EXPECT_EQ(whole.scheduler->OnMicroTaskDone(result).status().code(),
            StatusCode::kFailedPrecondition);  // no longer running
}

// A micro-task carried over a round boundary (its report late) books its time at once and
// its steps with BookLateSteps: the same records as one booked whole; late steps that reach
// the total complete the job, or, while a later micro-task of it runs, leave it active until
// that one is booked or the job is removed.
TEST(RoundSchedulerCallerIdsTest, ACarriedMicroTaskBooksItsTimeNowAndItsStepsLate) {
  Fixture done({{"v100", 1, 1}}, Share(1.0));
  Fixture carried({{"v100", 1, 1}}, Share(1.0));
  for (Fixture* f : {&done, &carried}) f->Add("A", 1, 1e4, 0.0);
  const RoundPlan a = done.Plan(0.0);
  const RoundPlan b = carried.Plan(0.0);
  ASSERT_EQ(b.assignments.size(), 1u);
  MicroTaskResult result;
  result.combination = b.assignments.at(0).combination;
  result.steps = {4000.0};
  result.elapsed = {Seconds(300.0)};
  result.finished_at = Seconds(300.0);
  ASSERT_TRUE(done.scheduler->OnMicroTaskDone(result).ok());
  result.steps = {0.0};
  auto outcome = carried.scheduler->OnMicroTaskCarried(result);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->succeeded) << "no steps yet is not a failure";
  EXPECT_EQ(carried.scheduler->AccountingOf(JobId(0))->time_received,
            done.scheduler->AccountingOf(JobId(0))->time_received);
  EXPECT_EQ(carried.scheduler->worker_busy_seconds(), done.scheduler->worker_busy_seconds());
  EXPECT_DOUBLE_EQ(carried.scheduler->record(JobId(0)).steps_run, 0.0);
  auto late = carried.scheduler->BookLateSteps(JobId(0), 4000.0, Seconds(301.0));
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(*late);
  EXPECT_EQ(carried.scheduler->record(JobId(0)).steps_run, done.scheduler->record(JobId(0)).steps_run);
  EXPECT_EQ(carried.scheduler->gpu_seconds(JobId(0), 0), done.scheduler->gpu_seconds(JobId(0), 0));

  // The rest arrives late while the next micro-task runs: the job stays until it is removed.
  const RoundPlan next = carried.Plan(300.0);
  ASSERT_EQ(next.assignments.size(), 1u);
  result.combination = next.assignments[0].combination;
  ASSERT_TRUE(carried.scheduler->OnMicroTaskCarried(result).ok());
  const RoundPlan third = carried.Plan(600.0);
  ASSERT_EQ(third.assignments.size(), 1u);
  late = carried.scheduler->BookLateSteps(JobId(0), 6000.0, Seconds(601.0));
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(*late);
  EXPECT_TRUE(carried.scheduler->IsActive(JobId(0))) << "its micro-task still runs";
  ASSERT_TRUE(carried.scheduler->RemoveJob(JobId(0)).ok());
  EXPECT_FALSE(carried.scheduler->HasRunningMicroTasks());

  // With nothing of it running, late steps that reach the total complete the job at once.
  Fixture alone({{"v100", 1, 1}}, Share(1.0));
  alone.Add("A", 1, 1e4, 0.0);
  const RoundPlan only = alone.Plan(0.0);
  result.combination = only.assignments.at(0).combination;
  ASSERT_TRUE(alone.scheduler->OnMicroTaskCarried(result).ok());
  late = alone.scheduler->BookLateSteps(JobId(0), 1e4, Seconds(301.0));
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(*late);
  EXPECT_FALSE(alone.scheduler->IsActive(JobId(0)));
  EXPECT_EQ(alone.scheduler->BookLateSteps(JobId(0), 1.0, Seconds(302.0)).status().code(),
            StatusCode::kNotFound);
  (void)a;
}

// Without a drop rule the mechanism never drops a job, however often it fails; a job can be
// admitted held, and the hold ends at its time.
TEST(RoundSchedulerCallerIdsTest, WithoutADropRuleFailuresOnlyCountAndHoldsEndAtTheirTime) {
  SchedulerOptions options;
  options.max_failed_attempts = std::nullopt;
  Fixture f({{"v100", 1, 1}}, Share(1.0), {}, {}, options);
  JobDescription d = Describe("A", 1, 1e6);
  d.held_until = Seconds(720.0);
  ASSERT_TRUE(f.scheduler->AddJob(JobId(3), d).ok());
  EXPECT_TRUE(f.scheduler->IsHeld(JobId(3)));
  EXPECT_TRUE(f.Plan(0.0).assignments.empty());
  EXPECT_TRUE(f.Plan(360.0).assignments.empty());
  double t = 720.0;
  for (int i = 0; i < 8; ++i, t += 360.0) {
    const RoundPlan plan = f.Plan(t);
    ASSERT_EQ(plan.assignments.size(), 1u);
    auto outcome = f.scheduler->OnMicroTaskFailed(plan.assignments[0].combination, Seconds(t));
    ASSERT_TRUE(outcome.ok());
    EXPECT_TRUE(outcome->dropped.empty());
  }
  EXPECT_TRUE(f.scheduler->IsActive(JobId(3)));
  EXPECT_EQ(f.scheduler->stats().failed_micro_tasks, 8);
}

// Jobs' entities reach the policy sorted, with the caller's weights (1 where none is given).
TEST(RoundSchedulerCallerIdsTest, EntitiesAndTheirWeightsReachThePolicy) {
  SchedulerOptions options;
  options.entity_weights = {{"lab", 3.0}};
  Fixture f({{"v100", 1, 1}}, Share(0.1), {}, {}, options);
  const std::vector<std::string> entities = {"lab", "", "alice", "lab"};
  for (std::size_t i = 0; i < entities.size(); ++i) {
    JobDescription d = Describe("A", 1, 1e6);
    d.entity = entities[i];
    ASSERT_TRUE(f.scheduler->AddJob(JobId(i), d).ok());
  }
  const policy::PolicyInput input = f.scheduler->PolicyInputAt(Seconds(0.0));
  EXPECT_THAT(input.entities, ElementsAre("alice", "lab"));
  EXPECT_THAT(input.entity_weights, ElementsAre(1.0, 3.0));
  ASSERT_EQ(input.jobs.size(), 4u);
  EXPECT_EQ(input.jobs[0].entity, 1);
  EXPECT_EQ(input.jobs[1].entity, -1);
  EXPECT_EQ(input.jobs[2].entity, 0);
  EXPECT_EQ(input.jobs[3].entity, 1);
  const JobId leaving[] = {JobId(2)};
  EXPECT_THAT(f.scheduler->PolicyInputAt(Seconds(0.0), leaving).entities, ElementsAre("lab"));

  options.entity_weights = {{"lab", -1.0}};
  auto layout = ClusterLayout::Create({{"v100", 1, 1}});
  ManualClock clock;
  int calls = 0;
  auto refused = RoundScheduler::CreateWithPolicy(*layout, SmallTable(), options, &clock,
                                                  std::make_unique<FakePolicy>(Share(1.0), &calls),
                                                  PolicyTraits{});
  EXPECT_THAT(refused.status().message(), HasSubstr("weight of \"lab\""));
}


// ---- Elastic jobs (core/elastic.h) and admission (PolicyOutput::workers, ::rejected) ----

// Every job gets all of the first type; elastic ones at `workers(job)` workers.
FakePolicy::Rule ResizeTo(std::function<int(const policy::PolicyJob&)> workers) {
  return [workers](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    out.workers.resize(in.num_jobs());
    for (std::size_t i = 0; i < in.num_jobs(); ++i) {
      out.allocation(i, 0) = 1.0;
      out.workers[i] = in.jobs[i].elastic() ? workers(in.jobs[i]) : in.jobs[i].scale_factor;
    }
  };
}

JobId AddElastic(Fixture& f, int min, int max, std::vector<ScalingPoint> curve) {
  JobDescription d;
  d.type = JobTypeKey{"A", 1};
  d.total_steps = 1e7;
  d.elastic = ElasticSpec{min, max, std::move(curve)};
  const JobId id(f.scheduler->num_jobs());
  const Status added = f.scheduler->AddJob(id, d);
  GAVEL_CHECK_MSG(added.ok(), added.ToString().c_str());
  return id;
}

TEST(RoundSchedulerElasticTest, RunsAtThePolicysCountWithItsCurvesThroughput) {
  // Own curve 1:1;2:1.8;4:3 scales A's 2.0 steps/s at 1 worker: k workers run at 2·S(k).
  std::vector<policy::PolicyJob> seen;
  Fixture f({{"v100", 4, 4}}, [&](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    seen = in.jobs;
    ResizeTo([](const policy::PolicyJob& j) { return j.max_workers; })(in, out);
  });
  const JobId job = AddElastic(f, 1, 4, {{1, 1.0}, {2, 1.8}, {4, 3.0}});
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].min_workers, 1);
  EXPECT_EQ(seen[0].max_workers, 4);
  const double expected[] = {2.0, 3.6, 4.8, 6.0};
  for (int k = 1; k <= 4; ++k) EXPECT_DOUBLE_EQ(seen[0].ElasticThroughput(k, 0), expected[k - 1]);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].workers.size(), 4u);
  EXPECT_DOUBLE_EQ(plan.assignments[0].expected_throughput[0], 6.0);
  f.Finish(plan, 360.0);
  EXPECT_EQ(f.scheduler->record(job).steps_run, std::trunc(6.0 * 360.0));
  EXPECT_DOUBLE_EQ(f.scheduler->gpu_seconds(job, 0), 4 * 360.0);
  // A policy that picks 2 workers: that count's throughput.
  Fixture g({{"v100", 4, 4}}, ResizeTo([](const policy::PolicyJob&) { return 2; }));
  AddElastic(g, 1, 4, {{1, 1.0}, {2, 1.8}, {4, 3.0}});
  plan = g.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].workers.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.assignments[0].expected_throughput[0], 3.6);
}

TEST(RoundSchedulerElasticTest, WithoutACurveTheTablesOtherScaleFactorsAreThePoints) {
  // The table has A at 1 (2.0) and 2 (3.0) GPUs on v100: 2 workers run at 3.0, 3 and 4 gain
  // nothing past the last point.
  int workers = 2;
  Fixture f({{"v100", 4, 4}}, ResizeTo([&](const policy::PolicyJob&) { return workers; }));
  AddElastic(f, 1, 4, {});
  RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].workers.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.assignments[0].expected_throughput[0], 3.0);
  f.Finish(plan, 360.0);
  workers = 3;
  f.scheduler->RequestReallocation();
  plan = f.Plan(360.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].workers.size(), 3u);
  EXPECT_DOUBLE_EQ(plan.assignments[0].expected_throughput[0], 3.0);
  EXPECT_FALSE(plan.assignments[0].lease_extended);
}

TEST(RoundSchedulerElasticTest, PoliciesThatDoNotResizeRunTheDeclaredCount) {
  Fixture f({{"v100", 4, 4}}, Share(1.0));
  AddElastic(f, 1, 4, {{1, 1.0}, {4, 3.0}});
  const RoundPlan plan = f.Plan(0.0);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].workers.size(), 1u);
  EXPECT_DOUBLE_EQ(plan.assignments[0].expected_throughput[0], 2.0);
}

TEST(RoundSchedulerElasticTest, BadRangesAndCountsAreErrors) {
  Fixture f({{"v100", 4, 4}}, ResizeTo([](const policy::PolicyJob&) { return 5; }));
  JobDescription d;
  d.type = JobTypeKey{"A", 1};
  d.total_steps = 10.0;
  d.elastic = ElasticSpec{2, 4, {}};  // min above the declared 1
  EXPECT_THAT(f.scheduler->AddJob(JobId(0), d).ToString(), HasSubstr("min_workers"));
  AddElastic(f, 1, 4, {});
  auto plan = f.scheduler->PlanRound();
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().ToString(), HasSubstr("outside [1, 4]"));
}

TEST(RoundSchedulerElasticTest, ElasticJobsAreNeverPaired) {
  std::size_t pairs = 99;
  PolicyTraits traits;
  traits.packing = true;
  Fixture f({{"v100", 2, 1}},
            [&](const policy::PolicyInput& in, policy::PolicyOutput&) { pairs = in.pairs.size(); },
            {}, traits);
  f.Add("A", 1, 100.0, 0.0);
  f.Add("B", 1, 100.0, 0.0);
  AddElastic(f, 1, 2, {});
  f.Plan(0.0);
  EXPECT_EQ(pairs, 1u);  // A with B only
}

TEST(RoundSchedulerAdmissionTest, RejectedJobsLeaveForGoodAndThePlanSaysSo) {
  Fixture f({{"v100", 2, 1}}, [](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    out.rejected.assign(in.num_jobs(), 0);
    for (std::size_t i = 0; i < in.num_jobs(); ++i) {
      out.allocation(i, 0) = 1.0;
      if (in.jobs[i].id == JobId(1)) out.rejected[i] = 1;
    }
  });
  const JobId kept = f.Add("A", 1, 100.0, 0.0);
  const JobId refused = f.Add("B", 1, 100.0, 0.0);
  const RoundPlan plan = f.Plan(0.0);
  EXPECT_THAT(plan.rejected, ElementsAre(refused));
  EXPECT_THAT(RunningJobs(plan), ElementsAre(kept));
  EXPECT_FALSE(f.scheduler->IsActive(refused));
  EXPECT_TRUE(f.scheduler->record(refused).rejected);
  EXPECT_TRUE(f.scheduler->record(refused).done());
  EXPECT_FALSE(f.scheduler->record(refused).jct().has_value());
}


// ---- The incremental scans against the plain ones (SchedulerOptions::exhaustive_scans) ----

// A random allocation that is a function of the input alone (so two schedulers in the same
// state get the same one): some jobs and some pairs get a share, many get none.
FakePolicy::Rule RandomShares() {
  return [](const policy::PolicyInput& in, policy::PolicyOutput& out) {
    std::uint64_t seed = static_cast<std::uint64_t>(in.now_seconds) * 31 + in.num_jobs();
    for (const policy::PolicyJob& job : in.jobs) seed = seed * 1000003 + job.id.value();
    PyRandom rng(seed);
    for (std::size_t i = 0; i < in.num_jobs(); ++i) {
      const bool none = rng.Random() < 0.3;
      for (std::size_t j = 0; j < in.num_types(); ++j) {
        out.allocation(i, j) = none ? 0.0 : 0.5 * rng.Random();
      }
    }
    for (std::size_t p = 0; p < in.pairs.size(); ++p) {
      if (rng.Random() >= 0.05) continue;
      for (std::size_t j = 0; j < in.num_types(); ++j) out.pair_allocation(p, j) = 0.3 * rng.Random();
    }
  };
}

// Drives two schedulers, one with each kind of scan, through the same random events (jobs of
// both sizes arriving, micro-tasks failing, jobs held, removed, GPUs joining and leaving) and
// requires the same plans and the same time accounting after every round.
// `lag_bound`: the bounded lag's K (jobs then restart in 10 s: bounds of K × 10 s).
void ExpectScansAgree(PolicyTraits traits, Compat compat, std::uint64_t seed,
                      double lag_bound = 0.0) {
  SchedulerOptions fast_options;
  fast_options.realisation.lag_bound_restarts = lag_bound;
  const double restart = lag_bound > 0.0 ? 10.0 : 0.0;
  fast_options.round_length = Seconds(360.0);
  fast_options.min_reset_interval = Seconds(1000.0);  // a reset every third round
  SchedulerOptions plain_options = fast_options;
  plain_options.exhaustive_scans = true;
  const std::vector<GpuTypeSpec> cluster = {{"v100", 4, 2}, {"k80", 3, 1}};
  Fixture fast(cluster, RandomShares(), compat, traits, fast_options);
  Fixture plain(cluster, RandomShares(), compat, traits, plain_options);
  PyRandom rng(seed);
  std::vector<JobId> added;
  bool with_k80 = true;
  double now = 0.0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", round " + std::to_string(round));
    const int arrivals = static_cast<int>(rng.RandBelow(round < 20 ? 4 : 2));
    for (int k = 0; k < arrivals; ++k) {
      const std::string model = rng.Random() < 0.5 ? "A" : "B";
      const int sf = model == "A" && rng.Random() < 0.2 ? 2 : 1;
      const double steps = 200.0 + 2000.0 * rng.Random();
      added.push_back(fast.Add(model, sf, steps, now, restart));
      ASSERT_EQ(plain.Add(model, sf, steps, now, restart), added.back());
    }
    // Now and then: a hold, a removal, GPUs joining or leaving (between rounds).
    const double event = rng.Random();
    if (!added.empty() && event < 0.3) {
      const JobId job = added[rng.ChoiceIndex(added.size())];
      if (fast.scheduler->IsActive(job)) {
        if (event < 0.15) {
          ASSERT_TRUE(fast.scheduler->HoldJob(job, Seconds(now + 700.0)).ok());
          ASSERT_TRUE(plain.scheduler->HoldJob(job, Seconds(now + 700.0)).ok());
        } else {
          ASSERT_TRUE(fast.scheduler->RemoveJob(job).ok());
          ASSERT_TRUE(plain.scheduler->RemoveJob(job).ok());
        }
      }
    } else if (event > 0.88) {
      // The k80s leave or come back: a type new to the cluster starts every combination as
      // after a reset. Ids: k80 0-2 then v100 3-6 with the k80s, v100 0-3 without.
      with_k80 = !with_k80;
      std::vector<GpuTypeSpec> next = {{"v100", 4, 2}};
      if (with_k80) next.push_back({"k80", 3, 1});
      auto layout = ClusterLayout::Create(next);
      ASSERT_TRUE(layout.ok());
      std::vector<std::optional<WorkerId>> successor;
      for (std::uint64_t w = 0; w < (with_k80 ? 4u : 7u); ++w) {
        if (with_k80) successor.emplace_back(WorkerId(w + 3));
        else successor.emplace_back(w < 3 ? std::nullopt : std::optional(WorkerId(w - 3)));
      }
      ASSERT_TRUE(fast.scheduler->ChangeCluster(*layout, successor).ok());
      ASSERT_TRUE(plain.scheduler->ChangeCluster(*layout, successor).ok());
    }
    const RoundPlan a = fast.Plan(now);
    const RoundPlan b = plain.Plan(now);
    ASSERT_EQ(a.assignments.size(), b.assignments.size());
    for (std::size_t k = 0; k < a.assignments.size(); ++k) {
      const Assignment& x = a.assignments[k];
      const Assignment& y = b.assignments[k];
      ASSERT_EQ(x.combination, y.combination) << "assignment " << k;
      EXPECT_EQ(x.gpu_type, y.gpu_type);
      EXPECT_EQ(x.workers, y.workers);
      EXPECT_EQ(x.max_steps, y.max_steps);
      EXPECT_EQ(x.lease_extended, y.lease_extended);
    }
    // Every micro-task ends: most run the whole round, some fail (zero steps).
    for (const Assignment& x : a.assignments) {
      MicroTaskResult result;
      result.combination = x.combination;
      const bool failed = rng.Random() < 0.1;
      const double elapsed = 360.0 - 60.0 * rng.Random();
      for (double steps : x.max_steps) {
        result.steps.push_back(failed ? 0.0 : steps);
        result.elapsed.push_back(Seconds(elapsed));
      }
      result.finished_at = Seconds(now + elapsed);
      auto done_fast = fast.scheduler->OnMicroTaskDone(result);
      auto done_plain = plain.scheduler->OnMicroTaskDone(result);
      ASSERT_TRUE(done_fast.ok() && done_plain.ok());
      EXPECT_EQ(done_fast->completed, done_plain->completed);
    }
    for (JobId job : added) {
      ASSERT_EQ(fast.scheduler->IsActive(job), plain.scheduler->IsActive(job));
      if (!fast.scheduler->IsActive(job)) continue;
      const JobAccounting x = *fast.scheduler->AccountingOf(job);
      const JobAccounting y = *plain.scheduler->AccountingOf(job);
      EXPECT_EQ(x.time_received, y.time_received) << "job " << job.ToString();
      EXPECT_EQ(x.deficit, y.deficit) << "job " << job.ToString();
      EXPECT_EQ(x.priority, y.priority) << "job " << job.ToString();
      EXPECT_EQ(fast.scheduler->AllocationOf(job), plain.scheduler->AllocationOf(job));
    }
    EXPECT_EQ(fast.scheduler->type_time(), plain.scheduler->type_time());
    if (::testing::Test::HasFailure()) return;
    now += 360.0;
  }
  // The runs must have exercised the queues: pairs ran, and jobs finished.
  EXPECT_GT(fast.scheduler->stats().micro_tasks, 100);
}

TEST(RoundSchedulerScansTest, IncrementalScansMatchThePlainOnes) {
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    // Priority-0 combinations run (max_min_fairness_packed, gandiva) or are skipped
    // (gandiva_introspective); every round a new allocation or only after changes.
    ExpectScansAgree(PolicyTraits{.packing = true}, Compat{}, seed);
    ExpectScansAgree(PolicyTraits{.packing = true, .skips_zero_priority = true,
                                  .reallocates_every_round = true},
                     Compat{}, seed);
    ExpectScansAgree(PolicyTraits{.packing = true}, Compat::Gavel(), seed);
    ExpectScansAgree(PolicyTraits{.shuffles_gpu_type_order = true}, Compat{}, seed);
    // Without pairs every live combination is tracked (the untracked cursor is skipped).
    ExpectScansAgree(PolicyTraits{}, Compat{}, seed);
    ExpectScansAgree(PolicyTraits{.skips_zero_priority = true}, Compat{}, seed);
    // The bounded lag's classes (bounds of 1-3 rounds' worth), with and without pairs, and
    // its deferred moves under a shuffled type order.
    ExpectScansAgree(PolicyTraits{.packing = true}, Compat{}, seed, 60.0);
    ExpectScansAgree(PolicyTraits{}, Compat{}, seed, 100.0);
    ExpectScansAgree(PolicyTraits{.shuffles_gpu_type_order = true}, Compat{}, seed, 100.0);
  }
}

// ---- Bounded lag ------------------------------------------------------------------------

// One v100 and two jobs with half of it each, restarts of 36 s and K = 50: B = 1,800 s. At
// each plan the round's entitlement (180 s) is added to both lags; the one that runs loses
// 360 s. By hand: A runs first (tie, creation order) and keeps the GPU while B's lag is
// 180 (k + 1) <= B, so for rounds 0-9; B takes it at round 10 (lag 1,980 > B), when A's lag
// is 180 - 1,800 = -1,620, which passes B after 20 more rounds (at round 30: 1,980); and so
// on, 20 rounds a turn. Without the bound they alternate every round.
TEST(RoundSchedulerLagTest, TwoHalfSharesTakeTurnsOfTheBoundsLength) {
  SchedulerOptions options;
  options.realisation.lag_bound_restarts = 50.0;
  Fixture f({{"v100", 1, 1}}, Share(0.5), Compat{}, PolicyTraits{}, options);
  const JobId a = f.Add("A", 1, 1e7, 0.0, 36.0);
  const JobId b = f.Add("B", 1, 1e7, 0.0, 36.0);
  std::vector<JobId> ran;
  for (int round = 0; round < 60; ++round) {
    const RoundPlan plan = f.Plan(360.0 * round);
    ASSERT_EQ(plan.assignments.size(), 1u);
    ran.push_back(plan.assignments[0].combination.member(0));
    f.Finish(plan, 360.0);
  }
  std::vector<JobId> expected;
  for (int round = 0; round < 60; ++round) {
    expected.push_back(round < 10 || (round >= 30 && round < 50) ? a : b);
  }
  EXPECT_EQ(ran, expected);
  // The records' entitled and received seconds: 60 rounds of half of 360 s each; A ran 30
  // rounds, B 30.
  for (JobId job : {a, b}) {
    const JobRecord& r = f.scheduler->record(job);
    EXPECT_DOUBLE_EQ(r.entitled_seconds, 60 * 180.0);
    EXPECT_DOUBLE_EQ(r.received_seconds, 30 * 360.0);
  }
}

// Three jobs with 2/3 of two v100s each, restarts of 30 s, K = 40: B = 1,200 s. The test
// keeps its own books from the plans (entitled 240 s a round each, 360 s received a round
// run) and checks at every plan that no job is owed more than B plus the round's 240 s, and
// that every job owed more than B runs. With the bound, starts are far fewer than without.
TEST(RoundSchedulerLagTest, ThreeJobsOnTwoGpusNeverLagBeyondTheBound) {
  const auto starts_with = [](double lag_bound, double* worst_lag) {
    SchedulerOptions options;
    options.realisation.lag_bound_restarts = lag_bound;
    Fixture f({{"v100", 2, 2}}, Share(2.0 / 3.0), Compat{}, PolicyTraits{}, options);
    std::vector<JobId> jobs;
    for (const char* model : {"A", "B", "A"}) jobs.push_back(f.Add(model, 1, 1e7, 0.0, 30.0));
    std::vector<double> lag(3, 0.0);
    std::vector<bool> ran_last(3, false);
    int starts = 0;
    *worst_lag = 0.0;
    for (int round = 0; round < 120; ++round) {
      const RoundPlan plan = f.Plan(360.0 * round);
      const std::vector<JobId> running = RunningJobs(plan);
      EXPECT_EQ(running.size(), 2u) << "round " << round;
      for (std::size_t i = 0; i < 3; ++i) {
        lag[i] += 240.0;
        *worst_lag = std::max(*worst_lag, lag[i]);
        const bool runs = std::find(running.begin(), running.end(), jobs[i]) != running.end();
        if (lag_bound > 0.0 && lag[i] > lag_bound * 30.0) {
          EXPECT_TRUE(runs) << "round " << round << ": job " << i << " owed " << lag[i];
        }
        if (runs) {
          lag[i] -= 360.0;
          if (!ran_last[i]) ++starts;
        }
        ran_last[i] = runs;
      }
      f.Finish(plan, 360.0);
    }
    return starts;
  };
  double worst_bounded = 0.0;
  double worst_plain = 0.0;
  const int bounded = starts_with(40.0, &worst_bounded);
  const int plain = starts_with(0.0, &worst_plain);
  EXPECT_LE(worst_bounded, 1200.0 + 240.0);
  EXPECT_GT(worst_bounded, 1200.0);  // the bound is what lets jobs wait
  EXPECT_LE(worst_plain, 480.0);     // Gavel's queues: at most two rounds behind
  EXPECT_LT(bounded * 4, plain) << bounded << " starts against " << plain;
}

// One GPU of each of two types on which model A runs equally fast, and two jobs with half of
// each type (the allocation a heterogeneity-agnostic policy may return: it is indifferent
// between the types), under a shuffled type order; restarts of 30 s and K = 40: B = 1,200 s.
// Both jobs run every round and each gets exactly its allocation in total, so no move can
// make up anything: after the first round neither may change GPU. Per-type lags alone grow
// by 180 s a round on the type a job does not run on, so without the deferred moves each job
// hopped type as soon as that type's queue came first with its lag above B.
TEST(RoundSchedulerLagTest, JobsGettingTheirWholeShareDoNotHopBetweenEqualTypes) {
  static constexpr char kEqualTypes[] = R"json({
    "v100": {"('A', 1)": {"null": 1.0}},
    "k80": {"('A', 1)": {"null": 1.0}}
  })json";
  const auto table = testing::TableFromJson(kEqualTypes, "equal types");
  const auto moves_with = [&](double lag_bound) {
    SchedulerOptions options;
    options.realisation.lag_bound_restarts = lag_bound;
    Fixture f({{"v100", 1, 1}, {"k80", 1, 1}}, Share(0.5), Compat{},
              PolicyTraits{.shuffles_gpu_type_order = true}, options, table);
    const JobId a = f.Add("A", 1, 1e7, 0.0, 30.0);
    const JobId b = f.Add("A", 1, 1e7, 0.0, 30.0);
    std::map<JobId, WorkerId> last;  // the test's own record of where each job ran
    int moves = 0;
    for (int round = 0; round < 80; ++round) {
      const RoundPlan plan = f.Plan(360.0 * round);
      EXPECT_THAT(RunningJobs(plan), ElementsAre(a, b)) << "round " << round;
      for (const Assignment& x : plan.assignments) {
        const JobId job = x.combination.member(0);
        const auto before = last.find(job);
        if (before != last.end() && before->second != x.workers.at(0)) ++moves;
        last[job] = x.workers.at(0);
      }
      f.Finish(plan, 360.0);
    }
    return moves;
  };
  EXPECT_EQ(moves_with(40.0), 0);
  // Gavel's queues (no bound) swap whenever the shuffle puts the other type first: the
  // scenario does exercise the choice across types.
  EXPECT_GT(moves_with(0.0), 10);
}

// Two jobs each allocated all of one v100 (an allocation the GPU cannot realise, as a gang's
// share of a type it cannot share with others is not), restarts of 30 s, K = 40: B = 1,200 s.
// The one that runs keeps a constant lag, the other's grows by a round each round, so soon
// both are owed for good. Among the owed the incumbent stays until the waiting one is owed B
// more than it (each swap makes up more than B of owed time for one restart): by hand, swaps
// at rounds 3, 10, 18, 26, ... (8 in 60 rounds). Ranked by priority alone among the owed, the
// second job kept the GPU from round 3 on and the first never ran again (1 swap). The test
// keeps its own books from the plans.
TEST(RoundSchedulerLagTest, AnOwedIncumbentStaysUntilAWaitingJobIsOwedTheBoundMore) {
  SchedulerOptions options;
  options.realisation.lag_bound_restarts = 40.0;
  Fixture f({{"v100", 1, 1}}, Share(1.0), Compat{}, PolicyTraits{}, options);
  const JobId jobs[] = {f.Add("A", 1, 1e7, 0.0, 30.0), f.Add("B", 1, 1e7, 0.0, 30.0)};
  double lag[] = {0.0, 0.0};
  int runner = -1;
  int swaps = 0;
  for (int round = 0; round < 60; ++round) {
    const RoundPlan plan = f.Plan(360.0 * round);
    ASSERT_EQ(plan.assignments.size(), 1u);
    const int now = plan.assignments[0].combination.member(0) == jobs[0] ? 0 : 1;
    for (double& l : lag) l += 360.0;  // the entitlement, ahead of the round
    if (runner >= 0 && now != runner) {
      ++swaps;
      EXPECT_GT(lag[now], 1200.0) << "round " << round;
      if (lag[runner] > 1200.0) {
        EXPECT_GT(lag[now] - 1200.0, lag[runner]) << "round " << round;
      }
    }
    lag[now] -= 360.0;
    runner = now;
    f.Finish(plan, 360.0);
  }
  EXPECT_EQ(swaps, 8);
}

// A move down waits for the second pass. One v100 and one k80; model A runs 4x faster on the
// v100; one job allocated 0.7 of each type (more than its time: an allocation that cannot be
// realised, as under load for a job whose agnostic share is spread over every type), shuffled
// type order, restarts of 30 s, K = 40: B = 1,200 s. By hand: each round its lags grow by
// 252 s on the type it does not run on and fall by 108 s where it runs, so from round 5 it is
// owed on the k80 and from round 9 behind as a whole (Σ lag > B). Alone, it is never
// outranked on the v100, so it must stay there. Before, whenever the shuffle visited the k80
// first it moved down (a restart, to run 4x slower) and the next round up again (a move to a
// faster type is made at once): 2 restarts every few rounds.
TEST(RoundSchedulerLagTest, AJobMovesToASlowerTypeOnlyWhenOutrankedWhereItRan) {
  static constexpr char kFastAndSlow[] = R"json({
    "v100": {"('A', 1)": {"null": 4.0}},
    "k80": {"('A', 1)": {"null": 1.0}}
  })json";
  const auto table = testing::TableFromJson(kFastAndSlow, "fast and slow");
  SchedulerOptions options;
  options.realisation.lag_bound_restarts = 40.0;
  Fixture f({{"v100", 1, 1}, {"k80", 1, 1}}, Share(0.7), Compat{},
            PolicyTraits{.shuffles_gpu_type_order = true}, options, table);
  const JobId job = f.Add("A", 1, 1e9, 0.0, 30.0);
  int on_k80 = 0;
  for (int round = 0; round < 80; ++round) {
    const RoundPlan plan = f.Plan(360.0 * round);
    ASSERT_EQ(plan.assignments.size(), 1u) << "round " << round;
    EXPECT_EQ(plan.assignments[0].combination.member(0), job);
    if (plan.assignments[0].gpu_type != testing::kV100) ++on_k80;  // types by name: k80, v100
    f.Finish(plan, 360.0);
  }
  // The first round may start it on either type (the shuffle visits the k80 first half the
  // time, and nothing is owed yet); after that, never on the k80.
  EXPECT_LE(on_k80, 1);
}

}  // namespace
}  // namespace gavel::mechanism
