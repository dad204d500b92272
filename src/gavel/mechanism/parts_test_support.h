// Shared by the tests of the mechanism's parts: a hand-made throughput table and a job table
// over a small cluster, built the way RoundScheduler builds its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/mechanism/job_table.h"

namespace gavel::mechanism::testing {

// Models A and B at scale factor 1 (and A at 2) on v100 and k80; layout types sort by name:
// k80 = 0, v100 = 1.
inline constexpr char kPartsTable[] = R"json({
  "v100": {
    "('A', 1)": {"null": 2.0, "('A', 1)": [1.0, 1.0], "('B', 1)": [1.5, 0.5]},
    "('B', 1)": {"null": 1.0, "('A', 1)": [0.5, 1.5], "('B', 1)": [0.6, 0.6]},
    "('A', 2)": {"null": 3.0, "('A', 2)": [0.0, 0.0]}
  },
  "k80": {
    "('A', 1)": {"null": 1.0, "('A', 1)": [0.5, 0.5], "('B', 1)": [0.0, 0.0]},
    "('B', 1)": {"null": 0.5, "('A', 1)": [0.0, 0.0], "('B', 1)": [0.3, 0.3]},
    "('A', 2)": {"null": 1.5, "('A', 2)": [0.0, 0.0]}
  }
})json";
inline constexpr int kK80 = 0;
inline constexpr int kV100 = 1;

// A table written in a test (the shipped file's JSON form); a parse error aborts the test.
inline std::shared_ptr<const ThroughputTable> TableFromJson(const char* json, const char* name) {
  auto table = ThroughputTable::Parse(json, name);
  GAVEL_CHECK_MSG(table.ok(), table.status().ToString().c_str());
  return std::make_shared<const ThroughputTable>(std::move(*table));
}

inline std::shared_ptr<const ThroughputTable> PartsTable() {
  return TableFromJson(kPartsTable, "test table");
}

inline JobTable MakeJobTable(std::vector<GpuTypeSpec> cluster, bool packing = false) {
  auto layout = ClusterLayout::Create(cluster);
  GAVEL_CHECK(layout.ok());
  auto table = PartsTable();
  auto types = TableTypesOf(*layout, *table);
  GAVEL_CHECK(types.ok());
  JobTableOptions options;
  options.packing = packing;
  return JobTable(std::move(*layout), table, std::move(*types), std::move(options));
}

inline JobDescription Job(const std::string& model, int scale_factor = 1, double steps = 1000.0) {
  JobDescription d;
  d.type = JobTypeKey{model, scale_factor};
  d.total_steps = steps;
  return d;
}

// Admits `d` under `id` into `table`, aborting on a validation error.
inline ActiveJob& AdmitOrDie(JobTable& table, JobId id, const JobDescription& d) {
  Result<int> key = table.Validate(id, d);
  GAVEL_CHECK_MSG(key.ok(), key.status().ToString().c_str());
  return table.Admit(id, d, *key);
}

}  // namespace gavel::mechanism::testing
