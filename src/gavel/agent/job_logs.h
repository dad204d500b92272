// JobLogs: a job's output as one agent keeps it, read for `gavel logs` (worker.proto,
// ReadLogs) and pruned by age.
//
// The agent appends each job process's stdout and stderr to `<log_dir>/job-<id>.out|.err`
// (`job-<id>.rank-<r>.out|.err` for the ranks of a multi-GPU job), every launch opening with a
// `==== gavel: <time> job <id> round <r> ... attempt <n> ====` line, so one file holds every
// launch of that job and rank on this host, in order, with the attempt boundaries marked.
//
// Thread-safety: stateless functions over the file system; safe from any thread (a file
// being appended to is read up to its size at the time).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/wire/worker.pb.h"

namespace gavel::agent {

// The job's files in `log_dir` (one rank, or all with rank -1), each from the offset the
// request names (0 when not named) to its end, at most max_bytes (0 = 1 MiB) per file: the
// newest part when more is there. An offset past a file's end (the file was pruned and
// rewritten) reads it from 0. Errors: a negative rank other than -1.
Result<wire::ReadLogsResponse> ReadJobLogs(const std::string& log_dir,
                                           const wire::ReadLogsRequest& request);

// Deletes the job logs in `log_dir` last written more than `retention` before `now_unix_s`,
// except those of `keep` (jobs with a process or task on this agent). Returns how many.
int PruneJobLogs(const std::string& log_dir, Seconds retention, double now_unix_s,
                 const std::set<std::uint64_t>& keep);

}  // namespace gavel::agent
