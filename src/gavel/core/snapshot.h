// A cluster snapshot: the state a policy allocates for, as `gavel allocate` reads it
// (docs/formats.md). Plain data, validated when parsed; thread-compatible.
//
// Job ids are non-negative integers (as strings or numbers in JSON): the scheduler numbers
// jobs in arrival order and policies such as FIFO rely on that order.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"

namespace gavel {

struct GpuTypeSpec {
  std::string name;         // e.g. "v100"
  int count = 0;            // GPUs of this type; types with 0 GPUs are dropped when parsing
  int gpus_per_server = 1;  // the original's default (1:1:1)
};

struct JobSpec {
  JobId id;
  std::string job_type;  // model name incl. batch size; may be empty if `throughputs` is given
  int scale_factor = 1;  // GPUs the job needs at once
  double priority_weight = 1.0;
  std::optional<double> steps_remaining;  // required by the policies that plan with it
  Seconds time_since_start{0.0};          // now − arrival
  std::optional<Seconds> slo_time_left;   // seconds until the job's deadline; none if no SLO
  std::string entity;                     // owner for hierarchical fairness; may be empty
  // Steps/s of the job alone (whole job, all its GPUs) per GPU type; overrides the table.
  std::map<std::string, double> throughputs;
};

struct ClusterSnapshot {
  std::vector<GpuTypeSpec> gpu_types;            // sorted by name, each with count > 0
  std::map<std::string, double> instance_costs;  // $ per GPU-hour by type; may be empty
  std::map<std::string, double> entity_weights;  // may be empty
  std::vector<JobSpec> jobs;                     // sorted by id, ids unique
  std::string throughputs_file;                  // resolved path; empty = the shipped table
};

// Parses a snapshot. `source_name` prefixes every error (normally the file path); a relative
// `throughputs_file` is resolved against `base_dir` when the file exists there.
Result<ClusterSnapshot> ParseSnapshot(std::string_view json_text, const std::string& source_name,
                                      const std::string& base_dir = "");
Result<ClusterSnapshot> LoadSnapshotFile(const std::string& path);

// Path of the simulation throughput table shipped in data/.
std::string DefaultThroughputsFile();

}  // namespace gavel
