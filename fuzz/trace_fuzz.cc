// Fuzz target for one trace format (GAVEL_TRACE_FORMAT, set per target in CMakeLists.txt):
// any bytes must parse or fail with an error; what parses must also write back in the
// CSV and read back to the same jobs, every field compared (TraceJob's operator==; the CSV
// format has a column for each field), a property no crash-only target checks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gavel/workload/trace_io.h"

using gavel::workload::TraceFormat;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto jobs = gavel::workload::ParseTrace(text, TraceFormat::GAVEL_TRACE_FORMAT, "fuzz");
  if (!jobs.ok()) return 0;
  // CSV keeps every field exactly; a failure to write is allowed (e.g. a newline in a field).
  const auto written = gavel::workload::FormatTrace(*jobs, TraceFormat::kCsv);
  if (!written.ok()) return 0;
  const auto again = gavel::workload::ParseTrace(*written, TraceFormat::kCsv, "rewritten");
  if (!again.ok() || again->size() != jobs->size()) std::abort();
  // The CSV format carries every TraceJob field, so the whole job must come back.
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    if ((*jobs)[i] != (*again)[i]) std::abort();
  }
  return 0;
}
