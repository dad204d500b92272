// `gavel logs JOB [--rank R] [-f]`: a job's stdout and stderr from every agent it ran on, through
// the scheduler (scheduler.proto, GetJobLogs, which asks each live agent: worker.proto,
// ReadLogs).
//
// Each launch of a job's process opens its output with the agent's line
//     ==== gavel: <time> job <id> round <r> worker <w> (<type>, device <d>) attempt <n> ====
// so the output splits into launches; they are printed in round order (then rank, then stdout
// before stderr), each launch's line followed by `[rank R stdout|stderr on AGENT]`: one
// history across attempts and hosts, attempt boundaries marked. With -f it keeps polling
// (every second) and prints what each file gained, under a `---- rank R stdout on AGENT ----`
// line whenever the source changes, until the job has finished and nothing more came.
// Agents that could not be read (dead, unreachable) are named on stderr.
// Thread-compatible free functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "gavel/cli/client_commands.h"
#include "gavel/core/status.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::cli {

struct LogsOptions {
  ClientOptions client;
  std::uint64_t job_id = 0;
  int rank = -1;  // -1 = every rank
  bool follow = false;
  double poll_seconds = 1.0;
  CLI::App* cmd = nullptr;
};

CLI::App* AddLogsCommand(CLI::App& app, LogsOptions* options);
// Exit code when `gavel logs` was parsed; nullopt otherwise.
std::optional<int> RunLogsCommand(const LogsOptions& options);

Status RunLogs(const LogsOptions& options, std::ostream& out, std::ostream& err);

// The launches in `response` in the order `gavel logs` prints them (exposed for tests).
std::string MergeJobLogs(const wire::GetJobLogsResponse& response);

}  // namespace gavel::cli
