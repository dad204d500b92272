// Fixtures and checks shared by the policy tests (test-only; header-only): hand-written and
// random problems, and checks that recompute what they check from the input and the output
// alone, independently of the code under test (common.h's EffectiveThroughput is deliberately
// not used).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/shipped_table.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/lp/model.h"
#include "gavel/lp/solver.h"
#include "gavel/policy/policy.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy {

// A problem written by hand: `types` (sorted by name) with `counts` GPUs each, one GPU per
// server; `jobs` as given (sorted by id) with `rows[i][j]` job i's steps/s on type j (entries
// not given are 0); no pairs, entities or prices.
inline PolicyInput MakeInput(std::vector<std::string> types, std::vector<double> counts,
                             std::vector<PolicyJob> jobs,
                             const std::vector<std::vector<double>>& rows) {
  PolicyInput input;
  input.gpu_types = std::move(types);
  input.gpu_counts = std::move(counts);
  input.gpus_per_server.assign(input.gpu_types.size(), 1);
  input.jobs = std::move(jobs);
  input.throughput = Matrix(input.jobs.size(), input.gpu_types.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < rows[i].size(); ++j) input.throughput(i, j) = rows[i][j];
  }
  input.pair_throughput_first = Matrix(0, input.gpu_types.size());
  input.pair_throughput_second = Matrix(0, input.gpu_types.size());
  return input;
}

// One job of a hand-written problem, with its throughput row.
struct TestJob {
  std::uint64_t id = 0;
  int scale_factor = 1;
  std::vector<double> throughput = {};  // steps/s per type, in the problem's type order
  double steps_remaining = 0.0;
  double time_since_start = 0.0;  // seconds
  double priority_weight = 1.0;
  int entity = -1;  // index into PolicyInput::entities; -1 = none
};

// As above, each job with its own row.
inline PolicyInput MakeInput(std::vector<std::string> types, std::vector<double> counts,
                             const std::vector<TestJob>& jobs) {
  std::vector<PolicyJob> policy_jobs;
  std::vector<std::vector<double>> rows;
  for (const TestJob& test_job : jobs) {
    PolicyJob job;
    job.id = JobId(test_job.id);
    job.scale_factor = test_job.scale_factor;
    job.priority_weight = test_job.priority_weight;
    job.steps_remaining = test_job.steps_remaining;
    job.time_since_start = Seconds(test_job.time_since_start);
    job.entity = test_job.entity;
    policy_jobs.push_back(job);
    rows.push_back(test_job.throughput);
  }
  return MakeInput(std::move(types), std::move(counts), std::move(policy_jobs), rows);
}

// Appends the space-sharing pair of job indices a < b with per-type co-located throughputs
// (callers add pairs in (a, b) order, as PolicyInput requires).
inline void AddPair(PolicyInput& input, int a, int b, const std::vector<double>& first,
                    const std::vector<double>& second) {
  input.pairs.push_back({a, b});
  Matrix f(input.pairs.size(), input.num_types());
  Matrix s(input.pairs.size(), input.num_types());
  for (std::size_t p = 0; p + 1 < input.pairs.size(); ++p) {
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      f(p, j) = input.pair_throughput_first(p, j);
      s(p, j) = input.pair_throughput_second(p, j);
    }
  }
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    f(input.pairs.size() - 1, j) = first[j];
    s(input.pairs.size() - 1, j) = second[j];
  }
  input.pair_throughput_first = f;
  input.pair_throughput_second = s;
}

// The policy's allocation for `input`; a failed call fails the test.
inline PolicyOutput Allocated(Policy& policy, const PolicyInput& input) {
  auto result = policy.Allocate(input);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return std::move(result).value();
}

// The type index job i holds (1.0), or -1 when it holds none, for the rule-based policies that
// give each job one whole type or nothing. Fails on fractional entries or more than one type.
inline int TypeOf(const PolicyOutput& out, std::size_t i) {
  int type = -1;
  for (std::size_t j = 0; j < out.allocation.cols(); ++j) {
    const double x = out.allocation(i, j);
    EXPECT_TRUE(x == 0.0 || x == 1.0) << "job " << i << " type " << j << ": " << x;
    if (x == 1.0) {
      EXPECT_EQ(type, -1) << "job " << i << " holds two types";
      type = static_cast<int>(j);
    }
  }
  return type;
}

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

// The base constraints written from scratch for the tests' reference LPs, independently of
// common.h: a column X in [0, 1] per job and type (job i's on type j is i·n + j) and, when
// `packed`, per pair and type (pair p's is m·n + p·n + j), no objective; capacity rows
// Σ s X <= c_j, then time rows Σ X <= 1 per job. thr[k] lists job k's throughput terms: its
// own columns at `believed` (the matrix the policy plans with), its pairs' at the input's
// co-located throughputs.
struct ReferenceLp {
  lp::Model model{lp::Sense::kMaximize};
  std::vector<std::vector<std::pair<int, double>>> thr;  // job k's (column, steps/s)
};

inline ReferenceLp BuildReferenceLp(const PolicyInput& input, const Matrix& believed,
                                    bool packed) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  ReferenceLp ref;
  ref.thr.resize(m);
  std::vector<std::vector<int>> time_cols(m);
  std::vector<std::vector<int>> cap_cols(n);
  std::vector<std::vector<double>> cap_sizes(n);
  const auto add = [&](std::size_t job, int c, double steps_per_second) {
    ref.thr[job].push_back({c, steps_per_second});
    time_cols[job].push_back(c);
  };
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const int c = ref.model.AddColumn(0.0, 1.0);
      add(i, c, believed(i, j));
      cap_cols[j].push_back(c);
      cap_sizes[j].push_back(input.jobs[i].scale_factor);
    }
  }
  for (std::size_t p = 0; packed && p < input.pairs.size(); ++p) {
    const auto a = static_cast<std::size_t>(input.pairs[p].first);
    const auto b = static_cast<std::size_t>(input.pairs[p].second);
    for (std::size_t j = 0; j < n; ++j) {
      const int c = ref.model.AddColumn(0.0, 1.0);
      add(a, c, input.pair_throughput_first(p, j));
      add(b, c, input.pair_throughput_second(p, j));
      cap_cols[j].push_back(c);
      cap_sizes[j].push_back(input.jobs[a].scale_factor);
    }
  }
  for (std::size_t j = 0; j < n; ++j) {
    ref.model.AddRow(-lp::kInfinity, input.gpu_counts[j], cap_cols[j], cap_sizes[j]);
  }
  for (std::size_t i = 0; i < m; ++i) {
    const std::vector<double> ones(time_cols[i].size(), 1.0);
    ref.model.AddRow(-lp::kInfinity, 1.0, time_cols[i], ones);
  }
  return ref;
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

// Round-off allowed by ExpectValidAllocation: a job's time may exceed 1 by `time`, a type's
// GPUs its count by `capacity`.
struct AllocationSlack {
  double time = 1e-6;
  double capacity = 1e-6;
};

// Capacity per type, time per job (singles and pairs), entries in [0, 1].
inline void ExpectValidAllocation(const PolicyInput& input, const PolicyOutput& out,
                                  AllocationSlack slack = {}) {
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
  for (std::size_t i = 0; i < time.size(); ++i) EXPECT_LE(time[i], 1.0 + slack.time) << "job " << i;
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    EXPECT_LE(used[j], input.gpu_counts[j] + slack.capacity) << "type " << j;
  }
}

// A session that passes every call on to `inner`: tests' solver wrappers derive from it and
// override the calls they watch or alter.
class ForwardingSession : public lp::Session {
 public:
  explicit ForwardingSession(std::unique_ptr<lp::Session> inner) : inner_(std::move(inner)) {}
  Result<lp::Solution> Solve() override { return inner_->Solve(); }
  void SetObjective(int column, double c) override { inner_->SetObjective(column, c); }
  void SetColumnBounds(int column, double lo, double hi) override {
    inner_->SetColumnBounds(column, lo, hi);
  }
  void SetRowBounds(int row, double lo, double hi) override { inner_->SetRowBounds(row, lo, hi); }
  int AddColumn(double lower, double upper, double objective, std::span<const int> rows,
                std::span<const double> coefficients) override {
    return inner_->AddColumn(lower, upper, objective, rows, coefficients);
  }
  int AddRow(double lower, double upper, std::span<const int> columns,
             std::span<const double> coefficients) override {
    return inner_->AddRow(lower, upper, columns, coefficients);
  }
  int AddColumns(const lp::ColumnBatch& batch) override { return inner_->AddColumns(batch); }
  void SetStartPoint(std::span<const double> values) override { inner_->SetStartPoint(values); }

 private:
  std::unique_ptr<lp::Session> inner_;
};

}  // namespace gavel::policy
