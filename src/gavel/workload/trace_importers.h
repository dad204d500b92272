// Importers for the public cluster traces users download, turning each into our TraceJobs
// (docs/formats.md, "Public traces"; docs/workloads.md for the mapping and its reasons):
//
//  * kPhilly: Microsoft Philly's `cluster_job_log` (msr-fiddle/philly-traces): one JSON array
//    of jobs {status: Pass|Killed|Failed, vc, jobid, attempts: [{start_time, end_time,
//    detail: [{ip, gpus: [...]}]}], submitted_time, user}; times "YYYY-MM-DD HH:MM:SS".
//  * kPai: Alibaba PAI 2020 (alibaba/clusterdata cluster-trace-gpu-v2020): pai_job_table.csv
//    (job_name, inst_id, user, status, start_time = submission, end_time) joined on job_name
//    with pai_task_table.csv (job_name, task_name, inst_num, status, start_time, end_time,
//    plan_cpu, plan_mem, plan_gpu in % of a GPU, gpu_type); times in seconds. The header line
//    is optional (the tables ship without one).
//  * kHelios: SenseTime Helios `cluster_log.csv` (S-Lab-System-Group/HeliosData), with a
//    header naming at least job_id, gpu_num, state, submit_time, start_time, end_time
//    (columns found by name; duration used when present); times "YYYY-MM-DD HH:MM:SS".
//
// Mapping (the traces have no model names): GPU count g -> scale factor sf = the smallest of
// 1/2/4/8 that is >= g (8 above 8); the observed run time r becomes r × g / sf seconds on the
// reference GPU type (GPU time conserved), times the isolated throughput of (type, sf) there
// = total_steps (rounded up); the job type is a template that supports sf, picked by a hash of
// (seed, job id), so a job keeps its type whatever other rows are skipped; arrival = submission
// time minus the earliest submission imported; outcome from the final status, at_progress 1.
//
// Rows the importer cannot read (a missing or malformed field, a number out of its documented
// bounds, a time that is not a date) fail the import with InvalidArgument
// "<file>:<line>: <field>: <what>" (Philly: the line of the job's "jobid"), unless
// skip_bad_rows, which counts them instead. Jobs that are well formed but out of scope are
// always skipped and counted: no GPU, or no completed run (never started, still running at
// the snapshot, zero run time). Free functions; no shared state; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/workload/trace_job.h"

namespace gavel::workload {

enum class PublicTraceFormat { kPhilly, kPai, kHelios };

// "philly", "pai", "helios" (the names a user types).
const char* PublicTraceFormatName(PublicTraceFormat format);
Result<PublicTraceFormat> ParsePublicTraceFormat(std::string_view name);

struct ImportOptions {
  std::uint64_t seed = 0;  // mixed into the job-type hash
  std::string reference_gpu_type = "v100";
  bool skip_bad_rows = false;
  // kPai: the task table; empty = pai_task_table.csv in the job table's directory.
  std::string pai_task_table;
};

struct ImportReport {
  std::size_t records = 0;         // jobs (Philly, PAI job rows) or rows (Helios) read
  std::size_t imported = 0;        // jobs in the result
  std::size_t skipped_bad = 0;     // unreadable rows, with skip_bad_rows
  std::size_t skipped_no_gpu = 0;  // CPU-only jobs
  std::size_t skipped_no_run = 0;  // never started, unfinished, or zero run time
  std::string first_bad;           // the first skipped unreadable row's error
  // One line: "<file>: imported N of M jobs; skipped ...".
  std::string Summary(const std::string& source_name) const;
};

struct ImportedTrace {
  std::vector<TraceJob> jobs;  // in arrival order (ties in file order)
  ImportReport report;
};

// Imports trace text. `source_name` prefixes errors; for kPai, `pai_tasks` is the task
// table's text and `pai_tasks_name` its name.
Result<ImportedTrace> ImportPublicTrace(std::string_view text, PublicTraceFormat format,
                                        const ImportOptions& options,
                                        const ThroughputTable& throughputs,
                                        const std::string& source_name,
                                        std::string_view pai_tasks = {},
                                        const std::string& pai_tasks_name = {});
// Reads the file(s) and imports them (IoError when a file cannot be read).
Result<ImportedTrace> ImportPublicTraceFile(const std::string& path, PublicTraceFormat format,
                                            const ImportOptions& options,
                                            const ThroughputTable& throughputs);

// "YYYY-MM-DD HH:MM:SS" -> seconds since 1970-01-01 00:00:00 (no time zone: only differences
// are used). InvalidArgument on anything else, including impossible dates.
Result<double> ParseTraceDateTime(std::string_view text);

}  // namespace gavel::workload
