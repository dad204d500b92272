// The round mechanism visits only the combinations that matter each round (allocated, tracked,
// and untracked pairs merged in by insertion order); SchedulerOptions::exhaustive_scans keeps
// the plain scans over every candidate pair. Whole simulations must come out bit for bit the
// same both ways: every job's start, finish, GPU-seconds and failures, every counter. The
// workloads congest a small cluster so that hundreds of candidate pairs wait, with the
// packing schedulers that run priority-0 combinations (gandiva, max_min_fairness_packed),
// those that skip them (gandiva_introspective, fifo_packed), non-packing ones, elastic jobs,
// the realistic physics (failures, restarts, topology-aware placement) and --compat gavel.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gavel/core/shipped_table.h"
#include "gavel/sim/sim_test_support.h"

namespace gavel::sim {
namespace {

struct Case {
  std::string policy;
  std::uint64_t seed = 0;
  double interarrival = 900.0;
  bool multi_gpu = false;
  bool realistic = false;
  double elastic_fraction = 0.0;
  bool compat = false;
};

std::string Describe(const Case& c) {
  return c.policy + " seed " + std::to_string(c.seed) + " lam " + std::to_string(c.interarrival) +
         (c.multi_gpu ? " multi-gpu" : "") + (c.realistic ? " realistic" : "") +
         (c.elastic_fraction > 0.0 ? " elastic" : "") + (c.compat ? " compat" : "");
}

SimulationOptions Options(const Case& c, bool exhaustive) {
  SimulationOptions o;
  o.cluster = {{"v100", 8, 4}, {"p100", 8, 4}, {"k80", 8, 4}};
  o.throughputs = ShippedThroughputTable();
  o.policy = c.policy;
  o.seed = c.seed;
  if (c.compat) o.compat = mechanism::Compat::Gavel();
  workload::GeneratorOptions g;
  g.seed = c.seed;
  g.mean_interarrival = Seconds(c.interarrival);
  g.generate_multi_gpu_jobs = c.multi_gpu;
  g.elastic_fraction = c.elastic_fraction;
  g.max_jobs = 140;
  o.generator = g;
  o.window_start = 20;
  o.window_end = 120;
  o.saturation_limit = Seconds(5e6);
  if (c.realistic) o.physics = simtest::RealisticPhysics();
  o.exhaustive_scans = exhaustive;
  return o;
}

void ExpectSameJobs(const std::vector<JobResult>& a, const std::vector<JobResult>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const JobResult& x = a[i];
    const JobResult& y = b[i];
    SCOPED_TRACE(what + ", job " + std::to_string(i));
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.first_start, y.first_start);
    EXPECT_EQ(x.finish, y.finish);
    EXPECT_EQ(x.jct, y.jct);
    EXPECT_EQ(x.dropped, y.dropped);
    EXPECT_EQ(x.failed, y.failed);
    EXPECT_EQ(x.rejected, y.rejected);
    EXPECT_EQ(x.gpu_seconds, y.gpu_seconds);  // exact: same bookings in the same order
    EXPECT_EQ(x.queueing_delay, y.queueing_delay);
    EXPECT_EQ(x.fair_share_delay_seconds, y.fair_share_delay_seconds);
    EXPECT_EQ(x.fragmentation_delay_seconds, y.fragmentation_delay_seconds);
    if (::testing::Test::HasFailure()) return;  // the first diverging job is enough
  }
}

void ExpectIdentical(const Case& c) {
  const std::string what = Describe(c);
  const SimulationResult fast = simtest::MustSimulate(Options(c, /*exhaustive=*/false));
  const SimulationResult plain = simtest::MustSimulate(Options(c, /*exhaustive=*/true));
  EXPECT_EQ(fast.rounds, plain.rounds) << what;
  EXPECT_EQ(fast.micro_tasks, plain.micro_tasks) << what;
  EXPECT_EQ(fast.failed_micro_tasks, plain.failed_micro_tasks) << what;
  EXPECT_EQ(fast.lease_extensions, plain.lease_extensions) << what;
  EXPECT_EQ(fast.lease_extension_opportunities, plain.lease_extension_opportunities) << what;
  EXPECT_EQ(fast.physics.restarts, plain.physics.restarts) << what;
  EXPECT_EQ(fast.physics.spread_micro_tasks, plain.physics.spread_micro_tasks) << what;
  EXPECT_EQ(fast.makespan_seconds, plain.makespan_seconds) << what;
  EXPECT_EQ(fast.average_jct_seconds, plain.average_jct_seconds) << what;
  ExpectSameJobs(fast.jobs, plain.jobs, what);
  // The workload must have congested the cluster, or the test shows little: jobs waited.
  EXPECT_GT(plain.queueing_delay_mean_seconds, 0.0) << what;
}

TEST(IncrementalScansTest, PackingPoliciesThatRunPriorityZeroCombinations) {
  for (std::uint64_t seed : {0, 1, 2}) {
    ExpectIdentical({.policy = "gandiva", .seed = seed, .interarrival = 600.0});
    ExpectIdentical({.policy = "max_min_fairness_packed", .seed = seed, .interarrival = 900.0,
                     .multi_gpu = seed == 1});
  }
  ExpectIdentical({.policy = "gandiva", .seed = 3, .interarrival = 400.0, .multi_gpu = true,
                   .realistic = true});
}

TEST(IncrementalScansTest, PackingPoliciesThatSkipPriorityZero) {
  for (std::uint64_t seed : {0, 1, 2}) {
    ExpectIdentical({.policy = "gandiva_introspective", .seed = seed, .interarrival = 500.0,
                     .realistic = seed != 1});
  }
  ExpectIdentical({.policy = "gandiva_introspective", .seed = 4, .interarrival = 700.0,
                   .multi_gpu = true, .realistic = true, .elastic_fraction = 0.3});
  ExpectIdentical({.policy = "fifo_packed", .seed = 5, .interarrival = 600.0});
}

TEST(IncrementalScansTest, PoliciesWithoutPairs) {
  ExpectIdentical({.policy = "max_min_fairness_perf", .seed = 0, .interarrival = 600.0,
                   .multi_gpu = true, .realistic = true});
  ExpectIdentical({.policy = "tiresias_2das", .seed = 1, .interarrival = 600.0,
                   .multi_gpu = true});
  ExpectIdentical({.policy = "fifo_perf", .seed = 2, .interarrival = 500.0});
}

TEST(IncrementalScansTest, CompatGavel) {
  ExpectIdentical({.policy = "gandiva", .seed = 0, .interarrival = 600.0, .compat = true});
  ExpectIdentical({.policy = "max_min_fairness_packed", .seed = 1, .interarrival = 900.0,
                   .compat = true});
}

}  // namespace
}  // namespace gavel::sim
