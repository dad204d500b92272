#include "gavel/core/snapshot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"
#include "gavel/core/shipped_data.h"

namespace gavel {
namespace {

using nlohmann::json;

Result<double> ReadNumber(const json& obj, const char* field, const std::string& where) {
  const json& v = obj.at(field);
  if (!v.is_number()) return Status::InvalidArgument(where + "." + field + ": expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) return Status::InvalidArgument(where + "." + field + ": must be finite");
  return d;
}

Result<int> ReadPositiveInt(const json& v, const std::string& where) {
  if (!v.is_number_integer() && !(v.is_number() && std::floor(v.get<double>()) == v.get<double>())) {
    return Status::InvalidArgument(where + ": expected an integer, got " + v.dump());
  }
  const double d = v.get<double>();
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(d, 0, bounds::kMaxGpus, where));
  return static_cast<int>(d);
}

Result<JobId> ReadJobId(const json& v, const std::string& where) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_number_unsigned()) {
    return JobId(v.get<std::uint64_t>());
  } else {
    return Status::InvalidArgument(where + ".id: expected a non-negative integer, got " + v.dump());
  }
  const std::optional<std::uint64_t> id = ParseUint64(text);
  if (!id) {
    return Status::InvalidArgument(where + ".id: expected a non-negative integer, got \"" + text +
                                   "\"");
  }
  return JobId(*id);
}

// The value checks ReadNumberMap takes (docs/formats.md, "Bounds").
using NumberCheck = Status (*)(double value, const std::string& where);

// A price in $/hour: positive (a free GPU type would make every cost ratio infinite) and at
// most kMaxPrice.
Status CheckInstanceCost(double price, const std::string& where) {
  if (price == 0.0) return Status::InvalidArgument(where + ": must be positive");
  return bounds::CheckRange(price, 0, bounds::kMaxPrice, where, " $/hour");
}

Status CheckEntityWeight(double weight, const std::string& where) {
  return bounds::CheckRange(weight, bounds::kMinWeight, bounds::kMaxWeight, where);
}

// `check` bounds each value.
Result<std::map<std::string, double>> ReadNumberMap(const json& v, const std::string& where,
                                                    NumberCheck check) {
  if (!v.is_object()) return Status::InvalidArgument(where + ": expected an object");
  std::map<std::string, double> out;
  for (const auto& [key, value] : v.items()) {
    const std::string key_where = where + "." + key;
    if (!value.is_number()) return Status::InvalidArgument(key_where + ": expected a number");
    const double d = value.get<double>();
    GAVEL_RETURN_IF_ERROR(check(d, key_where));
    out[key] = d;
  }
  return out;
}

Result<JobSpec> ReadJob(const json& j, const std::string& where) {
  if (!j.is_object()) return Status::InvalidArgument(where + ": expected an object");
  static const std::set<std::string> kKnown = {
      "id", "job_type", "scale_factor", "priority_weight", "steps_remaining",
      "time_since_start", "throughputs", "slo", "entity", "total_steps", "command"};
  for (const auto& [key, value] : j.items()) {
    if (!kKnown.contains(key)) return Status::InvalidArgument(where + "." + key + ": unknown field");
  }
  JobSpec job;
  if (!j.contains("id")) return Status::InvalidArgument(where + ".id: required");
  GAVEL_ASSIGN_OR_RETURN(job.id, ReadJobId(j.at("id"), where));
  const std::string named = where + " (id " + job.id.ToString() + ")";
  if (!j.contains("scale_factor")) {
    return Status::InvalidArgument(named + ".scale_factor: required");
  }
  GAVEL_ASSIGN_OR_RETURN(job.scale_factor,
                         ReadPositiveInt(j.at("scale_factor"), named + ".scale_factor"));
  if (job.scale_factor < 1) {
    return Status::InvalidArgument(named + ".scale_factor: must be at least 1");
  }
  if (j.contains("job_type") && !j.at("job_type").is_null()) {
    if (!j.at("job_type").is_string()) {
      return Status::InvalidArgument(named + ".job_type: expected a string");
    }
    job.job_type = j.at("job_type").get<std::string>();
  }
  if (j.contains("priority_weight")) {
    GAVEL_ASSIGN_OR_RETURN(job.priority_weight, ReadNumber(j, "priority_weight", named));
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(job.priority_weight, bounds::kMinWeight,
                                             bounds::kMaxWeight, named + ".priority_weight"));
  }
  if (j.contains("steps_remaining") && !j.at("steps_remaining").is_null()) {
    GAVEL_ASSIGN_OR_RETURN(const double steps, ReadNumber(j, "steps_remaining", named));
    GAVEL_RETURN_IF_ERROR(
        bounds::CheckRange(steps, 0, bounds::kMaxSteps, named + ".steps_remaining"));
    job.steps_remaining = steps;
  }
  if (j.contains("time_since_start")) {
    GAVEL_ASSIGN_OR_RETURN(const double t, ReadNumber(j, "time_since_start", named));
    GAVEL_RETURN_IF_ERROR(
        bounds::CheckRange(t, 0, bounds::kMaxSeconds, named + ".time_since_start", " s"));
    job.time_since_start = Seconds(t);
  }
  if (j.contains("slo") && !j.at("slo").is_null()) {
    GAVEL_ASSIGN_OR_RETURN(const double slo, ReadNumber(j, "slo", named));
    if (slo <= 0) {
      return Status::InvalidArgument(named + ".slo: seconds until the deadline must be positive");
    }
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(slo, 0, bounds::kMaxSeconds, named + ".slo", " s"));
    job.slo_time_left = Seconds(slo);
  }
  if (j.contains("entity") && !j.at("entity").is_null()) {
    if (!j.at("entity").is_string()) {
      return Status::InvalidArgument(named + ".entity: expected a string");
    }
    job.entity = j.at("entity").get<std::string>();
  }
  if (j.contains("throughputs") && !j.at("throughputs").is_null()) {
    GAVEL_ASSIGN_OR_RETURN(job.throughputs,
                           ReadNumberMap(j.at("throughputs"), named + ".throughputs",
                                         bounds::CheckThroughput));
  }
  if (job.job_type.empty() && job.throughputs.empty()) {
    return Status::InvalidArgument(named + ": needs a job_type or throughputs");
  }
  return job;
}

}  // namespace

std::string DefaultThroughputsFile() {
  return ShippedDataFile("simulation_throughputs.json");
}

Result<ClusterSnapshot> ParseSnapshot(std::string_view json_text, const std::string& source_name,
                                      const std::string& base_dir) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e999).
    return Status::InvalidArgument(source_name + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) return Status::InvalidArgument(source_name + ": expected an object");
  static const std::set<std::string> kKnown = {"cluster", "gpus_per_server", "throughputs_file",
                                               "entity_weights", "instance_costs", "jobs"};
  for (const auto& [key, value] : root.items()) {
    if (!kKnown.contains(key)) {
      return Status::InvalidArgument(source_name + ": " + key + ": unknown field");
    }
  }
  ClusterSnapshot snapshot;

  if (!root.contains("cluster")) return Status::InvalidArgument(source_name + ": cluster: required");
  const json& cluster = root.at("cluster");
  if (!cluster.is_object() || cluster.empty()) {
    return Status::InvalidArgument(source_name + ": cluster: expected an object of GPU counts");
  }
  for (const auto& [name, count] : cluster.items()) {
    GAVEL_ASSIGN_OR_RETURN(const int gpus,
                           ReadPositiveInt(count, source_name + ": cluster." + name));
    if (name.empty()) return Status::InvalidArgument(source_name + ": cluster: empty GPU type");
    // A type with no GPUs is never registered (as in the original): it cannot run anything.
    if (gpus > 0) snapshot.gpu_types.push_back(GpuTypeSpec{name, gpus, 1});
  }
  if (snapshot.gpu_types.empty()) {
    return Status::InvalidArgument(source_name + ": cluster: no GPU type has any GPUs");
  }
  if (root.contains("gpus_per_server")) {
    const json& per_server = root.at("gpus_per_server");
    if (!per_server.is_object()) {
      return Status::InvalidArgument(source_name + ": gpus_per_server: expected an object");
    }
    for (const auto& [name, count] : per_server.items()) {
      const std::string where = source_name + ": gpus_per_server." + name;
      GAVEL_ASSIGN_OR_RETURN(const int n, ReadPositiveInt(count, where));
      if (n < 1) return Status::InvalidArgument(where + ": must be at least 1");
      if (!cluster.contains(name)) {
        return Status::InvalidArgument(where + ": not a GPU type of the cluster");
      }
      for (auto& type : snapshot.gpu_types) {
        if (type.name == name) type.gpus_per_server = n;
      }
    }
  }
  std::sort(snapshot.gpu_types.begin(), snapshot.gpu_types.end(),
            [](const GpuTypeSpec& a, const GpuTypeSpec& b) { return a.name < b.name; });

  if (root.contains("instance_costs")) {
    GAVEL_ASSIGN_OR_RETURN(snapshot.instance_costs,
                           ReadNumberMap(root.at("instance_costs"),
                                         source_name + ": instance_costs", CheckInstanceCost));
  }
  if (root.contains("entity_weights")) {
    GAVEL_ASSIGN_OR_RETURN(snapshot.entity_weights,
                           ReadNumberMap(root.at("entity_weights"),
                                         source_name + ": entity_weights", CheckEntityWeight));
  }
  if (root.contains("throughputs_file") && !root.at("throughputs_file").is_null()) {
    if (!root.at("throughputs_file").is_string()) {
      return Status::InvalidArgument(source_name + ": throughputs_file: expected a string");
    }
    std::filesystem::path path = root.at("throughputs_file").get<std::string>();
    if (path.is_relative() && !base_dir.empty() &&
        std::filesystem::exists(std::filesystem::path(base_dir) / path)) {
      path = std::filesystem::path(base_dir) / path;
    }
    snapshot.throughputs_file = path.string();
  }

  if (!root.contains("jobs")) return Status::InvalidArgument(source_name + ": jobs: required");
  const json& jobs = root.at("jobs");
  if (!jobs.is_array()) return Status::InvalidArgument(source_name + ": jobs: expected an array");
  if (jobs.size() > bounds::kMaxJobs) {
    return Status::InvalidArgument(source_name + ": jobs: more than " +
                                   std::to_string(bounds::kMaxJobs) + " jobs");
  }
  std::set<JobId> seen;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    GAVEL_ASSIGN_OR_RETURN(JobSpec job,
                           ReadJob(jobs[i], source_name + ": jobs[" + std::to_string(i) + "]"));
    if (!seen.insert(job.id).second) {
      return Status::InvalidArgument(source_name + ": jobs[" + std::to_string(i) + "].id: " +
                                     job.id.ToString() + " appears twice");
    }
    snapshot.jobs.push_back(std::move(job));
  }
  std::sort(snapshot.jobs.begin(), snapshot.jobs.end(),
            [](const JobSpec& a, const JobSpec& b) { return a.id < b.id; });
  return snapshot;
}

Result<ClusterSnapshot> LoadSnapshotFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot open snapshot " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseSnapshot(buffer.str(), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace gavel
