// Fuzz target for one trace format (GAVEL_TRACE_FORMAT, set per target in CMakeLists.txt):
// any bytes must parse or fail with an error; what parses must also write back in the
// writable formats and read back to the same jobs (a property no crash-only target checks).
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
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    const auto& a = (*jobs)[i];
    const auto& b = (*again)[i];
    if (a.total_steps != b.total_steps || a.arrival_time.value() != b.arrival_time.value() ||
        a.scale_factor != b.scale_factor || a.priority_weight != b.priority_weight ||
        a.command != b.command) {
      std::abort();
    }
  }
  return 0;
}
