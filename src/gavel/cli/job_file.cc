#include "gavel/cli/job_file.h"

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "gavel/core/bounds.h"
#include "gavel/core/utility.h"

namespace gavel::cli {

using nlohmann::json;

Status CheckSpecBounds(const wire::JobSpec& spec, const FieldNamer& name) {
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(static_cast<double>(spec.total_steps()), 1,
                                           bounds::kMaxSteps, name("steps")));
  GAVEL_RETURN_IF_ERROR(
      bounds::CheckRange(spec.scale_factor(), 1, bounds::kMaxGpus, name("scale_factor")));
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(spec.priority_weight(), bounds::kMinWeight,
                                           bounds::kMaxWeight, name("priority_weight")));
  for (const auto& [type, rate] : spec.throughputs()) {
    GAVEL_RETURN_IF_ERROR(bounds::CheckThroughput(rate, name("throughputs." + type)));
  }
  GAVEL_RETURN_IF_ERROR(
      bounds::CheckRange(spec.cpus_per_gpu(), 0.0, bounds::kMaxHostCpus, name("cpus_per_gpu")));
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(spec.mem_gb_per_gpu(), 0.0, bounds::kMaxHostMemGb,
                                           name("mem_gb_per_gpu"), " GB"));
  return Status::Ok();
}

Status SetSpecUtility(const std::string& text, const std::string& where, wire::JobSpec* spec) {
  Result<UtilityFunction> utility = ParseUtility(text);
  if (!utility.ok()) return utility.status().WithContext(where);
  wire::JobUtility* u = spec->mutable_utility();
  u->set_family(utility->family == UtilityFamily::kSigmoid ? wire::JobUtility::SIGMOID
                                                           : wire::JobUtility::LINEAR);
  u->set_value(utility->value);
  u->set_time_s(utility->midpoint);
  if (utility->family == UtilityFamily::kSigmoid) u->set_steepness(utility->steepness);
  return Status::Ok();
}

Result<std::vector<wire::JobSpec>> ParseJobFile(const std::string& text,
                                                const std::string& source_name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(source_name + ": not JSON: " + e.what());
  }
  if (doc.is_object() && doc.contains("jobs")) doc = doc["jobs"];
  if (doc.is_object()) doc = json::array({doc});
  if (!doc.is_array() || doc.empty()) {
    return Status::InvalidArgument(source_name +
                                   ": expected a job object, a list of them, or {\"jobs\": [...]}");
  }
  std::vector<wire::JobSpec> specs;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& job = doc[i];
    const std::string where = source_name + ": job " + std::to_string(i);
    if (!job.is_object()) return Status::InvalidArgument(where + ": not an object");
    wire::JobSpec spec;
    spec.set_scale_factor(1);
    spec.set_priority_weight(1.0);
    spec.set_job_type("ResNet-18 (batch size 64)");
    bool has_steps = false;
    auto field_error = [&](const std::string& key, const std::string& want) {
      return Status::InvalidArgument(where + ", field " + key + ": expected " + want);
    };
    for (const auto& [key, value] : job.items()) {
      if (key == "command") {
        if (!value.is_array() || value.empty()) return field_error(key, "a list of strings");
        for (const json& arg : value) {
          if (!arg.is_string()) return field_error(key, "a list of strings");
          spec.add_command(arg.get<std::string>());
        }
      // Inline: only what the type needs (an integer that the proto field holds without
      // wrapping); CheckSpecBounds below holds every number to its range.
      } else if (key == "steps" || key == "total_steps") {
        if (!value.is_number_unsigned()) return field_error(key, "a positive integer");
        spec.set_total_steps(value.get<std::uint64_t>());
        has_steps = true;
      } else if (key == "scale_factor") {
        if (!value.is_number_unsigned() ||
            value.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
          return field_error(key, "an integer in [1, " + std::to_string(bounds::kMaxGpus) + "]");
        }
        spec.set_scale_factor(value.get<std::uint32_t>());
      } else if (key == "job_type" || key == "name" || key == "entity" ||
                 key == "working_directory" || key == "app" || key == "utility") {
        if (!value.is_string()) return field_error(key, "a string");
        const std::string s = value.get<std::string>();
        if (key == "utility") GAVEL_RETURN_IF_ERROR(SetSpecUtility(s, where + ", field utility", &spec));
        if (key == "app") spec.set_app(s);
        if (key == "job_type") spec.set_job_type(s);
        if (key == "name") spec.set_name(s);
        if (key == "entity") spec.set_entity(s);
        if (key == "working_directory") spec.set_working_directory(s);
      } else if (key == "priority_weight") {
        if (!value.is_number()) return field_error(key, "a positive number");
        spec.set_priority_weight(value.get<double>());
      } else if (key == "cpus_per_gpu" || key == "mem_gb_per_gpu") {
        if (!value.is_number()) return field_error(key, "a non-negative number");
        (key == "cpus_per_gpu" ? spec.set_cpus_per_gpu(value.get<double>())
                               : spec.set_mem_gb_per_gpu(value.get<double>()));
      } else if (key == "throughputs") {
        if (!value.is_object()) return field_error(key, "an object {gpu type: steps/s}");
        for (const auto& [type, rate] : value.items()) {
          if (!rate.is_number()) return field_error(key + "." + type, "a non-negative number");
          (*spec.mutable_throughputs())[type] = rate.get<double>();
        }
      } else if (key == "env") {
        if (!value.is_object()) return field_error(key, "an object {name: value}");
        for (const auto& [name, v] : value.items()) {
          if (!v.is_string()) return field_error(key + "." + name, "a string");
          (*spec.mutable_env())[name] = v.get<std::string>();
        }
      } else {
        return Status::InvalidArgument(where + ": unknown field `" + key +
                                       "` (command, steps, scale_factor, job_type, "
                                       "priority_weight, entity, throughputs, name, "
                                       "working_directory, env, app, utility, "
                                       "cpus_per_gpu, mem_gb_per_gpu)");
      }
    }
    if (spec.command_size() == 0) return field_error("command", "a list of strings (missing)");
    if (!has_steps) return field_error("steps", "a positive integer (missing)");
    GAVEL_RETURN_IF_ERROR(CheckSpecBounds(
        spec, [&where](const std::string& field) { return where + ", field " + field; }));
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace gavel::cli
