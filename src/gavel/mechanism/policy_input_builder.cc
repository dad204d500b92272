#include "gavel/mechanism/policy_input_builder.h"

#include <algorithm>

namespace gavel::mechanism {

Result<std::vector<int>> TableTypesOf(const ClusterLayout& layout, const ThroughputTable& table) {
  std::vector<int> table_types;
  for (int t = 0; t < layout.num_types(); ++t) {
    const auto index = table.GpuTypeIndex(layout.type_name(t));
    if (!index) {
      return Status::InvalidArgument("GPU type \"" + layout.type_name(t) +
                                     "\" is not in the throughput table");
    }
    table_types.push_back(*index);
  }
  return table_types;
}

std::vector<double> IsolatedThroughputs(const ThroughputTable& table,
                                        const std::vector<int>& table_types, int table_key) {
  std::vector<double> result;
  result.reserve(table_types.size());
  for (int tt : table_types) result.push_back(table.Isolated(tt, table_key).value_or(0.0));
  return result;
}

std::vector<std::vector<double>> ElasticThroughputs(const ThroughputTable& table,
                                                    const std::vector<int>& table_types,
                                                    int table_key, const ElasticSpec& spec) {
  const JobTypeKey& key = table.job_types()[static_cast<std::size_t>(table_key)];
  const std::vector<double> declared = IsolatedThroughputs(table, table_types, table_key);
  const auto counts = static_cast<std::size_t>(spec.max_workers - spec.min_workers + 1);
  std::vector<std::vector<double>> result(counts, std::vector<double>(table_types.size(), 0.0));
  // The table's points: every key of the same model with a positive throughput on the type.
  std::vector<int> same_model;
  for (std::size_t k = 0; k < table.job_types().size(); ++k) {
    if (table.job_types()[k].model == key.model) same_model.push_back(static_cast<int>(k));
  }
  const double own_base =
      spec.scaling.empty() ? 0.0 : InterpolateCurve(spec.scaling, key.scale_factor);
  for (std::size_t t = 0; t < table_types.size(); ++t) {
    std::vector<ScalingPoint> points;
    if (spec.scaling.empty()) {
      for (int k : same_model) {
        const double v = table.Isolated(table_types[t], k).value_or(0.0);
        if (v > 0.0) points.push_back(ScalingPoint{table.job_types()[static_cast<std::size_t>(k)].scale_factor, v});
      }
    }
    for (std::size_t c = 0; c < counts; ++c) {
      const int workers = spec.min_workers + static_cast<int>(c);
      if (workers == key.scale_factor) {
        result[c][t] = declared[t];  // exactly the table's value at the declared count
      } else if (!spec.scaling.empty()) {
        result[c][t] = declared[t] * InterpolateCurve(spec.scaling, workers) / own_base;
      } else {
        result[c][t] = InterpolateCurve(points, workers);
      }
    }
  }
  return result;
}

std::span<const std::array<double, 2>> ColocatedThroughputs(
    const ColocatedMatrix& colocated_table, int key_a, int key_b) {
  const int a = colocated_table.PositionOf(key_a);
  const int b = colocated_table.PositionOf(key_b);
  GAVEL_CHECK(a >= 0 && b >= 0);
  return colocated_table.Row(a, b);
}

policy::PolicyInput BuildPolicyInputForJobs(const ClusterLayout& layout,
                                            const ThroughputTable& table,
                                            const std::vector<int>& table_types,
                                            std::span<const ActiveJobInfo> jobs, Seconds now,
                                            const PolicyInputOptions& options) {
  policy::PolicyInput input;
  const std::size_t n = static_cast<std::size_t>(layout.num_types());
  for (int t = 0; t < layout.num_types(); ++t) {
    input.gpu_types.push_back(layout.type_name(t));
    input.gpu_counts.push_back(layout.gpu_count(t));
    input.gpus_per_server.push_back(layout.gpus_per_server(t));
  }
  input.instance_costs = options.instance_costs;

  const std::size_t m = jobs.size();
  input.throughput = Matrix(m, n);
  input.jobs.reserve(m);
  for (std::size_t i = 0; i < m; ++i) {
    const ActiveJobInfo& job = jobs[i];
    GAVEL_CHECK(i == 0 || jobs[i - 1].id < job.id);
    policy::PolicyJob row;
    row.id = job.id;
    row.scale_factor = job.scale_factor;
    row.priority_weight = job.priority_weight;
    row.steps_remaining = job.steps_remaining;
    row.time_since_start = now - job.arrival;
    if (job.deadline) row.slo_time_left = *job.deadline - now;
    input.jobs.push_back(row);
    GAVEL_CHECK(job.throughputs.empty() || job.throughputs.size() == n);
    for (std::size_t j = 0; j < n; ++j) {
      double tput = job.throughputs.empty()
                        ? table.Isolated(table_types[j], job.table_key).value_or(0.0)
                        : job.throughputs[j];
      if (options.zero_oversized && job.scale_factor > layout.gpu_count(static_cast<int>(j))) {
        tput = 0.0;
      }
      input.throughput(i, j) = tput;
    }
  }

  if (options.pairs) {
    // Each job's position in the dense table, when there is one.
    std::vector<int> position;
    if (options.colocated_table != nullptr && !options.colocated) {
      GAVEL_CHECK(options.colocated_table->table_types() == table_types);
      position.reserve(m);
      for (const ActiveJobInfo& job : jobs) {
        position.push_back(options.colocated_table->PositionOf(job.table_key));
        GAVEL_CHECK(position.back() >= 0 || job.unpairable);
      }
    }
    policy::AddSpaceSharingPairs(
        input,
        policy::PairOptions{.keep_unusable = options.keep_unusable_pairs,
                            .zero_oversized = options.zero_oversized},
        [&](std::size_t a, std::size_t b, std::span<std::array<double, 2>> per_type) {
          if (jobs[a].unpairable || jobs[b].unpairable) return false;
          if (options.colocated) {  // the caller's estimates (ports.h), not the table
            const std::vector<std::array<double, 2>> co = options.colocated(a, b);
            for (std::size_t j = 0; j < n; ++j) per_type[j] = co[j];
            return true;
          }
          // Straight into per_type: this runs for every candidate pair at every reallocation.
          if (!position.empty()) {
            const ColocatedMatrix& dense = *options.colocated_table;
            // Most candidate pairs cannot share a GPU anywhere (out of memory); such a pair
            // would be dropped as unusable after copying its zeros.
            if (!options.keep_unusable_pairs && !dense.Usable(position[a], position[b])) {
              return false;
            }
            const auto row = dense.Row(position[a], position[b]);
            for (std::size_t j = 0; j < n; ++j) per_type[j] = row[j];
            return true;
          }
          for (std::size_t j = 0; j < n; ++j) {
            per_type[j] = table.Colocated(table_types[j], jobs[a].table_key, jobs[b].table_key)
                              .value_or(std::array<double, 2>{0.0, 0.0});
          }
          return true;
        });
  } else {
    input.pair_throughput_first = Matrix(0, n);
    input.pair_throughput_second = Matrix(0, n);
  }
  return input;
}

}  // namespace gavel::mechanism
