// Tests of the throughput estimator against independent truth: the shipped table itself (full
// profiling must reproduce it), an invariant (more profiling, less error, on every seed), and
// a small table worked by hand through the original's steps (scheduler/throughput_estimator.py).
#include "gavel/estimator/throughput_estimator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gavel/core/shipped_table.h"
#include "gavel/workload/job_table.h"

namespace gavel::estimator {
namespace {

std::vector<std::string> Models() {
  std::vector<std::string> models;
  for (const auto& t : workload::JobTable()) models.push_back(t.model);
  return models;
}

std::unique_ptr<ThroughputEstimator> Make(std::shared_ptr<const ThroughputTable> table,
                                          EstimatorOptions options) {
  auto e = ThroughputEstimator::Create(std::move(table), std::move(options));
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

TEST(PythonSmallSortOrderTest, MatchesCPythonIncludingNaN) {
  const double nan = std::nan("");
  // Expected orders printed by CPython 3.11: sorted(range(n), key=keys.__getitem__).
  EXPECT_EQ(PythonSmallSortOrder({nan, 0.3, 0.1}), (std::vector<std::size_t>{0, 2, 1}));
  EXPECT_EQ(PythonSmallSortOrder({0.3, nan, 0.1}), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(PythonSmallSortOrder({0.5, nan, 0.2, 0.2, nan}),
            (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(PythonSmallSortOrder({0.9, 0.5, 0.1, nan}), (std::vector<std::size_t>{2, 1, 0, 3}));
  // Without NaN it is a stable sort.
  const std::vector<double> keys = {0.4, 0.1, 0.4, 0.0, 0.1, 0.9, 0.0};
  std::vector<std::size_t> stable = {0, 1, 2, 3, 4, 5, 6};
  std::stable_sort(stable.begin(), stable.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  EXPECT_EQ(PythonSmallSortOrder(keys), stable);
}

// Full profiling against all 26 types: every job matches its own type, and the estimates are
// the table's co-located throughputs (float32-rounded under compat, as the original keeps them).
TEST(ThroughputEstimatorTest, FullProfilingMatchesTrueTypeAndReproducesTheTable) {
  const auto table = ShippedThroughputTable();
  for (const bool compat : {false, true}) {
    EstimatorOptions o;
    o.models = Models();
    o.compat_gavel = compat;
    o.seed = 3;
    auto e = Make(table, o);
    ASSERT_NE(e, nullptr);
    std::vector<JobTypeKey> types;
    for (std::size_t i = 0; i < o.models.size(); ++i) {
      types.push_back({o.models[i], 1});
      const Result<Match> m = e->AddJob(JobId(i), types.back());
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      EXPECT_TRUE(m->true_type) << types.back().ToString() << " matched " << m->reference.ToString();
      EXPECT_FALSE(m->completed);
    }
    for (std::size_t g = 0; g < table->gpu_types().size(); ++g) {
      if (table->gpu_types()[g].find("unconsolidated") != std::string::npos) continue;
      const int gi = static_cast<int>(g);
      for (std::size_t a = 0; a < types.size(); ++a) {
        for (std::size_t b = a + 1; b < types.size(); ++b) {
          const auto truth = *table->Colocated(table->gpu_types()[g], types[a], types[b]);
          const auto est = e->Colocated(JobId(a), JobId(b), gi);
          const double tol = compat ? 1e-6 : 1e-12;
          EXPECT_NEAR(est[0], truth[0], tol * std::max(1.0, truth[0]));
          EXPECT_NEAR(est[1], truth[1], tol * std::max(1.0, truth[1]));
        }
      }
    }
  }
}

// Mean normalised error over every pair of 60 jobs and every GPU type.
double MeanError(double p, std::uint64_t seed, int k) {
  EstimatorOptions o;
  o.models = Models();
  o.profiling_percentage = p;
  o.num_reference_models = k;
  o.seed = seed;
  auto e = Make(ShippedThroughputTable(), o);
  std::mt19937 pick(static_cast<std::uint32_t>(seed));
  std::uniform_int_distribution<std::size_t> model(0, o.models.size() - 1);
  const int jobs = 60;
  for (int j = 0; j < jobs; ++j) {
    EXPECT_TRUE(e->AddJob(JobId(static_cast<std::uint64_t>(j)), {o.models[model(pick)], 1}).ok());
  }
  double sum = 0.0;
  int count = 0;
  const auto& gpu_types = ShippedThroughputTable()->gpu_types();
  for (std::size_t g = 0; g < gpu_types.size(); ++g) {
    if (gpu_types[g].find("unconsolidated") != std::string::npos) continue;
    for (int a = 0; a < jobs; ++a) {
      for (int b = a + 1; b < jobs; ++b) {
        for (double err : e->NormalizedError(JobId(static_cast<std::uint64_t>(a)),
                                             JobId(static_cast<std::uint64_t>(b)),
                                             static_cast<int>(g))) {
          if (std::isnan(err)) continue;
          sum += err;
          ++count;
        }
      }
    }
  }
  return sum / count;
}

TEST(ThroughputEstimatorTest, ErrorFallsAsProfilingRisesOnEverySeed) {
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const double none = MeanError(0.0, seed, 26);
    const double some = MeanError(0.2, seed, 26);
    const double most = MeanError(0.6, seed, 26);
    const double all = MeanError(1.0, seed, 26);
    EXPECT_GT(none, some) << "seed " << seed;
    EXPECT_GT(some, most) << "seed " << seed;
    EXPECT_GT(most, all) << "seed " << seed;
    EXPECT_EQ(all, 0.0) << "seed " << seed;
  }
}

TEST(ThroughputEstimatorTest, ReferenceTypesMatchThemselvesWithFewReferences) {
  EstimatorOptions o;
  o.models = Models();
  o.num_reference_models = 8;
  o.seed = 5;
  auto e = Make(ShippedThroughputTable(), o);
  const std::vector<JobTypeKey> refs = e->ReferenceTypes(1);
  ASSERT_EQ(refs.size(), 8u);
  std::uint64_t id = 0;
  for (const JobTypeKey& r : refs) {
    const Result<Match> m = e->AddJob(JobId(id++), r);
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(m->true_type) << r.ToString() << " matched " << m->reference.ToString();
  }
}

TEST(ThroughputEstimatorTest, DefaultModeEstimatesMultiGpuJobsAndCompatRefusesThem) {
  EstimatorOptions o;
  o.models = Models();
  o.profiling_percentage = 0.5;
  auto e = Make(ShippedThroughputTable(), o);
  EXPECT_EQ(e->ReferenceTypes(4).size(), 19u);  // the 19 distributed models
  const Result<Match> m = e->AddJob(JobId(0), {"ResNet-50 (batch size 32)", 4});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->reference.scale_factor, 4);
  o.compat_gavel = true;
  auto c = Make(ShippedThroughputTable(), o);
  EXPECT_EQ(c->AddJob(JobId(0), {"ResNet-50 (batch size 32)", 4}).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(ThroughputEstimatorTest, MeasurementReplacesTheEstimate) {
  EstimatorOptions o;
  o.models = Models();
  o.profiling_percentage = 0.0;
  auto e = Make(ShippedThroughputTable(), o);
  ASSERT_TRUE(e->AddJob(JobId(0), {o.models[0], 1}).ok());
  ASSERT_TRUE(e->AddJob(JobId(1), {o.models[20], 1}).ok());
  EXPECT_FALSE(e->Measured(JobId(0), JobId(1), 0));
  e->RecordMeasurement(JobId(0), JobId(1), 0, {1.25, 2.5});
  EXPECT_TRUE(e->Measured(JobId(0), JobId(1), 0));
  EXPECT_EQ(e->Colocated(JobId(0), JobId(1), 0), (std::array<double, 2>{1.25, 2.5}));
}

TEST(ThroughputEstimatorTest, RejectsBadOptions) {
  EstimatorOptions o;
  o.models = Models();
  o.profiling_percentage = 1.5;
  EXPECT_FALSE(ThroughputEstimator::Create(ShippedThroughputTable(), o).ok());
  o.profiling_percentage = 0.5;
  o.num_reference_models = 27;
  EXPECT_FALSE(ThroughputEstimator::Create(ShippedThroughputTable(), o).ok());
  o.num_reference_models = 0;
  EXPECT_FALSE(ThroughputEstimator::Create(ShippedThroughputTable(), o).ok());
}

// ---- A hand-worked case of the original's behaviour ----
//
// Three models A, B, C on one GPU type, each 10 steps/s alone; the normalised co-located
// throughput N[i][k] (i's speed next to k, relative to alone) is
//          vs A  vs B  vs C
//     A    0.5   0.5   0.9
//     B    0.1   0.9   0.0
//     C    0.1   0.5   0.9
// With K = 2 the references are sorted(random.Random(seed + 4).sample(range(3), 2)); we use a
// seed for which they are {A, C}, so the reference rows are A = [0.5, 0.9], C = [0.1, 0.9].
// A job of type B profiled fully (P = 1):
//   * the original reads column t·|R| + j of B's full row, i.e. [N_BA, N_BB] = [0.1, 0.9],
//     which is C's reference row exactly: cosine distance 0 to C, so B is matched to C, and a
//     pair (A-job, B-job) is estimated at {N[A][C]·10, N[C][A]·10} = {9, 1};
//   * reading the reference columns, [N_BA, N_BC] = [0.1, 0.0]: cosine distance
//     1 − 0.05/(‖A‖·0.1) = 0.514 to A and 1 − 0.01/(‖C‖·0.1) = 0.890 to C, so B is matched to A
//     and the pair is estimated at {N[A][A]·10, N[A][A]·10} = {5, 5}.
constexpr char kHandTable[] = R"json({"v100": {
  "('A', 1)": {"null": 10, "('A', 1)": [5, 5], "('B', 1)": [5, 1], "('C', 1)": [9, 1]},
  "('B', 1)": {"null": 10, "('A', 1)": [1, 5], "('B', 1)": [9, 9], "('C', 1)": [0, 5]},
  "('C', 1)": {"null": 10, "('A', 1)": [1, 9], "('B', 1)": [5, 0], "('C', 1)": [9, 9]}}})json";

std::uint64_t SeedWithReferencesAandC() {
  for (std::uint64_t seed = 0;; ++seed) {
    PyRandom rng(seed + 4);
    std::vector<std::size_t> refs = rng.SampleIndices(3, 2);
    std::sort(refs.begin(), refs.end());
    if (refs == std::vector<std::size_t>{0, 2}) return seed;
  }
}

TEST(ThroughputEstimatorTest, HandWorkedCaseOfTheOriginalsProfilingQuirk) {
  auto parsed = ThroughputTable::Parse(kHandTable, "hand");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const auto table = std::make_shared<const ThroughputTable>(std::move(parsed).value());
  for (const bool compat : {true, false}) {
    EstimatorOptions o;
    o.models = {"A", "B", "C"};
    o.num_reference_models = 2;
    o.seed = SeedWithReferencesAandC();
    o.compat_gavel = compat;
    auto e = Make(table, o);
    ASSERT_EQ(e->ReferenceTypes(1), (std::vector<JobTypeKey>{{"A", 1}, {"C", 1}}));
    const Result<Match> a = e->AddJob(JobId(0), {"A", 1});
    const Result<Match> b = e->AddJob(JobId(1), {"B", 1});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->reference, (JobTypeKey{"A", 1}));
    EXPECT_EQ(b->reference, (JobTypeKey{compat ? "C" : "A", 1})) << "compat " << compat;
    const std::array<double, 2> pair = e->Colocated(JobId(0), JobId(1), 0);
    // Under compat N is float32 (0.9f · 10 = 8.99999976...).
    EXPECT_NEAR(pair[0], compat ? 9.0 : 5.0, 1e-5);
    EXPECT_NEAR(pair[1], compat ? 1.0 : 5.0, 1e-5);
  }
}

// With P = 0 nothing is profiled; the original completes an all-missing row to zeros (its
// factor is 0 under the ridge) and falls back to random.choice(references) on the same
// generator, after the |R|·types coin flips of the job. The default matches the reference
// closest to the mean reference row instead: ([0.5, 0.9] + [0.1, 0.9]) / 2 = [0.3, 0.9], whose
// cosine distance to A is 0.017 and to C 0.022, so A.
TEST(ThroughputEstimatorTest, HandWorkedFallbackWithoutProfiling) {
  auto parsed = ThroughputTable::Parse(kHandTable, "hand");
  ASSERT_TRUE(parsed.ok());
  const auto table = std::make_shared<const ThroughputTable>(std::move(parsed).value());
  const std::uint64_t seed = SeedWithReferencesAandC();
  for (const bool compat : {true, false}) {
    EstimatorOptions o;
    o.models = {"A", "B", "C"};
    o.num_reference_models = 2;
    o.profiling_percentage = 0.0;
    o.seed = seed;
    o.compat_gavel = compat;
    auto e = Make(table, o);
    PyRandom replay(seed + 4);
    replay.SampleIndices(3, 2);
    for (std::uint64_t j = 0; j < 6; ++j) {
      const Result<Match> m = e->AddJob(JobId(j), {"B", 1});
      ASSERT_TRUE(m.ok());
      EXPECT_TRUE(m->fell_back);
      if (compat) {
        replay.Random();
        replay.Random();
        const char* expected = replay.ChoiceIndex(2) == 0 ? "A" : "C";
        EXPECT_EQ(m->reference, (JobTypeKey{expected, 1})) << "job " << j;
      } else {
        EXPECT_EQ(m->reference, (JobTypeKey{"A", 1}));
      }
    }
  }
}

// Golden matches from the reference implementation: the original's ThroughputEstimator and
// matrix_completion.pmf_solve run under CPython 3.11 and numpy 1.24 on the shipped table
// (np.random.seed(seed), estimator seed + 4), for jobs whose types are model (7j + 3) mod 26 in
// job-table order; each number is the job-table index of the matched reference type.
TEST(ThroughputEstimatorTest, CompatMatchesTheReferenceImplementation) {
  struct Golden {
    std::uint64_t seed;
    int k;
    double p;
    std::vector<int> matches;
  };
  const std::vector<Golden> goldens = {
      {0, 10, 0.5, {7, 4, 9, 4,  3, 2, 9, 2,  15, 22, 22, 22, 0, 22, 4,
                    3, 2, 22, 2, 2, 22, 9, 3, 12, 2,  2,  3,  2, 22, 3}},
      {1, 26, 0.3, {14, 10, 11, 5, 5,  3,  20, 3,  4,  4, 21, 2, 9,  3, 22,
                    3,  11, 18, 24, 6, 13, 20, 18, 8, 15, 10, 3, 10, 7, 24}},
      {2, 6, 0.8, {25, 2, 25, 2, 1, 25, 25, 25, 25, 2, 25, 2, 2, 2, 25,
                   25, 2, 25, 2, 1, 1,  2,  1,  2,  25, 1, 2, 2, 25, 25}},
      {3, 12, 0.0, {1, 1, 20, 2, 11, 21, 1, 6, 4, 4}},
  };
  const std::vector<std::string> models = Models();
  for (const Golden& g : goldens) {
    EstimatorOptions o;
    o.models = models;
    o.compat_gavel = true;
    o.seed = g.seed;
    o.num_reference_models = g.k;
    o.profiling_percentage = g.p;
    auto e = Make(ShippedThroughputTable(), o);
    ASSERT_NE(e, nullptr);
    for (std::size_t j = 0; j < g.matches.size(); ++j) {
      const Result<Match> m =
          e->AddJob(JobId(j), {models[(j * 7 + 3) % models.size()], 1});
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(m->reference.model, models[static_cast<std::size_t>(g.matches[j])])
          << "seed " << g.seed << " K " << g.k << " P " << g.p << " job " << j;
    }
  }
}

}  // namespace
}  // namespace gavel::estimator
