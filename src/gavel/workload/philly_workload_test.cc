// The Philly-like workload against independent truth: the shipped table's own frequencies
// (counted here from the CSV text, not through the loader), the closed-form diurnal rate
// integrated per hour, and the documented outcome shares; reproducibility from the seed.
#include "gavel/workload/philly_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <numbers>
#include <set>
#include <sstream>

#include "gavel/workload/job_table.h"

namespace gavel::workload {
namespace {

const std::string kSourceDir = GAVEL_SOURCE_DIR;

const ThroughputTable& Table() {
  static const ThroughputTable table =
      ThroughputTable::LoadFile(kSourceDir + "/data/simulation_throughputs.json").value();
  return table;
}

std::shared_ptr<const PhillyJobDistribution> Distribution() {
  static const auto dist = std::make_shared<const PhillyJobDistribution>(
      PhillyJobDistribution::LoadCsv(DefaultPhillyDistributionFile()).value());
  return dist;
}

PhillyWorkloadOptions Options(std::uint64_t seed, double lam) {
  PhillyWorkloadOptions o;
  o.seed = seed;
  o.mean_interarrival = Seconds(lam);
  o.distribution = Distribution();
  return o;
}

// The table's rows read straight from the CSV text: (duration, num_gpus).
std::vector<std::pair<double, int>> RawRows() {
  std::ifstream in(DefaultPhillyDistributionFile());
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::pair<double, int>> rows;
  while (std::getline(in, line)) {
    const auto comma = line.find(',');
    rows.emplace_back(std::stod(line.substr(0, comma)), std::stoi(line.substr(comma + 1)));
  }
  return rows;
}

TEST(PhillyWorkloadTest, GpuCountsFollowThePublishedShares) {
  const auto raw = RawRows();
  ASSERT_EQ(raw.size(), 33192u);  // shared/data/README.md: 25,304 / 665 / 3,076 / 4,147
  std::map<int, double> expected;
  for (const auto& [duration, gpus] : raw) expected[gpus] += 1.0 / static_cast<double>(raw.size());
  EXPECT_NEAR(expected[1], 25304.0 / 33192.0, 1e-12);
  EXPECT_NEAR(expected[8], 4147.0 / 33192.0, 1e-12);

  constexpr std::size_t kJobs = 40000;
  const auto jobs = GeneratePhillyJobs(Options(3, 0.0), Table(), kJobs).value();
  ASSERT_EQ(jobs.size(), kJobs);
  std::map<int, double> seen;
  for (const TraceJob& job : jobs) seen[job.scale_factor] += 1.0 / kJobs;
  for (const auto& [gpus, share] : expected) {
    // Five binomial standard deviations.
    const double sigma = std::sqrt(share * (1.0 - share) / kJobs);
    EXPECT_NEAR(seen[gpus], share, 5.0 * sigma) << gpus << " GPUs";
  }
  EXPECT_EQ(seen.size(), expected.size());
}

TEST(PhillyWorkloadTest, DurationsFollowTheHeavyTailedTable) {
  auto raw = RawRows();
  std::vector<double> table_durations;
  for (const auto& row : raw) table_durations.push_back(row.first);
  std::sort(table_durations.begin(), table_durations.end());

  constexpr std::size_t kJobs = 40000;
  const auto jobs = GeneratePhillyJobs(Options(5, 0.0), Table(), kJobs).value();
  std::vector<double> drawn;
  for (const TraceJob& job : jobs) {
    drawn.push_back(job.duration->value());
    // Steps are the duration at the template's v100 throughput.
    EXPECT_DOUBLE_EQ(job.total_steps,
                     job.duration->value() * Table().Isolated("v100", job.key()).value());
  }
  std::sort(drawn.begin(), drawn.end());
  // Kolmogorov-Smirnov distance between the draws and the table: at 40,000 draws the 0.1 %
  // critical value is 1.95 / sqrt(n) ~ 0.0098.
  double ks = 0.0;
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    const double table_cdf = static_cast<double>(std::upper_bound(table_durations.begin(),
                                                                  table_durations.end(), drawn[i]) -
                                                 table_durations.begin()) /
                             static_cast<double>(table_durations.size());
    ks = std::max(ks, std::abs(table_cdf - static_cast<double>(i + 1) / kJobs));
  }
  EXPECT_LT(ks, 0.0098);
  // Heavy tail: the mean is several medians and p99 is far above p50 (README: median 14,398 s).
  double mean = 0.0;
  for (double d : drawn) mean += d / kJobs;
  const double median = drawn[kJobs / 2];
  EXPECT_NEAR(median, 14398.0, 0.05 * 14398.0);
  EXPECT_GT(mean / median, 3.0);
  EXPECT_GT(drawn[kJobs * 99 / 100] / median, 30.0);
}

TEST(PhillyWorkloadTest, TemplatesSupportTheirScaleFactor) {
  const auto jobs = GeneratePhillyJobs(Options(1, 60.0), Table(), 5000).value();
  std::map<std::string, bool> distributed;
  for (const JobTemplate& t : JobTable()) distributed[t.model] = t.distributed;
  std::set<std::string> types;
  for (const TraceJob& job : jobs) {
    ASSERT_TRUE(distributed.contains(job.job_type));
    if (job.scale_factor > 1) {
      EXPECT_TRUE(distributed[job.job_type]) << job.job_type;
    }
    types.insert(job.job_type);
  }
  EXPECT_EQ(types.size(), JobTable().size());  // uniform over templates: all of them appear
}

TEST(PhillyWorkloadTest, ArrivalsFollowTheDiurnalRate) {
  constexpr double kLam = 30.0;          // 120 jobs per hour on average
  constexpr std::size_t kJobs = 200000;  // ~69 days
  PhillyWorkloadOptions o = Options(7, kLam);
  o.diurnal_amplitude = 0.6;
  o.peak_hour = 14.0;
  o.start_hour = 0.0;
  const auto jobs = GeneratePhillyJobs(o, Table(), kJobs).value();
  // Only whole days, so every hour of the day is covered equally often.
  const double days = std::floor(jobs.back().arrival_time.value() / 86400.0);
  ASSERT_GT(days, 60.0);
  std::array<double, 24> count{};
  double total = 0.0;
  for (const TraceJob& job : jobs) {
    if (job.arrival_time.value() >= days * 86400.0) break;
    count[static_cast<std::size_t>(std::fmod(job.arrival_time.value(), 86400.0) / 3600.0)] += 1.0;
    total += 1.0;
  }
  // The daily mean rate is 1 / lam.
  EXPECT_NEAR(total / (days * 86400.0), 1.0 / kLam, 0.02 / kLam);
  // Expected share of hour h: the integral of 1 + A cos(2π (t - 14) / 24) over [h, h + 1] / 24.
  for (int h = 0; h < 24; ++h) {
    const double w = 2.0 * std::numbers::pi / 24.0;
    const double integral =
        1.0 + o.diurnal_amplitude / w * (std::sin(w * (h + 1 - 14.0)) - std::sin(w * (h - 14.0)));
    const double share = integral / 24.0;
    const double sigma = std::sqrt(share * (1.0 - share) / total);
    EXPECT_NEAR(count[static_cast<std::size_t>(h)] / total, share, 5.0 * sigma) << "hour " << h;
  }
  // The peak at 14:00 falls on the edge of bins [13, 14) and [14, 15): one of them is busiest.
  const auto busiest = std::max_element(count.begin(), count.end()) - count.begin();
  EXPECT_TRUE(busiest == 13 || busiest == 14) << busiest;
}

TEST(PhillyWorkloadTest, OutcomesFollowTheStudyShares) {
  constexpr std::size_t kJobs = 50000;
  const PhillyWorkloadOptions o = Options(11, 0.0);
  const auto jobs = GeneratePhillyJobs(o, Table(), kJobs).value();
  std::map<OutcomeKind, double> share;
  for (const TraceJob& job : jobs) {
    ASSERT_TRUE(job.outcome.has_value());
    const JobOutcome& out = *job.outcome;
    share[out.kind] += 1.0 / kJobs;
    switch (out.kind) {
      case OutcomeKind::kUserError:
        EXPECT_GT(out.at_progress, 0.0);
        EXPECT_LE(out.at_progress, o.user_error_max_progress);
        break;
      case OutcomeKind::kInfrastructureFailure:
        EXPECT_GT(out.at_progress, o.user_error_max_progress);
        EXPECT_LE(out.at_progress, 1.0);
        break;
      default:
        EXPECT_EQ(out.at_progress, 1.0);
    }
  }
  const std::map<OutcomeKind, double> expected = {
      {OutcomeKind::kCompleted, 0.661},
      {OutcomeKind::kKilled, 0.125},
      {OutcomeKind::kUserError, 0.214 * 0.8},
      {OutcomeKind::kInfrastructureFailure, 0.214 * 0.2}};
  for (const auto& [kind, p] : expected) {
    EXPECT_NEAR(share[kind], p, 5.0 * std::sqrt(p * (1 - p) / kJobs)) << OutcomeKindName(kind);
  }
  PhillyWorkloadOptions unlabelled = o;
  unlabelled.label_outcomes = false;
  const auto unlabelled_jobs = GeneratePhillyJobs(unlabelled, Table(), 100).value();
  for (const TraceJob& job : unlabelled_jobs) {
    EXPECT_FALSE(job.outcome.has_value());
  }
}

TEST(PhillyWorkloadTest, ReproducibleFromTheSeedAndStreamsIndependent) {
  const auto a = GeneratePhillyJobs(Options(42, 300.0), Table(), 2000).value();
  const auto b = GeneratePhillyJobs(Options(42, 300.0), Table(), 2000).value();
  EXPECT_EQ(a, b);
  const auto c = GeneratePhillyJobs(Options(43, 300.0), Table(), 2000).value();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i].total_steps != c[i].total_steps;
  EXPECT_GT(differ, 1500u);
  // Another arrival shape moves arrivals only: sizes, types and outcomes stay job for job.
  PhillyWorkloadOptions flat = Options(42, 300.0);
  flat.diurnal_amplitude = 0.0;
  const auto d = GeneratePhillyJobs(flat, Table(), 2000).value();
  std::size_t moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].job_type, d[i].job_type);
    EXPECT_EQ(a[i].total_steps, d[i].total_steps);
    EXPECT_EQ(a[i].outcome, d[i].outcome);
    moved += a[i].arrival_time != d[i].arrival_time;
  }
  EXPECT_GT(moved, 1000u);
  EXPECT_EQ(a.front().arrival_time.value(), 0.0);
  for (std::size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i].arrival_time, a[i - 1].arrival_time);
}

TEST(PhillyWorkloadTest, GeneratedJobStreamHandsOutThePhillyJobs) {
  GeneratorOptions g;
  g.seed = 9;
  g.mean_interarrival = Seconds(120.0);
  g.max_jobs = 300;
  g.steady_state_cluster = {{"v100", 10}};  // ignored by the Philly workload
  auto philly = std::make_shared<PhillyWorkloadOptions>(Options(0, 0.0));
  g.philly_workload = philly;
  const auto via_generator = GenerateJobs(g, Table(), 1000).value();
  const auto direct = GeneratePhillyJobs(Options(9, 120.0), Table(), 1000).value();
  ASSERT_EQ(via_generator.size(), 300u);
  for (std::size_t i = 0; i < via_generator.size(); ++i) EXPECT_EQ(via_generator[i], direct[i]);
}

TEST(PhillyWorkloadTest, OptionsOutOfBoundsAreRejected) {
  const auto check = [](auto mutate, const std::string& what) {
    PhillyWorkloadOptions o = Options(0, 60.0);
    mutate(o);
    const Status status = ValidatePhillyWorkloadOptions(o);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << what;
    EXPECT_NE(status.message().find(what), std::string::npos) << status.message();
  };
  check([](PhillyWorkloadOptions& o) { o.diurnal_amplitude = 1.0; }, "diurnal amplitude");
  check([](PhillyWorkloadOptions& o) { o.diurnal_amplitude = std::nan(""); }, "diurnal amplitude");
  check([](PhillyWorkloadOptions& o) { o.peak_hour = 24.0; }, "peak hour");
  check([](PhillyWorkloadOptions& o) { o.start_hour = -1.0; }, "start hour");
  check([](PhillyWorkloadOptions& o) { o.killed_share = 0.9; }, "shares");
  check([](PhillyWorkloadOptions& o) { o.user_error_share = 1.5; }, "user-error share");
  check([](PhillyWorkloadOptions& o) { o.user_error_max_progress = 1.0; }, "progress bound");
  check([](PhillyWorkloadOptions& o) { o.mean_interarrival = Seconds(-1.0); }, "inter-arrival");
  check([](PhillyWorkloadOptions& o) { o.distribution = nullptr; }, "rows");
  PhillyWorkloadOptions missing_type = Options(0, 60.0);
  missing_type.reference_gpu_type = "a100";
  EXPECT_FALSE(PhillyJobStream::Create(missing_type, Table()).ok());
}

}  // namespace
}  // namespace gavel::workload
