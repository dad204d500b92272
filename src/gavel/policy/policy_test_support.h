// Checks shared by the LP policies' tests (test-only; header-only). They recompute what they
// check from the input and the output alone, independently of the code under test
// (common.h's EffectiveThroughput is deliberately not used).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/check.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy {

// The shipped simulation table (DefaultThroughputsFile()), loaded once.
inline const ThroughputTable& ShippedTable() {
  static const ThroughputTable table = [] {
    auto loaded = ThroughputTable::LoadFile(DefaultThroughputsFile());
    GAVEL_CHECK_MSG(loaded.ok(), loaded.status().ToString().c_str());
    return std::move(loaded).value();
  }();
  return table;
}

// The table's models that have a row for `scale_factor`.
inline std::vector<std::string> ModelsWithScaleFactor(int scale_factor) {
  std::vector<std::string> models;
  for (const JobTypeKey& key : ShippedTable().job_types()) {
    if (key.scale_factor == scale_factor) models.push_back(key.model);
  }
  return models;
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
