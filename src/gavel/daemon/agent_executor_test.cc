// AgentExecutor on the real parts (JobBook, AgentRegistry, MechanismSeam) and a fake transport:
// what reaches the agents is exactly the RoundScheduler's plan, translated to the daemon's
// worker ids, with the documented lease; the open round and the store see the same tasks.
#include "gavel/daemon/agent_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "gavel/core/clock.h"
#include "gavel/core/shipped_table.h"
#include "gavel/daemon/fake_transport.h"
#include "gavel/policy/registry.h"

namespace gavel::daemon {
namespace {

const rpc::Principal kAdmin{"ops", true, false};
constexpr std::int64_t kRoundMs = 10'000;

class AgentExecutorTest : public ::testing::Test {
 protected:
  AgentExecutorTest()
      : jobs_(&journal_, ShippedThroughputTable()),
        agents_(&journal_, AgentRules{ShippedThroughputTable().get(), nullptr, "p"}) {
    options_.throughputs = ShippedThroughputTable();
    options_.round_length = Seconds(kRoundMs / 1000.0);
    options_.checkpoint_root = "/shared/ckpt";
    auto policy = options_.policy.Make(options_.seed);
    EXPECT_TRUE(policy.ok());
    auto allocation = std::make_shared<AllocationService>(*std::move(policy), false, nullptr);
    seam_ = std::make_unique<MechanismSeam>(&options_, &jobs_, &agents_, &journal_, allocation,
                                            &clock_, clock_.NowMs());
    executor_ = std::make_unique<AgentExecutor>(
        &options_, AgentExecutorParts{&jobs_, &agents_, seam_.get(), &transport_, &journal_,
                                     &round_,
                                     [this](const std::string& agent, std::uint64_t round) {
                                       failed_.emplace_back(agent, round);
                                     }});
  }
  void Register(const std::string& id, const std::string& type, std::uint32_t gpus) {
    wire::RegisterWorkerRequest r;
    r.set_agent_id(id);
    r.set_gpu_type(type);
    r.set_num_gpus(gpus);
    r.set_address("10.0.0." + std::to_string(agents_.agents().size() + 1) + ":4000");
    bool changed = false;
    ASSERT_TRUE(agents_.Register(kAdmin, r, clock_.NowMs(), &changed).ok());
  }
  std::uint64_t Submit(std::uint32_t scale_factor,
                       const std::string& job_type = "ResNet-18 (batch size 64)") {
    wire::JobSpec spec;
    spec.add_command("python3");
    spec.add_command("train.py");
    spec.set_total_steps(1000);
    spec.set_scale_factor(scale_factor);
    spec.set_job_type(job_type);
    EXPECT_TRUE(jobs_.Validate(spec).ok());
    Job& job = jobs_.Add(kAdmin, spec, clock_.NowMs(), agents_.LiveGpuTypes());
    seam_->Admit(job);
    return job.row.id;
  }
  // Plans a round now and executes it; returns the plan.
  mechanism::RoundPlan PlanAndExecute(std::uint64_t round_id,
                                      const std::function<void(const mechanism::RoundPlan&)>&
                                          before_execute = {}) {
    std::optional<mechanism::RoundPlan> plan = seam_->PlanRound(clock_.NowMs());
    EXPECT_TRUE(plan.has_value());
    if (!plan) return {};
    round_.emplace(round_id, clock_.NowMs(), kRoundMs, 2'000, &journal_);
    if (before_execute) before_execute(*plan);
    EXPECT_TRUE(executor_->Execute(*plan).ok());
    return *plan;
  }

  // Two identical single-GPU jobs share one v100 (half each) for `rounds` rounds of the
  // bounded lag with K = 20; every micro-task runs its whole round and is credited as the
  // core credits it (JobBook, then the mechanism, then the estimates), with `startup_s` as
  // its measured start-up when it was launched afresh. Returns who ran, round by round, as
  // indices in submission order.
  std::vector<int> RunnersWithStartUp(double startup_s, int rounds,
                                     const std::string& second_type = "ResNet-18 (batch size 64)") {
    options_.lag_bound_restarts = 20.0;
    Register("a", "v100", 1);
    const std::uint64_t submitted[] = {Submit(1), Submit(1, second_type)};
    std::vector<int> ran;
    for (int round = 0; round < rounds; ++round) {
      std::optional<mechanism::RoundPlan> plan = seam_->PlanRound(clock_.NowMs());
      EXPECT_TRUE(plan.has_value() && plan->assignments.size() == 1u) << "round " << round;
      if (!plan || plan->assignments.size() != 1u) return ran;
      const mechanism::Assignment& a = plan->assignments[0];
      const std::uint64_t id = a.combination.member(0).value();
      ran.push_back(id == submitted[0] ? 0 : 1);
      Job& job = jobs_.at(id);
      RoundTask task;
      task.worker_id = seam_->WorkersOf(a).at(0);
      MicroTaskSummary m;
      m.gpu_type = "v100";
      m.workers = seam_->WorkersOf(a);
      m.first = &task;
      m.checkpointed = job.row.steps_done + 10;
      m.elapsed_s = kRoundMs / 1000.0;
      m.steps_trained = 10;
      m.training_s = m.elapsed_s - 1.0;
      m.startup_s = a.lease_extended ? 0.0 : startup_s;
      m.expired = true;
      clock_.AdvanceMs(kRoundMs);
      const Credited credited = jobs_.CreditMicroTask(job, m, clock_.NowMs(), false);
      seam_->ReportMicroTask(id, credited.steps, m.elapsed_s, clock_.NowMs());
      seam_->TakeEstimates(job, MechanismSeam::Learned::kOwn);
    }
    return ran;
  }

  ManualClock clock_{Seconds(1'700'000'000.0)};
  CoreOptions options_;
  Journal journal_;
  JobBook jobs_;
  AgentRegistry agents_;
  std::unique_ptr<MechanismSeam> seam_;
  FakeAgentTransport transport_;
  std::optional<OpenRound> round_;
  std::vector<std::pair<std::string, std::uint64_t>> failed_;
  std::unique_ptr<AgentExecutor> executor_;
};

TEST_F(AgentExecutorTest, EveryAssignmentReachesTheAgentsOfItsWorkersWithTheRoundsLease) {
  Register("a", "v100", 2);
  Register("b", "k80", 2);
  Register("idle", "p100", 1);
  const std::uint64_t single = Submit(1);
  const std::uint64_t pair = Submit(2);
  const mechanism::RoundPlan plan = PlanAndExecute(4);
  ASSERT_FALSE(plan.assignments.empty());

  // What the plan says, in the daemon's ids: job -> (GPU type, workers by rank).
  std::map<std::uint64_t, std::pair<std::string, std::vector<std::uint64_t>>> expected;
  for (const mechanism::Assignment& a : plan.assignments) {
    expected[a.combination.member(0).value()] = {seam_->GpuTypeName(a.gpu_type),
                                                 seam_->WorkersOf(a)};
  }
  // What the agents got.
  std::map<std::uint64_t, std::pair<std::string, std::vector<std::uint64_t>>> sent;
  for (const std::string agent : {"a", "b", "idle"}) {
    ASSERT_EQ(transport_.RoundsSentTo(agent), 1u) << agent;  // everyone, even with no task
    const wire::StartRoundRequest request = transport_.LastRound(agent);
    EXPECT_EQ(request.round_id(), 4u);
    for (const wire::Task& task : request.tasks()) {
      EXPECT_TRUE(agents_.OwnsWorker(agent, task.worker_id()));
      const wire::JobLaunch& launch = task.job();
      auto& [type, workers] = sent[launch.job_id()];
      type = launch.gpu_type();
      if (workers.size() < launch.world_size()) workers.resize(launch.world_size());
      workers[launch.rank()] = task.worker_id();
      EXPECT_EQ(launch.checkpoint_dir(), "/shared/ckpt/job-" + std::to_string(launch.job_id()));
      EXPECT_EQ(launch.checkpointed_steps(), 0u);
      EXPECT_EQ(launch.attempt(), 0u);
      if (launch.world_size() == 1) {
        // One process: its own clock ends the lease, or the job's total.
        EXPECT_EQ(task.lease().stop_at_step(), 1000u);
        EXPECT_FALSE(task.lease().step_bound_only());
      } else {
        // A gang: one step bound for every rank, a round's worth at the job's estimate.
        const Job& job = jobs_.at(launch.job_id());
        const double estimate = jobs_.Estimate(job, launch.gpu_type());
        EXPECT_EQ(task.lease().stop_at_step(),
                  std::min<std::uint64_t>(
                      1000, std::max<std::uint64_t>(
                                1, static_cast<std::uint64_t>(estimate * kRoundMs / 1000.0))));
        EXPECT_TRUE(task.lease().step_bound_only());
        EXPECT_TRUE(task.restart());  // a first launch: nothing to keep
      }
      EXPECT_EQ(task.lease().max_duration_s(), kRoundMs / 1000.0);
      EXPECT_EQ(task.lease().round_end_unix_ms(), clock_.NowMs() + kRoundMs);
      // torchrun's rendezvous for every job, and its ranks on this agent counted.
      EXPECT_FALSE(launch.master_addr().empty());
      EXPECT_NE(launch.master_port(), 0u);
      int on_agent = 0;
      for (const wire::Task& other : request.tasks()) {
        on_agent += other.job().job_id() == launch.job_id();
      }
      EXPECT_EQ(launch.local_world_size(), static_cast<std::uint32_t>(on_agent));
      EXPECT_LT(launch.local_rank(), launch.local_world_size());
    }
  }
  EXPECT_EQ(sent, expected);
  EXPECT_TRUE(sent.contains(single) || sent.contains(pair));

  // The open round holds the same tasks, and so does the row staged for the store.
  std::size_t tasks = 0;
  for (const auto& [job, placement] : expected) {
    EXPECT_EQ(round_->WorkersOf(job), placement.second);
    EXPECT_EQ(jobs_.at(job).row.state, wire::RUNNING);
    EXPECT_EQ(jobs_.at(job).row.attempts, 1u);
    tasks += placement.second.size();
  }
  EXPECT_EQ(round_->num_tasks(), tasks);
  ASSERT_TRUE(journal_.batch.open_round.has_value());
  EXPECT_EQ(journal_.batch.open_round->tasks.size(), tasks);
  std::size_t starts = 0;
  for (const EventRow& e : journal_.batch.events) starts += e.kind == "start";
  EXPECT_EQ(starts, expected.size());
  EXPECT_TRUE(failed_.empty());
}

TEST_F(AgentExecutorTest, AJobThatCannotStartNowIsSkippedAndUndeliverableRoundsAreReported) {
  Register("a", "v100", 1);
  Register("b", "v100", 1);
  const std::uint64_t first = Submit(1);
  const std::uint64_t second = Submit(1);
  transport_.SetUnreachable("b", true);
  std::uint64_t backing_off = 0;
  const mechanism::RoundPlan plan = PlanAndExecute(0, [&](const mechanism::RoundPlan& p) {
    // Between plan and dispatch the first planned job starts backing off (the safety net for
    // a wall clock that stepped back: the mechanism holds such jobs out of its plans).
    ASSERT_EQ(p.assignments.size(), 2u);
    backing_off = p.assignments[0].combination.member(0).value();
    jobs_.at(backing_off).row.next_retry_ms = clock_.NowMs() + 5'000;
  });
  const std::uint64_t running = backing_off == first ? second : first;
  EXPECT_FALSE(round_->HasJob(backing_off));
  EXPECT_EQ(jobs_.at(backing_off).row.state, wire::QUEUED);
  EXPECT_EQ(jobs_.at(backing_off).row.attempts, 0u);
  EXPECT_TRUE(round_->HasJob(running));
  EXPECT_EQ(jobs_.at(running).row.state, wire::RUNNING);
  EXPECT_EQ(round_->num_tasks(), 1u);
  // Both agents were sent the round; b's could not be delivered, and that came back.
  EXPECT_EQ(transport_.start_rounds(), 2u);
  EXPECT_EQ(failed_, (std::vector<std::pair<std::string, std::uint64_t>>{{"b", 0}}));
}

// A job whose report of the last round is still out (that round closed on time) may still
// run where it ran: planned there again it goes on in place; planned elsewhere it runs nowhere
// this round, so no second process of it starts while the first may still write its
// checkpoint.
TEST_F(AgentExecutorTest, AJobWhoseReportIsOutGoesOnInPlaceOrWaits) {
  Register("a", "v100", 1);
  Register("b", "v100", 1);
  Submit(1);
  Submit(1);
  std::uint64_t kept = 0;
  std::uint64_t moved = 0;
  std::vector<std::uint64_t> kept_workers;
  PlanAndExecute(7, [&](const mechanism::RoundPlan& p) {
    ASSERT_EQ(p.assignments.size(), 2u);
    kept = p.assignments[0].combination.member(0).value();
    moved = p.assignments[1].combination.member(0).value();
    kept_workers = seam_->WorkersOf(p.assignments[0]);
    // `kept` still runs on the GPUs the plan gives it; `moved` on the GPUs given to `kept`.
    for (const std::uint64_t id : {kept, moved}) {
      Job& job = jobs_.at(id);
      job.last_workers = kept_workers;
      job.paused = job.report_outstanding = true;
    }
  });
  ASSERT_TRUE(round_->HasJob(kept));
  EXPECT_EQ(round_->WorkersOf(kept), kept_workers);
  EXPECT_EQ(jobs_.at(kept).row.attempts, 0u) << "it goes on: no new attempt";
  EXPECT_FALSE(round_->HasJob(moved));
  EXPECT_EQ(jobs_.at(moved).row.attempts, 0u);
  EXPECT_EQ(round_->num_tasks(), 1u);
  std::size_t tasks_sent = 0;
  for (const std::string agent : {"a", "b"}) {
    const wire::StartRoundRequest request = transport_.LastRound(agent);
    for (const wire::Task& task : request.tasks()) {
      ++tasks_sent;
      EXPECT_EQ(task.job().job_id(), kept);
      EXPECT_EQ(task.worker_id(), kept_workers.front());
    }
  }
  EXPECT_EQ(tasks_sent, 1u);
}

// With on-time rounds a gang's step bound is the steps that fit in the round after its
// expected start-up (a fresh launch's: its last measured one, 2 s here), a step short, so that
// its ranks report before the boundary as a one-GPU time lease does; waiting rounds give it a
// round's worth (EveryAssignmentReachesTheAgentsOfItsWorkersWithTheRoundsLease). Worked by
// hand from the job's estimate r on a V100: 10-s rounds, ceil(8 r) − 1 steps.
TEST_F(AgentExecutorTest, OnTimeRoundsFitAGangsStepBoundInsideTheRound) {
  options_.rounds_on_time = true;
  Register("a", "v100", 2);
  const std::uint64_t gang = Submit(2, "ResNet-50 (batch size 64)");
  jobs_.at(gang).row.last_startup_s = 2.0;
  PlanAndExecute(1);
  const wire::StartRoundRequest request = transport_.LastRound("a");
  ASSERT_EQ(request.tasks_size(), 2);
  const double r = jobs_.Estimate(jobs_.at(gang), "v100");
  ASSERT_GT(r * 8.0, 1.0);
  const auto expected = static_cast<std::uint64_t>(std::ceil(r * 8.0) - 1.0);
  ASSERT_LT(expected, static_cast<std::uint64_t>(std::floor(r * 10.0)));
  for (const wire::Task& task : request.tasks()) {
    EXPECT_TRUE(task.restart());
    EXPECT_TRUE(task.lease().step_bound_only());
    EXPECT_EQ(task.lease().stop_at_step(), std::min<std::uint64_t>(1000, expected));
  }
}

// The bounded lag under gavel serve, on each job's measured start-up. Each job is entitled to
// 5 s of every 10-s round. Measured at 1 s, B = 20 × 1 s = 20 s, so the waiting job (whose
// cost before its own first start is its job type's measured mean, 1 s) takes the GPU only
// when owed more than 20 s: at round 4, its lag then 5 × 5 = 25 s; the first job keeps the
// GPU (and its process) for rounds 0-3. Unmeasured, restarts are free (B = 0): the waiting
// job is owed as soon as it lags, and the two swap every round, as in Gavel's queues.
TEST_F(AgentExecutorTest, AJobWithAMeasuredStartUpKeepsItsGpuWhereAnUnmeasuredOneIsSwapped) {
  // Ties go to the first job submitted.
  EXPECT_EQ(RunnersWithStartUp(1.0, 8), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

// A job of a type nobody has started yet costs the mean start-up of every type (1 s here), not
// nothing: the same four rounds as above, where a cost of 0 would swap the jobs every round.
TEST_F(AgentExecutorTest, AJobOfAnUnmeasuredTypeCostsTheMeanOfAllTypes) {
  EXPECT_EQ(RunnersWithStartUp(1.0, 8, "ResNet-50 (batch size 64)"),
            (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST_F(AgentExecutorTest, JobsWithoutAMeasuredStartUpSwapEveryRound) {
  EXPECT_EQ(RunnersWithStartUp(0.0, 6), (std::vector<int>{0, 1, 0, 1, 0, 1}));
}

}  // namespace
}  // namespace gavel::daemon
