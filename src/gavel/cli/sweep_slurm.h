// `gavel sweep --slurm`: the sweep's points as one Slurm job array (docs/slurm.md).
//
// The submitting `gavel sweep` works out which points are still missing from the CSV, writes
// their indices (in the sweep's full enumeration of points) to <out>/slurm/array-<stamp>.txt,
// and submits one array task per line. Each task runs this same `gavel` with the same
// arguments (read back from /proc/self/cmdline, less --slurm/--slurm-partition) plus
// --slurm-task-list FILE: it simulates the one point on its line ($SLURM_ARRAY_TASK_ID) and
// writes that point's CSV row to <out>/slurm/rows/<index>.csv. The submitter waits for the
// array to end and appends the rows in point order, so the CSV and the report are those of a
// local sweep; a point whose task failed has no row and is run again by the next
// `gavel sweep --slurm` (or a local one) with the same arguments.
// Thread-compatible free functions; they talk to slurmctld through slurm::SlurmApi.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "gavel/core/status.h"

namespace gavel::cli {

struct SweepArray {
  std::string partition;                   // "" = Slurm's default
  std::string dir;                         // <out>/slurm, absolute
  std::vector<std::size_t> point_indices;  // task i runs point point_indices[i]
};

struct SweepArrayResult {
  std::uint32_t job_id = 0;
  std::string log_pattern;  // each task's output file, %a = its task id
};

// Writes the task list, submits the array (tasks run `gavel` with this process's arguments
// and --slurm-task-list), and waits until every task ended, reporting progress lines.
Result<SweepArrayResult> RunSweepArray(const SweepArray& array, std::ostream& progress);

// In an array task: the point index on line $SLURM_ARRAY_TASK_ID of `list`; errors name the
// file and the line.
Result<std::size_t> PointOfThisTask(const std::string& list);

// Where task results go: <dir>/rows/<index>.csv.
std::string SweepRowFile(const std::string& dir, std::size_t point_index);

}  // namespace gavel::cli
