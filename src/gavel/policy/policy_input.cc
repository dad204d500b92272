#include "gavel/policy/policy_input.h"

#include <algorithm>

namespace gavel::policy {

int PolicyInput::TypeIndex(const std::string& gpu_type) const {
  const auto it = std::find(gpu_types.begin(), gpu_types.end(), gpu_type);
  return it == gpu_types.end() ? -1 : static_cast<int>(it - gpu_types.begin());
}

std::optional<std::size_t> PairIndexOf(const PolicyInput& input, std::size_t a, std::size_t b) {
  const JobPair key{static_cast<int>(std::min(a, b)), static_cast<int>(std::max(a, b))};
  const auto it = std::lower_bound(
      input.pairs.begin(), input.pairs.end(), key, [](const JobPair& x, const JobPair& y) {
        return x.first != y.first ? x.first < y.first : x.second < y.second;
      });
  if (it == input.pairs.end() || it->first != key.first || it->second != key.second) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(it - input.pairs.begin());
}

Result<PolicyInput> BuildPolicyInput(const ClusterSnapshot& snapshot, const ThroughputTable* table,
                                     const InputRequirements& requirements) {
  PolicyInput input;
  for (const GpuTypeSpec& type : snapshot.gpu_types) {
    input.gpu_types.push_back(type.name);
    input.gpu_counts.push_back(type.count);
    input.gpus_per_server.push_back(type.gpus_per_server);
  }
  const std::size_t n = input.gpu_types.size();
  const std::size_t m = snapshot.jobs.size();

  for (const auto& [name, weight] : snapshot.entity_weights) {
    input.entities.push_back(name);
    input.entity_weights.push_back(weight);
  }
  for (const JobSpec& job : snapshot.jobs) {
    if (!job.entity.empty() &&
        std::find(input.entities.begin(), input.entities.end(), job.entity) ==
            input.entities.end()) {
      input.entities.push_back(job.entity);
      input.entity_weights.push_back(1.0);
    }
  }
  {  // keep entities sorted, weights alongside
    std::vector<std::size_t> order(input.entities.size());
    for (std::size_t e = 0; e < order.size(); ++e) order[e] = e;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return input.entities[a] < input.entities[b]; });
    std::vector<std::string> names;
    std::vector<double> weights;
    for (std::size_t e : order) {
      names.push_back(input.entities[e]);
      weights.push_back(input.entity_weights[e]);
    }
    input.entities = std::move(names);
    input.entity_weights = std::move(weights);
  }

  if (requirements.instance_costs) {
    for (const std::string& type : input.gpu_types) {
      const auto it = snapshot.instance_costs.find(type);
      if (it == snapshot.instance_costs.end()) {
        return Status::InvalidArgument("instance_costs." + type +
                                       ": this policy needs a price for every GPU type");
      }
      input.instance_costs.push_back(it->second);
    }
  } else if (!snapshot.instance_costs.empty()) {
    for (const std::string& type : input.gpu_types) {
      const auto it = snapshot.instance_costs.find(type);
      input.instance_costs.push_back(it == snapshot.instance_costs.end() ? 1.0 : it->second);
    }
  }

  input.throughput = Matrix(m, n);
  std::vector<int> key_of_job(m, -1);
  std::vector<int> table_type(n, -1);
  if (table != nullptr) {
    for (std::size_t j = 0; j < n; ++j) {
      table_type[j] = table->GpuTypeIndex(input.gpu_types[j]).value_or(-1);
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    const JobSpec& spec = snapshot.jobs[i];
    const std::string where = "job " + spec.id.ToString();
    PolicyJob job;
    job.id = spec.id;
    job.scale_factor = spec.scale_factor;
    job.priority_weight = spec.priority_weight;
    job.time_since_start = spec.time_since_start;
    job.slo_time_left = spec.slo_time_left;
    if (spec.steps_remaining) {
      job.steps_remaining = *spec.steps_remaining;
    } else if (requirements.steps_remaining) {
      return Status::InvalidArgument(where + ": steps_remaining is required by this policy");
    }
    if (!spec.entity.empty()) {
      job.entity = static_cast<int>(
          std::find(input.entities.begin(), input.entities.end(), spec.entity) -
          input.entities.begin());
    }
    if (!spec.job_type.empty()) {
      if (table == nullptr) {
        return Status::FailedPrecondition(where + ": job_type given but no throughput table");
      }
      const auto key = table->KeyIndex(JobTypeKey{spec.job_type, spec.scale_factor});
      if (!key) {
        if (spec.throughputs.empty()) {
          return Status::NotFound(where + ": job type " +
                                  JobTypeKey{spec.job_type, spec.scale_factor}.ToString() +
                                  " is not in the throughput table");
        }
      } else {
        key_of_job[i] = *key;
      }
    }
    // Throughputs given for GPU types the cluster lacks are unused.
    for (std::size_t j = 0; j < n; ++j) {
      double t = 0.0;
      const auto override_it = spec.throughputs.find(input.gpu_types[j]);
      if (override_it != spec.throughputs.end()) {
        t = override_it->second;
      } else if (key_of_job[i] >= 0 && table_type[j] >= 0) {
        t = table->Isolated(table_type[j], key_of_job[i]).value_or(0.0);
      }
      // A job that needs more GPUs than the type has can never be placed there.
      if (spec.scale_factor > static_cast<int>(input.gpu_counts[j])) t = 0.0;
      input.throughput(i, j) = t;
    }
    input.jobs.push_back(job);
  }

  if (requirements.pairs && table != nullptr) {
    // The oversized rule applies before the usability test here: a pair that can share no
    // type it fits on is left out.
    const auto colocated = [&](std::size_t a, std::size_t b,
                               std::span<std::array<double, 2>> per_type) {
      if (key_of_job[a] < 0 || key_of_job[b] < 0) return false;
      for (std::size_t j = 0; j < n; ++j) {
        if (table_type[j] < 0) return false;
        const auto co = table->Colocated(table_type[j], key_of_job[a], key_of_job[b]);
        if (!co) return false;
        std::array<double, 2> tput = *co;
        // Jobs whose own throughputs override the table keep the table's relative slowdown.
        for (int member = 0; member < 2; ++member) {
          const std::size_t job = member == 0 ? a : b;
          const double table_alone =
              table->Isolated(table_type[j], key_of_job[job]).value_or(0.0);
          const double alone = input.throughput(job, j);
          tput[static_cast<std::size_t>(member)] =
              table_alone > 0.0 ? tput[static_cast<std::size_t>(member)] * alone / table_alone
                                : 0.0;
        }
        if (input.jobs[a].scale_factor > static_cast<int>(input.gpu_counts[j])) tput = {0.0, 0.0};
        per_type[j] = tput;
      }
      return true;
    };
    AddSpaceSharingPairs(input, PairOptions{.keep_unusable = requirements.keep_unusable_pairs},
                         colocated);
  } else {
    input.pair_throughput_first = Matrix(0, n);
    input.pair_throughput_second = Matrix(0, n);
  }
  return input;
}

}  // namespace gavel::policy
