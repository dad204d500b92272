// Reading and writing workload traces: lists of TraceJob in arrival order. Three formats
// (docs/formats.md, "Traces"):
//
//  * kGavel: the original's current format (docs/formats.md), one job per line, 10 tab-separated
//    columns: job_type, command, working_directory, num_steps_arg, needs_data_dir (0/1),
//    total_steps (int), scale_factor (int >= 1), priority_weight (float), SLO (float, -1 =
//    none), arrival_time (float seconds). The writer formats exactly like the original's
//    `'%s\t%f\n' % (str(job), arrival)`: needs_data_dir, total_steps, scale_factor and
//    priority_weight with %d (truncated), SLO and arrival with %f (6 decimals).
//  * kMsrLegacy: the historical 7-column Philly/msr traces, read only: job_type, command,
//    num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor. Rows with
//    scale_factor 0 are skipped (as the old parser did); working_directory is empty,
//    priority 1, no SLO.
//  * kCsv: our own CSV with a header line (RFC 4180 quoting for fields holding a comma,
//    quote or newline):
//      job_type,scale_factor,total_steps,arrival_time,priority_weight,slo,duration,
//      command,working_directory,num_steps_arg,needs_data_dir
//    Numbers are written with 17 significant digits, so values round-trip exactly
//    (fractional steps included); empty slo / duration = none.
//
// Every reader checks that arrival times are finite, non-negative and non-decreasing.
// Errors are InvalidArgument "<file>:<line>: <column>: <what>" (IoError when the file cannot
// be opened or written). Trace jobs have no duration except in kCsv. Free functions; no
// shared state; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/workload/trace_job.h"

namespace gavel::workload {

enum class TraceFormat { kGavel, kMsrLegacy, kCsv };

// "gavel", "msr" or "csv" (the names a user types).
const char* TraceFormatName(TraceFormat format);
Result<TraceFormat> ParseTraceFormat(std::string_view name);

// Parses trace text; `source_name` (usually the path) prefixes every error message.
// Blank lines (and a trailing newline) are ignored in every format; a trailing '\r' is
// stripped (traces edited on Windows).
Result<std::vector<TraceJob>> ParseTrace(std::string_view text, TraceFormat format,
                                         const std::string& source_name);
Result<std::vector<TraceJob>> ReadTraceFile(const std::string& path, TraceFormat format);

// Formats jobs as a trace (kGavel or kCsv; kMsrLegacy is read-only: InvalidArgument).
// Fails with InvalidArgument when a job cannot be represented: a tab or newline inside a
// kGavel text field, or arrival times out of order.
Result<std::string> FormatTrace(const std::vector<TraceJob>& jobs, TraceFormat format);
Status WriteTraceFile(const std::string& path, const std::vector<TraceJob>& jobs,
                      TraceFormat format);

// One job as the original's str(job) (the first 9 kGavel columns, no newline).
std::string FormatGavelJob(const TraceJob& job);

}  // namespace gavel::workload
