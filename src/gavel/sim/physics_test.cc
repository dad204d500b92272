// The cluster physics against hand-computed cases and the failure model's own statistics.
#include "gavel/sim/physics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "gavel/core/shipped_table.h"
#include "gavel/sim/sim_test_support.h"
#include "gavel/sim/simulator.h"

namespace gavel::sim {
namespace {

using ::testing::HasSubstr;
using simtest::Job;
using simtest::MustSimulate;
using simtest::V100;

constexpr char kResNet[] = "ResNet-18 (batch size 64)";

SimulationOptions Cluster(int gpus, int per_server, std::vector<workload::TraceJob> trace,
                          const std::string& policy = "max_min_fairness_perf") {
  SimulationOptions o;
  o.cluster = {{"v100", gpus, per_server}};
  o.throughputs = ShippedThroughputTable();
  o.policy = policy;
  o.trace = std::move(trace);
  return o;
}

PlacementPenalty Penalty(double servers, double racks) {
  PlacementPenalty p;
  p.by_family["ResNet-18"] = {servers, racks};
  return p;
}

TEST(PhysicsTablesTest, ParseShippedTablesAndLookUpByFamily) {
  auto penalty = PlacementPenalty::LoadFile(ShippedPlacementPenaltyFile());
  ASSERT_TRUE(penalty.ok()) << penalty.status().ToString();
  EXPECT_DOUBLE_EQ(penalty->Factor("LM (batch size 20)", 2, 1), 0.54);
  EXPECT_DOUBLE_EQ(penalty->Factor("LM (batch size 20)", 2, 2), 0.40);
  EXPECT_DOUBLE_EQ(penalty->Factor("LM (batch size 20)", 1, 1), 1.0);
  EXPECT_DOUBLE_EQ(penalty->Factor("SomethingNew", 3, 1), 0.72);  // the "*" row
  auto restart = RestartOverhead::LoadFile(ShippedRestartOverheadFile());
  ASSERT_TRUE(restart.ok()) << restart.status().ToString();
  EXPECT_EQ(restart->For("ResNet-50 (batch size 64)").value(), 30.0);
  EXPECT_EQ(RestartOverhead::Uniform(7.0).For("A3C").value(), 7.0);
}

TEST(PhysicsTablesTest, BadFilesNameTheLineAndField) {
  auto bad = PlacementPenalty::Parse("family,across_servers,across_racks\nLM,1.5,0.5\n", "p.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("p.csv:2: across_servers"));
  auto header = RestartOverhead::Parse("# c\nmodel,seconds\n", "r.csv");
  EXPECT_THAT(header.status().message(), HasSubstr("r.csv:2: expected the header"));
  auto twice = RestartOverhead::Parse("family,seconds\nLM,1\nLM,2\n", "r.csv");
  EXPECT_THAT(twice.status().message(), HasSubstr("r.csv:3: family \"LM\" listed twice"));
  auto failures = FailureModel::Parse(R"({"user_error_probability": [0.1, 2, 0, 0]})", "f.json");
  EXPECT_THAT(failures.status().message(), HasSubstr("user_error_probability[1]"));
  auto unknown = FailureModel::Parse(R"({"mtbf": 3})", "f.json");
  EXPECT_THAT(unknown.status().message(), HasSubstr("f.json: mtbf: unknown field"));
}

// A 2-GPU job alone, run for `seconds` of isolated work: on one 2-GPU server it takes exactly
// that long; spread over two 1-GPU servers (one rack, or two racks) its throughput is the
// table's factor times the isolated one, so it takes seconds / factor.
TEST(PlacementPenaltyTest, SpreadJobIsSlowedByExactlyTheTablesFactor) {
  const double tput = V100(kResNet, 2);
  const double seconds = 1000.0;
  const std::vector<workload::TraceJob> trace = {Job(kResNet, 2, tput * seconds, 0.0)};

  SimulationOptions together = Cluster(2, 2, trace);
  together.physics.placement_penalty = Penalty(0.5, 0.25);
  const SimulationResult one_server = MustSimulate(together);
  EXPECT_NEAR(one_server.average_jct_seconds, seconds, 1e-6);
  EXPECT_EQ(one_server.physics.placement_slowdown_gpu_seconds, 0.0);

  SimulationOptions spread = Cluster(2, 1, trace);
  spread.physics.placement_penalty = Penalty(0.5, 0.25);
  const SimulationResult two_servers = MustSimulate(spread);
  EXPECT_NEAR(two_servers.average_jct_seconds, seconds / 0.5, 1e-6);
  // It ran 2000 s on 2 GPUs at half speed: half of 4000 GPU-seconds lost.
  EXPECT_NEAR(two_servers.physics.placement_slowdown_gpu_seconds, 2000.0, 1e-6);
  EXPECT_GT(two_servers.physics.spread_micro_tasks, 0);

  spread.physics.host.servers_per_rack = 1;
  const SimulationResult two_racks = MustSimulate(spread);
  EXPECT_NEAR(two_racks.average_jct_seconds, seconds / 0.25, 1e-6);

  // Physics off: the original's idealised cluster, where spreading costs nothing.
  const SimulationResult plain = MustSimulate(Cluster(2, 1, trace));
  EXPECT_NEAR(plain.average_jct_seconds, seconds, 1e-6);
}

// One job alone on one GPU: it pays the overhead once (its start); every later round extends
// its lease. So JCT = work + overhead exactly, and no restart is counted.
TEST(RestartOverheadTest, AlonePaysOnceForItsStart) {
  const double tput = V100(kResNet, 1);
  SimulationOptions o = Cluster(1, 1, {Job(kResNet, 1, tput * 2000.0, 0.0)});
  o.physics.restart_overhead = RestartOverhead::Uniform(45.0);
  const SimulationResult r = MustSimulate(o);
  EXPECT_NEAR(r.average_jct_seconds, 2045.0, 1e-6);
  EXPECT_EQ(r.physics.restarts, 0);
  EXPECT_NEAR(r.physics.restart_overhead_gpu_seconds, 45.0, 1e-9);
}

// Three jobs time-sharing two GPUs under Gavel's queues (the bounded lag off) preempt one
// another every round: restarts happen, and every job's completion time grows with the
// overhead.
TEST(RestartOverheadTest, ChurnRestartsAndJctRisesWithTheOverhead) {
  const double tput = V100(kResNet, 1);
  std::vector<workload::TraceJob> trace;
  for (int i = 0; i < 3; ++i) trace.push_back(Job(kResNet, 1, tput * 3600.0 * (i + 1), 0.0));
  double previous = 0.0;
  for (double overhead : {0.0, 20.0, 60.0, 120.0}) {
    SimulationOptions o = Cluster(2, 1, trace);
    o.physics.restart_overhead = RestartOverhead::Uniform(overhead);
    o.physics.lag_bound_restarts = 0.0;
    const SimulationResult r = MustSimulate(o);
    EXPECT_GT(r.physics.restarts, 0) << overhead;
    EXPECT_GT(r.average_jct_seconds, previous) << overhead;
    // Every restart and first start pays exactly the overhead on one GPU.
    EXPECT_NEAR(r.physics.restart_overhead_gpu_seconds,
                overhead * static_cast<double>(r.physics.restarts + 3), 1e-6);
    previous = r.average_jct_seconds;
  }
}

// The same three jobs with the default bounded lag (200 restarts of 20 s: B = 4,000 s, more
// than the shortest job's hour): no job waits long enough to displace a running one, so
// each runs to completion on the GPU it started on (the third once the first is done), with
// no restart and a lower average JCT than the churn's: (3,600 + 7,200 + 3,600 + 10,800) / 3,
// give or take the starts' 20 s and the third's wait for the next round.
TEST(RestartOverheadTest, TheBoundedLagKeepsJobsOnTheirGpus) {
  const double tput = V100(kResNet, 1);
  std::vector<workload::TraceJob> trace;
  for (int i = 0; i < 3; ++i) trace.push_back(Job(kResNet, 1, tput * 3600.0 * (i + 1), 0.0));
  SimulationOptions o = Cluster(2, 1, trace);
  o.physics.restart_overhead = RestartOverhead::Uniform(20.0);
  const SimulationResult bounded = MustSimulate(o);
  o.physics.lag_bound_restarts = 0.0;
  const SimulationResult churn = MustSimulate(o);
  EXPECT_EQ(bounded.physics.restarts, 0);
  EXPECT_GT(churn.physics.restarts, 10);
  EXPECT_LT(bounded.average_jct_seconds, churn.average_jct_seconds);
  EXPECT_NEAR(bounded.average_jct_seconds, (3600.0 + 7200.0 + 3600.0 + 10800.0) / 3.0, 360.0);
}

// The failure model's draws: over many jobs the fraction with a user error matches the
// documented probability of each size class (a binomial, checked within 5 sigma).
TEST(FailureModelTest, UserErrorFractionMatchesTheModel) {
  const FailureModel m = FailureModel::Philly();
  mechanism::ClusterLayout layout =
      *mechanism::ClusterLayout::Create({GpuTypeSpec{"v100", 8, 8}});
  for (int gpus : {1, 4, 8}) {
    PhysicsOptions options;
    options.failures = m;
    PhysicsModel model(options, &layout, /*seed=*/17);
    const int n = 40000;
    int with_error = 0;
    for (int i = 0; i < n; ++i) {
      model.AdmitJob(JobId(static_cast<std::uint64_t>(i)), kResNet, gpus);
      // A 10-day lease never ends before the user error, so a job with one fails here.
      mechanism::Assignment a;
      a.combination = mechanism::Combination::Single(JobId(static_cast<std::uint64_t>(i)));
      for (int g = 0; g < gpus; ++g) a.workers.push_back(WorkerId(static_cast<std::uint64_t>(g)));
      a.max_steps = {1e9};
      a.expected_throughput = {1e9 / 864000.0};
      a.lease_duration = Seconds(864000.0);
      if (model.Launch(a, Seconds(0.0)).failure == Failure::kUser) ++with_error;
    }
    const double p = m.user_error_probability[static_cast<std::size_t>(SizeClass(gpus))];
    const double sigma = std::sqrt(p * (1.0 - p) / n);
    EXPECT_NEAR(static_cast<double>(with_error) / n, p, 5.0 * sigma) << gpus << " GPUs";
  }
}

// Whole simulations: with infrastructure failures off, the failed fraction of long 1-GPU jobs
// over many seeds lies in the model's band: p(1 GPU) × P(error before the job ends), where
// the jobs last 3 h against a mean 10-minute time to error (P > 0.99999). Failed jobs do not
// count in the JCT, and their GPU time is wasted.
TEST(FailureModelTest, FailedFractionOverSeedsIsInTheDocumentedBand) {
  const double tput = V100(kResNet, 1);
  FailureModel m = FailureModel::Philly();
  m.infra_failures_per_gpu_hour = 0.0;
  int jobs = 0;
  std::size_t failed = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    std::vector<workload::TraceJob> trace;
    for (int i = 0; i < 50; ++i) trace.push_back(Job(kResNet, 1, tput * 3.0 * 3600.0, i * 60.0));
    SimulationOptions o = Cluster(50, 1, trace, "fifo");
    o.seed = seed;
    o.physics.failures = m;
    const SimulationResult r = MustSimulate(o);
    jobs += 50;
    failed += r.failed_jobs;
    EXPECT_EQ(static_cast<std::int64_t>(r.failed_jobs), r.physics.user_errors);
    EXPECT_EQ(r.window_jobs_completed + r.failed_jobs, 50u);
    if (r.failed_jobs > 0) {
      EXPECT_GT(r.physics.wasted_gpu_seconds, 0.0);
    }
  }
  const double p = m.user_error_probability[0];
  const double sigma = std::sqrt(p * (1.0 - p) / jobs);
  EXPECT_NEAR(static_cast<double>(failed) / jobs, p, 5.0 * sigma);
}

// Infrastructure failures are retried with backoff: with a high rate every job still
// finishes (or runs out of retries), failures cost wasted GPU time, and the same seed
// reproduces the same run.
TEST(FailureModelTest, InfrastructureFailuresRetryReproducibly) {
  const double tput = V100(kResNet, 1);
  FailureModel m = FailureModel::Philly();
  m.user_error_probability = {0.0, 0.0, 0.0, 0.0};
  m.infra_failures_per_gpu_hour = 0.2;
  std::vector<workload::TraceJob> trace;
  for (int i = 0; i < 20; ++i) trace.push_back(Job(kResNet, 1, tput * 4.0 * 3600.0, 0.0));
  SimulationOptions o = Cluster(10, 1, trace);
  o.seed = 3;
  o.physics.failures = m;
  const SimulationResult a = MustSimulate(o);
  const SimulationResult b = MustSimulate(o);
  EXPECT_GT(a.physics.infra_failures, 0);
  EXPECT_GT(a.physics.wasted_gpu_seconds, 0.0);
  EXPECT_EQ(a.window_jobs_completed + a.failed_jobs, 20u);
  EXPECT_EQ(a.average_jct_seconds, b.average_jct_seconds);
  EXPECT_EQ(a.physics.infra_failures, b.physics.infra_failures);
  // Without failures the same jobs finish sooner.
  o.physics.failures.reset();
  EXPECT_LT(MustSimulate(o).average_jct_seconds, a.average_jct_seconds);
}

// A workload's planned outcome (job_outcome.h) replaces the draws, at exactly its progress.
// Hand-worked: 1,000 steps at 10 steps/s in 60 s leases (600 steps each).
mechanism::Assignment OneGpuLease(JobId job, double max_steps) {
  mechanism::Assignment a;
  a.combination = mechanism::Combination::Single(job);
  a.workers = {WorkerId(0)};
  a.max_steps = {max_steps};
  a.expected_throughput = {10.0};
  a.lease_duration = Seconds(60.0);
  return a;
}

// gavel serve's leases (restart outside the lease, a dispatch delay), hand-worked on a 60-s
// lease at 10 steps/s with a 15-s restart and a 2-s delay: inside the lease the restart leaves
// 45 s of training (450 steps) and the task ends at 60 s; outside it the lease trains its full
// 600 steps and ends at 15 + 60 = 75 s; the delay moves either end 2 s later; an extension
// (no restart) trains 600 steps in 60 s under both.
TEST(RuntimeLeaseTest, RestartOutsideTheLeaseLengthensTheTaskAndTheDelayShiftsIt) {
  mechanism::ClusterLayout layout = *mechanism::ClusterLayout::Create({GpuTypeSpec{"v100", 1, 1}});
  struct Case {
    bool outside;
    double delay;
    bool extended;
    double steps;
    double finish;
  };
  for (const Case& c : {Case{false, 0.0, false, 450.0, 60.0}, Case{true, 0.0, false, 600.0, 75.0},
                        Case{false, 2.0, false, 450.0, 62.0}, Case{true, 2.0, false, 600.0, 77.0},
                        Case{true, 2.0, true, 600.0, 62.0}, Case{false, 0.0, true, 600.0, 60.0}}) {
    PhysicsOptions options;
    options.restart_overhead = RestartOverhead::Uniform(15.0);
    options.restart_outside_lease = c.outside;
    options.dispatch_delay = Seconds(c.delay);
    PhysicsModel model(options, &layout, /*seed=*/1);
    model.AdmitJob(JobId(0), kResNet, 1);
    mechanism::Assignment a = OneGpuLease(JobId(0), 600.0);
    a.lease_extended = c.extended;
    const Outcome out = model.Launch(a, Seconds(0.0));
    EXPECT_DOUBLE_EQ(out.steps[0], c.steps) << c.outside << " " << c.delay << " " << c.extended;
    EXPECT_DOUBLE_EQ(out.finish.value(), c.finish)
        << c.outside << " " << c.delay << " " << c.extended;
  }
}

// Leases of whole steps (the runtime's iterator), hand-worked on a 6-s lease at 0.35 steps/s
// (a K80 ResNet-50 at 60x: 2.1 steps of time; the mechanism's budget is trunc(2.1) = 2). A
// single-GPU time lease runs to the step boundary after its time: ceil(2.1) = 3 steps in
// 3 / 0.35 = 8.571 s, plus a 0.5-s restart outside the lease; inside it the restart leaves
// 5.5 s, ceil(1.925) = 2 steps. A job with 1 step left trains 1. A 2-GPU job's lease is a step
// bound of floor(6 x 0.35) = 2 steps (5.714 s), and at least one step when the round holds
// less (0.1 steps/s: 0.6 -> 1 step, 10 s). The fractional model trains the budget's 2 steps.
// On-time rounds' leases (step_early_leases, start-up inside) are a step short: 6 - 2.857 s,
// of which 2.643 s train after the restart, ceil(0.925) = 1 step, done at 3.357 s; a step
// longer than the round keeps the whole 6 s (5.5 s of training at 0.1: 1 step, 10.5 s). A
// gang's bound there is the steps that fit after the restart, a step short: at 0.35,
// ceil(5.5 x 0.35 = 1.925) − 1 = 1 step (3.357 s); at 1 step/s ceil(5.5) − 1 = 5 steps, done
// at 5.5 s, inside the round where the round's worth (6 steps) would end at 6.5 s; at 0.1,
// 0.55 steps fit: at least one, 10.5 s.
TEST(RuntimeLeaseTest, WholeStepLeasesRunToTheStepAfterTheirTimeAndGangsToTheirBound) {
  mechanism::ClusterLayout layout = *mechanism::ClusterLayout::Create({GpuTypeSpec{"k80", 2, 2}});
  struct Case {
    bool whole;
    bool outside;
    bool early;
    int gpus;
    double tput;
    double left;
    double steps;
    double finish;
  };
  const double step = 1.0 / 0.35;
  for (const Case& c : {Case{true, true, false, 1, 0.35, 100.0, 3.0, 0.5 + 3.0 * step},
                        Case{true, false, false, 1, 0.35, 100.0, 2.0, 0.5 + 2.0 * step},
                        Case{true, true, false, 1, 0.35, 1.0, 1.0, 0.5 + step},
                        Case{true, true, false, 2, 0.35, 100.0, 2.0, 0.5 + 2.0 * step},
                        Case{true, true, false, 2, 0.1, 100.0, 1.0, 0.5 + 10.0},
                        Case{false, true, false, 1, 0.35, 100.0, 2.0, 0.5 + 2.0 * step},
                        Case{true, false, true, 1, 0.35, 100.0, 1.0, 0.5 + step},
                        Case{true, false, true, 1, 0.1, 100.0, 1.0, 0.5 + 10.0},
                        Case{true, false, true, 2, 0.35, 100.0, 1.0, 0.5 + step},
                        Case{true, false, true, 2, 1.0, 100.0, 5.0, 5.5},
                        Case{true, false, false, 2, 1.0, 100.0, 6.0, 6.5},
                        Case{true, false, true, 2, 0.1, 100.0, 1.0, 0.5 + 10.0}}) {
    PhysicsOptions options;
    options.restart_overhead = RestartOverhead::Uniform(0.5);
    options.restart_outside_lease = c.outside;
    options.whole_steps = c.whole;
    options.step_early_leases = c.early;
    PhysicsModel model(options, &layout, /*seed=*/1);
    model.AdmitJob(JobId(0), kResNet, c.gpus);
    mechanism::Assignment a = OneGpuLease(JobId(0), std::min(c.left, std::trunc(6.0 * c.tput)));
    if (c.gpus == 2) a.workers = {WorkerId(0), WorkerId(1)};
    a.expected_throughput = {c.tput};
    a.remaining_steps = {c.left};
    a.lease_duration = Seconds(6.0);
    const Outcome out = model.Launch(a, Seconds(0.0));
    const std::string what = std::to_string(c.whole) + " " + std::to_string(c.outside) + " " +
                             std::to_string(c.early) + " " +
                             std::to_string(c.gpus) + " " + std::to_string(c.tput) + " " +
                             std::to_string(c.left);
    EXPECT_DOUBLE_EQ(out.steps[0], c.steps) << what;
    EXPECT_NEAR(out.finish.value(), c.finish, 1e-9) << what;
  }
}

// Over a whole run, one job alone on a GPU for 2,000 s of work in 360-s rounds, a 45-s start
// and a 3-s dispatch delay: it starts once (45 s) and runs ceil(2000 / 360) = 6 leases, each
// 3 s late, so JCT = 2000 + 45 + 6 x 3 = 2063 s.
TEST(RuntimeLeaseTest, ARunPaysTheStartOnceAndTheDelayEveryRound) {
  const double tput = V100(kResNet, 1);
  SimulationOptions o = Cluster(1, 1, {Job(kResNet, 1, tput * 2000.0, 0.0)});
  o.physics.restart_overhead = RestartOverhead::Uniform(45.0);
  o.physics.restart_outside_lease = true;
  o.physics.dispatch_delay = Seconds(3.0);
  const SimulationResult r = MustSimulate(o);
  EXPECT_NEAR(r.average_jct_seconds, 2063.0, 1e-6);
}

// gavel serve's pause on an idle cluster (arrival_settle), hand-worked on 2 V100s and 360-s
// rounds with job A (100 s of work) arriving at 0 and job B (100 s) at 10 or 30. Without the
// pause A starts alone at 0 and ends at 100, the round with it; B waits for that end and runs
// 100-200: JCTs 100 and 190. An 18-s pause starts the first round at 18 with every job
// arrived by then: B at 10 runs beside A, both end at 118: JCTs 118 and 108. B at 30 comes
// after the pause, while A runs, so it waits for A's round to end at 118 (no pause on a busy
// cluster) and ends at 218: JCTs 118 and 188.
TEST(RuntimeLeaseTest, AnIdleClustersRoundWaitsForArrivalsWithinThePause) {
  const double tput = V100(kResNet, 1);
  struct Case {
    double settle;
    double b_arrival;
    double average_jct;
  };
  for (const Case& c : {Case{0.0, 10.0, (100.0 + 190.0) / 2.0},
                        Case{18.0, 10.0, (118.0 + 108.0) / 2.0},
                        Case{18.0, 30.0, (118.0 + 188.0) / 2.0}}) {
    SimulationOptions o =
        Cluster(2, 2, {Job(kResNet, 1, tput * 100.0, 0.0), Job(kResNet, 1, tput * 100.0,
                                                                 c.b_arrival)});
    o.physics.arrival_settle = Seconds(c.settle);
    EXPECT_NEAR(MustSimulate(o).average_jct_seconds, c.average_jct, 1e-6)
        << c.settle << " " << c.b_arrival;
  }
}

TEST(PlannedOutcomeTest, UserErrorStrikesAtItsProgressAndLosesTheLease) {
  mechanism::ClusterLayout layout = *mechanism::ClusterLayout::Create({GpuTypeSpec{"v100", 1, 1}});
  PhysicsOptions options;
  options.failures = FailureModel::Philly();
  PhysicsModel model(options, &layout, /*seed=*/1);
  model.AdmitJob(JobId(0), kResNet, 1, 1000.0,
                 workload::JobOutcome{workload::OutcomeKind::kUserError, 0.8});
  // First lease: 600 steps, below 800: runs in full.
  const Outcome first = model.Launch(OneGpuLease(JobId(0), 600.0), Seconds(0.0));
  EXPECT_EQ(first.failure, Failure::kNone);
  EXPECT_DOUBLE_EQ(first.steps[0], 600.0);
  // Second lease reaches 800 after 200 steps = 20 s: fails there, its steps lost.
  const Outcome second = model.Launch(OneGpuLease(JobId(0), 400.0), Seconds(60.0));
  EXPECT_EQ(second.failure, Failure::kUser);
  EXPECT_DOUBLE_EQ(second.steps[0], 0.0);
  EXPECT_DOUBLE_EQ(second.finish.value(), 80.0);
  EXPECT_EQ(model.stats().user_errors, 1);
  EXPECT_DOUBLE_EQ(model.stats().wasted_gpu_seconds, 20.0);
}

TEST(PlannedOutcomeTest, InfrastructureFailureStrikesOnceThenTheJobRunsOn) {
  mechanism::ClusterLayout layout = *mechanism::ClusterLayout::Create({GpuTypeSpec{"v100", 1, 1}});
  PhysicsOptions options;
  options.failures = FailureModel::Philly();
  options.failures->infra_failures_per_gpu_hour = 1e6;  // the draws would fail every lease
  PhysicsModel model(options, &layout, /*seed=*/1);
  model.AdmitJob(JobId(0), kResNet, 1, 1000.0,
                 workload::JobOutcome{workload::OutcomeKind::kInfrastructureFailure, 0.3});
  const Outcome first = model.Launch(OneGpuLease(JobId(0), 600.0), Seconds(0.0));
  EXPECT_EQ(first.failure, Failure::kInfra);
  EXPECT_DOUBLE_EQ(first.finish.value(), 30.0);
  for (int lease = 0; lease < 5; ++lease) {
    EXPECT_EQ(model.Launch(OneGpuLease(JobId(0), 600.0), Seconds(100.0 * (lease + 1))).failure,
              Failure::kNone);
  }
  EXPECT_EQ(model.stats().infra_failures, 1);
}

TEST(PlannedOutcomeTest, CompletedLabelOverridesTheDrawsAndKillsShortenTheJob) {
  mechanism::ClusterLayout layout = *mechanism::ClusterLayout::Create({GpuTypeSpec{"v100", 1, 1}});
  PhysicsOptions options;
  options.failures = FailureModel::Philly();
  options.failures->user_error_probability = {1.0, 1.0, 1.0, 1.0};
  options.failures->user_error_mean_seconds = 1.0;
  PhysicsModel model(options, &layout, /*seed=*/1);
  model.AdmitJob(JobId(0), kResNet, 1, 1000.0, workload::JobOutcome{});
  model.AdmitJob(JobId(1), kResNet, 1, 1000.0);  // no label: the draws (certain, early error)
  EXPECT_EQ(model.Launch(OneGpuLease(JobId(0), 600.0), Seconds(0.0)).failure, Failure::kNone);
  EXPECT_EQ(model.Launch(OneGpuLease(JobId(1), 600.0), Seconds(0.0)).failure, Failure::kUser);
  const workload::JobOutcome killed{workload::OutcomeKind::kKilled, 0.25};
  EXPECT_DOUBLE_EQ(model.PlannedSteps(1000.0, killed), 250.0);
  EXPECT_DOUBLE_EQ(model.PlannedSteps(1000.0, workload::JobOutcome{}), 1000.0);
  // Without a failure model the plan is inert.
  PhysicsModel plain(PhysicsOptions{}, &layout, /*seed=*/1);
  EXPECT_DOUBLE_EQ(plain.PlannedSteps(1000.0, killed), 1000.0);
  plain.AdmitJob(JobId(0), kResNet, 1, 1000.0,
                 workload::JobOutcome{workload::OutcomeKind::kUserError, 0.1});
  EXPECT_EQ(plain.Launch(OneGpuLease(JobId(0), 600.0), Seconds(0.0)).failure, Failure::kNone);
}

// Whole simulations of a trace with planned outcomes: the labelled jobs fail or stop exactly
// as planned, the others complete.
TEST(PlannedOutcomeTest, ASimulationFollowsTheTracesLabels) {
  const double tput = V100(kResNet, 1);
  std::vector<workload::TraceJob> trace;
  for (int i = 0; i < 4; ++i) trace.push_back(Job(kResNet, 1, tput * 3600.0, 0.0));
  trace[1].outcome = workload::JobOutcome{workload::OutcomeKind::kUserError, 0.5};
  trace[2].outcome = workload::JobOutcome{workload::OutcomeKind::kKilled, 0.5};
  trace[3].outcome = workload::JobOutcome{workload::OutcomeKind::kInfrastructureFailure, 0.5};
  SimulationOptions o = Cluster(4, 1, trace, "fifo");
  o.physics.failures = FailureModel::Philly();
  const SimulationResult r = MustSimulate(o);
  EXPECT_EQ(r.failed_jobs, 1u);
  EXPECT_EQ(r.physics.user_errors, 1);
  EXPECT_EQ(r.physics.infra_failures, 1);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_TRUE(r.jobs[1].failed);
  // The killed job ends at half its steps, so sooner than the untouched one; the one with an
  // infrastructure failure loses work and a backoff, so later.
  ASSERT_TRUE(r.jobs[0].finish && r.jobs[2].finish && r.jobs[3].finish);
  EXPECT_LT(r.jobs[2].finish->value(), r.jobs[0].finish->value());
  EXPECT_GT(r.jobs[3].finish->value(), r.jobs[0].finish->value());
}

// Host resources bound placement: two jobs that each need all of a server's CPUs never share
// it, so with 2 servers of 2 GPUs four 1-GPU jobs run two at a time.
TEST(HostResourcesTest, CpuLimitKeepsJobsApart) {
  const double tput = V100(kResNet, 1);
  std::vector<workload::TraceJob> trace;
  for (int i = 0; i < 4; ++i) {
    workload::TraceJob j = Job(kResNet, 1, tput * 3600.0, 0.0);
    j.cpus_per_gpu = 8.0;
    trace.push_back(j);
  }
  SimulationOptions o = Cluster(4, 2, trace);
  o.physics.host.cpus_per_server = 8.0;
  const SimulationResult limited = MustSimulate(o);
  o.physics.host.cpus_per_server = 16.0;
  const SimulationResult roomy = MustSimulate(o);
  EXPECT_NEAR(roomy.makespan_seconds, 3600.0, 1.0);
  EXPECT_GE(limited.makespan_seconds, 2.0 * 3600.0 - 1.0);
  EXPECT_GT(limited.fragmentation_delay_mean_seconds, 0.0);
  EXPECT_EQ(roomy.fragmentation_delay_mean_seconds, 0.0);

  o.physics.host.cpus_per_server = 4.0;  // a job needs more than a server has
  EXPECT_THAT(Simulate(o).status().message(), HasSubstr("more than a server has"));
}

// Queueing delay is arrival to first start, and its split adds up to it.
TEST(QueueingMetricsTest, DelaySplitAddsUp) {
  const double tput = V100(kResNet, 1);
  std::vector<workload::TraceJob> trace;
  for (int i = 0; i < 6; ++i) trace.push_back(Job(kResNet, 1, tput * 1800.0, i * 100.0));
  const SimulationResult r = MustSimulate(Cluster(2, 1, trace, "fifo"));
  for (const JobResult& job : r.jobs) {
    ASSERT_TRUE(job.queueing_delay.has_value());
    EXPECT_NEAR(job.fair_share_delay_seconds + job.fragmentation_delay_seconds,
                job.queueing_delay->value(), 1e-6);
  }
  EXPECT_GT(r.queueing_delay_p90_seconds, 0.0);
  ASSERT_EQ(r.jct_by_size.size(), 4u);
  EXPECT_EQ(r.jct_by_size[0].jobs, 6u);
  EXPECT_NEAR(r.jct_by_size[0].mean, r.average_jct_seconds, 1e-6);
}

}  // namespace
}  // namespace gavel::sim
