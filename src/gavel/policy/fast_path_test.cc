// The fast path (per-job decomposition, fast_path.h) against the general path (the whole LP
// on Clp) for every LP policy without space sharing, on random inputs with ties, multi-GPU
// jobs, unrunnable cells, priorities, entities, deadlines and prices. Both must reach the
// same optimum (1e-6 relative); where the optimum is a vector (water filling's levels) every
// job's value must agree; and the fast path's allocation must itself attain the optimum it
// reports (recomputed here from the allocation alone).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gavel/policy/policy_test_support.h"
#include "gavel/policy/registry.h"

namespace gavel::policy {
namespace {

constexpr double kRelative = 1e-6;

double Tolerance(double value) { return kRelative * std::max(1.0, std::abs(value)); }

PolicyInput RandomInput(std::mt19937_64& rng, std::size_t num_jobs, std::size_t num_types) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  PolicyInput input;
  for (std::size_t j = 0; j < num_types; ++j) {
    input.gpu_types.push_back("type" + std::to_string(j));
    input.gpu_counts.push_back(std::floor(1.0 + unit(rng) * (1.0 + num_jobs / 2.0)));
    input.gpus_per_server.push_back(1);
    input.instance_costs.push_back(0.3 + 3.0 * unit(rng));
  }
  const std::size_t num_entities = static_cast<std::size_t>(unit(rng) * 3.0);
  for (std::size_t e = 0; e < num_entities; ++e) {
    input.entities.push_back("entity" + std::to_string(e));
    input.entity_weights.push_back(1.0 + std::floor(unit(rng) * 3.0));
  }
  // A few models, so that jobs tie as real job mixes do.
  const std::size_t models = 1 + num_jobs / 4;
  Matrix model_speed(models, num_types);
  for (double& v : model_speed.data()) v = unit(rng) < 0.1 ? 0.0 : 0.5 + 20.0 * unit(rng);
  input.throughput = Matrix(num_jobs, num_types);
  for (std::size_t i = 0; i < num_jobs; ++i) {
    PolicyJob job;
    job.id = JobId(static_cast<JobId::rep_type>(i));
    const double draw = unit(rng);
    job.scale_factor = draw < 0.7 ? 1 : (draw < 0.9 ? 2 : 4);
    job.priority_weight = unit(rng) < 0.7 ? 1.0 : (unit(rng) < 0.5 ? 2.0 : 0.5);
    job.steps_remaining = unit(rng) < 0.05 ? 0.0 : 100.0 + 1e5 * unit(rng);
    job.time_since_start = Seconds(unit(rng) < 0.3 ? 0.0 : 1e4 * unit(rng));
    if (unit(rng) < 0.4) job.slo_time_left = Seconds(100.0 + 2e4 * unit(rng));
    if (num_entities > 0) job.entity = static_cast<int>(unit(rng) * num_entities);
    const std::size_t model = std::min(models - 1, static_cast<std::size_t>(unit(rng) * models));
    for (std::size_t j = 0; j < num_types; ++j) {
      const bool fits = job.scale_factor <= input.gpu_counts[j];
      input.throughput(i, j) = fits ? model_speed(model, j) * job.scale_factor : 0.0;
    }
    input.jobs.push_back(job);
  }
  return input;
}

// The two paths solve the same LP; max-min fairness is compared over every job, so its
// sharing floor (which leaves the youngest jobs out of the LP) is off.
std::unique_ptr<Policy> Make(const std::string& name, SolvePath path) {
  PolicyOptions options;
  options.solve_path = path;
  auto policy = MakePolicy(name == "max_min_fairness_perf" ? name + ":share_floor=0" : name,
                           options);
  EXPECT_TRUE(policy.ok()) << name;
  return std::move(policy).value();
}

// prop_i = Σ_j T[i][j] c_j / Σ_t c_t.
double Proportional(const PolicyInput& input, std::size_t i) {
  double total = 0.0, gpus = 0.0;
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    total += input.throughput(i, j) * input.gpu_counts[j];
    gpus += input.gpu_counts[j];
  }
  return total / gpus;
}

// What the objective of each policy is, recomputed from an allocation (first call only for
// finish-time fairness: no isolated time accumulated yet).
double MaxMinOf(const PolicyInput& input, const PolicyOutput& out) {
  double worst = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    const double prop = Proportional(input, i);
    if (prop <= 0.0) continue;
    const PolicyJob& job = input.jobs[i];
    worst = std::min(worst, ThroughputOf(input, out, i) * job.scale_factor /
                                (job.priority_weight * prop));
  }
  return worst;
}

double MakespanOf(const PolicyInput& input, const PolicyOutput& out) {
  double longest = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    if (input.jobs[i].steps_remaining <= 0.0 || Proportional(input, i) <= 0.0) continue;
    longest = std::max(longest, input.jobs[i].steps_remaining / ThroughputOf(input, out, i));
  }
  return longest;
}

double SumThroughputOf(const PolicyInput& input, const PolicyOutput& out, bool per_cost) {
  double total = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      total += input.throughput(i, j) * out.allocation(i, j) /
               (per_cost ? input.instance_costs[j] : 1.0);
    }
  }
  return total;
}

// max_i ρ_i on a first call: ρ_i = (a_i + R_i w_i / thr_i) / (R_i / iso_i), iso_i the
// throughput on an equal 1/m share of every type (rows scaled down to at most 1).
double MaxRhoOf(const PolicyInput& input, const PolicyOutput& out) {
  const double m = static_cast<double>(input.num_jobs());
  double worst = 0.0;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    const PolicyJob& job = input.jobs[i];
    double row = 0.0, iso = 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) row += input.gpu_counts[j] / (m * job.scale_factor);
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      iso += input.throughput(i, j) * input.gpu_counts[j] / (m * job.scale_factor) /
             std::max(1.0, row);
    }
    if (job.steps_remaining <= 0.0 || iso <= 0.0) continue;
    const double thr = ThroughputOf(input, out, i);
    worst = std::max(worst, (job.time_since_start.value() +
                             job.steps_remaining * job.priority_weight / thr) /
                                (job.steps_remaining / iso));
  }
  return worst;
}

class FastPathTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FastPathTest, ReachesTheGeneralPathsOptimum) {
  const std::string name = GetParam();
  std::mt19937_64 rng(std::hash<std::string>{}(name) ^ 0x5eed);
  int compared = 0;
  for (std::size_t num_jobs : {1, 2, 5, 12, 40}) {
    for (std::size_t num_types : {1, 3, 4}) {
      for (int rep = 0; rep < 4; ++rep) {
        SCOPED_TRACE(name + " jobs " + std::to_string(num_jobs) + " types " +
                     std::to_string(num_types) + " rep " + std::to_string(rep));
        const PolicyInput input = RandomInput(rng, num_jobs, num_types);
        auto fast = Make(name, SolvePath::kFast)->Allocate(input);
        auto general = Make(name, SolvePath::kGeneral)->Allocate(input);
        ASSERT_TRUE(general.ok()) << general.status().ToString();
        ASSERT_TRUE(fast.ok()) << fast.status().ToString();
        // The fast path answered itself (it notes a fall back to the general path).
        EXPECT_EQ(fast->note.find("fast path failed"), std::string::npos) << fast->note;
        ExpectValidAllocation(input, *fast);
        EXPECT_EQ(fast->status, general->status) << general->note;
        ASSERT_EQ(fast->objective.has_value(), general->objective.has_value());
        if (!general->objective.has_value()) continue;
        const double optimum = *general->objective;
        EXPECT_NEAR(*fast->objective, optimum, Tolerance(optimum));
        ++compared;

        const bool any_runs = std::any_of(input.throughput.data().begin(),
                                          input.throughput.data().end(),
                                          [](double t) { return t > 0.0; });
        if (!any_runs || general->status != AllocationStatus::kOptimal) continue;
        if (name == "max_min_fairness_perf") {
          EXPECT_NEAR(MaxMinOf(input, *fast), optimum, Tolerance(optimum));
        } else if (name == "min_total_duration_perf" && optimum > 0.0) {
          EXPECT_NEAR(MakespanOf(input, *fast), optimum, Tolerance(optimum));
        } else if (name == "max_sum_throughput_perf" ||
                   name.starts_with("max_sum_throughput_normalized_by_cost")) {
          EXPECT_NEAR(SumThroughputOf(input, *fast, name != "max_sum_throughput_perf"), optimum,
                      Tolerance(optimum));
        } else if (name == "finish_time_fairness_perf") {
          EXPECT_NEAR(MaxRhoOf(input, *fast), optimum, Tolerance(optimum))
              << "general reaches " << MaxRhoOf(input, *general) << " fast reports "
              << *fast->objective;
        } else if (name.starts_with("max_min_fairness_water_filling")) {
          // The leximin point is unique: every job's normalised throughput agrees (what the
          // policy believes: time on the types it can use, for the agnostic variant).
          const bool agnostic = name == "max_min_fairness_water_filling";
          auto believed = [&](const PolicyOutput& out, std::size_t i) {
            if (!agnostic) return ThroughputOf(input, out, i);
            double time = 0.0;
            for (std::size_t j = 0; j < input.num_types(); ++j) {
              if (input.throughput(i, j) > 0.0) time += out.allocation(i, j);
            }
            return time;
          };
          for (std::size_t i = 0; i < input.num_jobs(); ++i) {
            const double want = believed(*general, i);
            EXPECT_NEAR(believed(*fast, i), want, Tolerance(want)) << "job " << i;
          }
        }
      }
    }
  }
  EXPECT_GE(compared, 40);
}

// Finish-time fairness carries state across calls (isolated time credited for progress):
// both paths must agree call after call as jobs progress and arrive.
TEST(FastPathStatefulTest, FinishTimeFairnessAgreesAcrossCalls) {
  std::mt19937_64 rng(99);
  for (const std::string name : {"finish_time_fairness", "finish_time_fairness_perf"}) {
    auto fast = Make(name, SolvePath::kFast);
    auto general = Make(name, SolvePath::kGeneral);
    PolicyInput input = RandomInput(rng, 30, 3);
    for (int call = 0; call < 5; ++call) {
      SCOPED_TRACE(name + " call " + std::to_string(call));
      auto a = fast->Allocate(input);
      auto b = general->Allocate(input);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_TRUE(a->objective.has_value() && b->objective.has_value());
      EXPECT_NEAR(*a->objective, *b->objective, Tolerance(*b->objective));
      // Progress as the general path's allocation says, for 360 s; time passes.
      for (std::size_t i = 0; i < input.num_jobs(); ++i) {
        PolicyJob& job = input.jobs[i];
        job.steps_remaining = std::max(0.0, job.steps_remaining - 360.0 * ThroughputOf(input, *b, i));
        job.time_since_start = Seconds(job.time_since_start.value() + 360.0);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    LpPolicies, FastPathTest,
    ::testing::Values("max_min_fairness", "max_min_fairness_perf", "min_total_duration",
                      "min_total_duration_perf", "max_sum_throughput_perf",
                      "max_sum_throughput_normalized_by_cost_perf",
                      "max_sum_throughput_normalized_by_cost_perf_SLOs", "finish_time_fairness",
                      "finish_time_fairness_perf", "max_min_fairness_water_filling",
                      "max_min_fairness_water_filling_perf"),
    [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace gavel::policy
