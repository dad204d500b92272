// MaxThroughputAlone (common.h), the bound that scales a job's rows, against the LP it
// solves greedily, solved by GLPK (the oracle): maximise Σ_j best_j x_j subject to
// Σ_j x_j <= 1 and 0 <= x_j <= c_j / s, best_j the job's steps/s on type j alone or in the
// best of its pairs. Type counts on both sides of the helpers' stack scratch (16 types).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gavel/lp/glpk_solver.h"
#include "gavel/policy/common.h"
#include "gavel/policy/policy_test_support.h"

namespace gavel::policy {
namespace {

TEST(MaxThroughputAloneTest, EqualsTheLpOptimumForFewAndManyTypes) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> speed(0.1, 10.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const std::size_t n : {1, 3, 16, 17, 40}) {
    for (int trial = 0; trial < 10; ++trial) {
      SCOPED_TRACE(testing::Message() << n << " types, trial " << trial);
      std::vector<std::string> types;
      std::vector<double> counts;
      for (std::size_t j = 0; j < n; ++j) {
        types.push_back(std::to_string(100 + j));  // names sorted, as PolicyInput requires
        counts.push_back(static_cast<double>(rng() % 3));  // 0: the type has no GPUs
      }
      std::vector<TestJob> jobs;
      for (std::uint64_t i = 0; i < 3; ++i) {
        TestJob job{.id = i, .scale_factor = 1 + static_cast<int>(rng() % 2)};
        for (std::size_t j = 0; j < n; ++j) {
          job.throughput.push_back(unit(rng) < 0.3 ? 0.0 : speed(rng));
        }
        jobs.push_back(job);
      }
      PolicyInput input = MakeInput(types, counts, jobs);
      // Job 0 is the first member of pairs (0, 1) and (0, 2), at co-located rates that
      // sometimes beat its rate alone (and are 0 on about half the types).
      for (int partner : {1, 2}) {
        std::vector<double> first;
        std::vector<double> second;
        for (std::size_t j = 0; j < n; ++j) {
          first.push_back(unit(rng) < 0.5 ? 0.0 : speed(rng));
          second.push_back(speed(rng));
        }
        AddPair(input, 0, partner, first, second);
      }
      for (std::size_t job = 0; job < jobs.size(); ++job) {
        SCOPED_TRACE(job);
        const std::vector<int> pairs = job == 0 ? std::vector<int>{0, 1} : std::vector<int>{};
        lp::Model model(lp::Sense::kMaximize);
        std::vector<int> columns;
        for (std::size_t j = 0; j < n; ++j) {
          double best = input.throughput(job, j);
          for (int p : pairs) {
            best = std::max(best, input.pair_throughput_first(static_cast<std::size_t>(p), j));
          }
          columns.push_back(model.AddColumn(
              0.0, counts[j] / static_cast<double>(input.jobs[job].scale_factor), best));
        }
        model.AddRow(0.0, 1.0, columns, std::vector<double>(n, 1.0));
        const auto truth = lp::MakeGlpkSolver()->Solve(model);
        ASSERT_TRUE(truth.ok()) << truth.status().ToString();
        ASSERT_EQ(truth->outcome, lp::Outcome::kOptimal);
        EXPECT_NEAR(MaxThroughputAlone(input, input.throughput, pairs, job), truth->objective,
                    1e-9 * std::max(1.0, truth->objective));
      }
    }
  }
}

}  // namespace
}  // namespace gavel::policy
