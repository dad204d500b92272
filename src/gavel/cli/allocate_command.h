// `gavel allocate`: read a snapshot, run one policy, print the allocation. The JSON output is
// a stable contract (docs/formats.md) that outside tools drive.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "gavel/core/status.h"

namespace gavel::cli {

struct AllocateOptions {
  std::string policy;
  std::string snapshot_path;
  bool compat_gavel = false;
  std::string format = "json";  // "json" or "table"
  // "auto": the policy's fast path where it has one (docs/policies.md, "Fast paths");
  // "clp": the whole LP on Clp, for comparison.
  std::string solver = "auto";
  std::vector<std::string> throughputs_extra;  // more GPU types beside the snapshot's table
};

// Writes the result to `out`; returns a non-OK status (and writes nothing) on bad input.
Status RunAllocate(const AllocateOptions& options, std::ostream& out);

// `gavel policies`: one line per policy name with its description.
void PrintPolicies(std::ostream& out);

}  // namespace gavel::cli
