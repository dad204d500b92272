// Fuzz target for one public-trace importer (GAVEL_PUBLIC_FORMAT: kPhilly, kPai or kHelios,
// set per target in CMakeLists.txt): any bytes must import or fail with an error, with and
// without --skip-bad-rows; what imports must be a valid trace (non-decreasing arrivals, at
// least one GPU and one step per job, every planned outcome's progress in (0, 1]) that the CSV
// format writes and reads back to the same jobs. For PAI the input is split at the first
// line "--tasks--" into the job table and the task table.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gavel/core/shipped_table.h"
#include "gavel/workload/trace_importers.h"
#include "gavel/workload/trace_io.h"

namespace {

using gavel::workload::PublicTraceFormat;
constexpr PublicTraceFormat kFormat = PublicTraceFormat::GAVEL_PUBLIC_FORMAT;

void CheckImported(const gavel::workload::ImportedTrace& trace) {
  double previous = 0.0;
  for (const gavel::workload::TraceJob& job : trace.jobs) {
    if (job.scale_factor < 1 || !(job.total_steps >= 1.0)) std::abort();
    if (job.arrival_time.value() < previous) std::abort();
    previous = job.arrival_time.value();
    if (job.outcome && !(job.outcome->at_progress > 0.0 && job.outcome->at_progress <= 1.0)) {
      std::abort();
    }
  }
  if (trace.report.imported != trace.jobs.size()) std::abort();
  const auto written = gavel::workload::FormatTrace(trace.jobs, gavel::workload::TraceFormat::kCsv);
  if (!written.ok()) return;  // e.g. a job type holding a newline
  const auto again =
      gavel::workload::ParseTrace(*written, gavel::workload::TraceFormat::kCsv, "rewritten");
  if (!again.ok() || *again != trace.jobs) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view text = input;
  std::string_view tasks;
  if constexpr (kFormat == PublicTraceFormat::kPai) {
    const std::size_t split = input.find("\n--tasks--\n");
    if (split != std::string_view::npos) {
      text = input.substr(0, split + 1);
      tasks = input.substr(split + 11);
    }
  }
  for (const bool skip : {false, true}) {
    gavel::workload::ImportOptions options;
    options.skip_bad_rows = skip;
    const auto imported = gavel::workload::ImportPublicTrace(
        text, kFormat, options, *gavel::ShippedThroughputTable(),
        "fuzz", tasks, "fuzz-tasks");
    if (imported.ok()) CheckImported(*imported);
  }
  return 0;
}
