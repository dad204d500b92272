// Checks shared by the LP policies' tests (test-only; header-only). They recompute what they
// check from the input and the output alone, independently of the code under test
// (common.h's EffectiveThroughput is deliberately not used).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/shipped_table.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy {

// The shipped simulation table, by reference.
inline const ThroughputTable& ShippedTable() { return *ShippedThroughputTable(); }

// The table's models that have a row for `scale_factor`.
inline std::vector<std::string> ModelsWithScaleFactor(int scale_factor) {
  std::vector<std::string> models;
  for (const JobTypeKey& key : ShippedTable().job_types()) {
    if (key.scale_factor == scale_factor) models.push_back(key.model);
  }
  return models;
}

// A random cluster for the policy tests: k80, p100 and v100 with 1 to `max_gpus_per_type`
// GPUs each (one per server) and a price each; entities team-a (weight 2) and team-b (1).
inline ClusterSnapshot RandomTableCluster(std::mt19937_64& rng, int max_gpus_per_type) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> count(1, max_gpus_per_type);
  ClusterSnapshot snapshot;
  for (const char* type : {"k80", "p100", "v100"}) {
    snapshot.gpu_types.push_back(GpuTypeSpec{type, count(rng), 1});
    snapshot.instance_costs[type] = 0.1 + 3.0 * unit(rng);
  }
  snapshot.entity_weights = {{"team-a", 2.0}, {"team-b", 1.0}};
  return snapshot;
}

// A random job of a table model with `scale_factor` GPUs: priority weight 1 or 2, remaining
// steps, time since start, an SLO for about half, an entity for most.
inline JobSpec RandomTableJob(std::mt19937_64& rng, JobId id, int scale_factor) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  JobSpec job;
  job.id = id;
  job.scale_factor = scale_factor;
  const std::vector<std::string> models = ModelsWithScaleFactor(scale_factor);
  job.job_type = models[static_cast<std::size_t>(unit(rng) * models.size())];
  job.priority_weight = unit(rng) < 0.7 ? 1.0 : 2.0;
  job.steps_remaining = 1000.0 + 1e6 * unit(rng);
  job.time_since_start = Seconds(1e5 * unit(rng));
  if (unit(rng) < 0.5) job.slo_time_left = Seconds(3600.0 + 1e6 * unit(rng));
  if (unit(rng) < 0.7) job.entity = unit(rng) < 0.5 ? "team-a" : "team-b";
  return job;
}

// Job i's throughput under the output: its own cells and its share of every pair it is in.
inline double ThroughputOf(const PolicyInput& input, const PolicyOutput& out, std::size_t i) {
  double total = 0.0;
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    total += input.throughput(i, j) * out.allocation(i, j);
  }
  for (std::size_t p = 0; p < out.pair_allocation.rows(); ++p) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      if (static_cast<std::size_t>(input.pairs[p].first) == i) {
        total += input.pair_throughput_first(p, j) * out.pair_allocation(p, j);
      }
      if (static_cast<std::size_t>(input.pairs[p].second) == i) {
        total += input.pair_throughput_second(p, j) * out.pair_allocation(p, j);
      }
    }
  }
  return total;
}

// Capacity per type, time per job (singles and pairs), entries in [0, 1].
inline void ExpectValidAllocation(const PolicyInput& input, const PolicyOutput& out) {
  ASSERT_EQ(out.allocation.rows(), input.num_jobs());
  ASSERT_EQ(out.allocation.cols(), input.num_types());
  std::vector<double> time(input.num_jobs(), 0.0);
  std::vector<double> used(input.num_types(), 0.0);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const double x = out.allocation(i, j);
      EXPECT_GE(x, 0.0);
      EXPECT_LE(x, 1.0);
      time[i] += x;
      used[j] += input.jobs[i].scale_factor * x;
    }
  }
  for (std::size_t p = 0; p < out.pair_allocation.rows(); ++p) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const double x = out.pair_allocation(p, j);
      EXPECT_GE(x, 0.0);
      EXPECT_LE(x, 1.0);
      time[static_cast<std::size_t>(input.pairs[p].first)] += x;
      time[static_cast<std::size_t>(input.pairs[p].second)] += x;
      used[j] += input.jobs[static_cast<std::size_t>(input.pairs[p].first)].scale_factor * x;
    }
  }
  for (double t : time) EXPECT_LE(t, 1.0 + 1e-6);
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    EXPECT_LE(used[j], input.gpu_counts[j] + 1e-6);
  }
}

}  // namespace gavel::policy
