// `gavel replay`: a trace played against a live `gavel serve`, S times faster than written,
// with the live run written in the simulator's result formats and, with --compare, set beside
// `gavel simulate` of the same trace on the same cluster (docs/runtime.md, "Replaying a trace").
//
//   gavel replay --trace FILE [--trace-format gavel|csv|msr|philly|pai|helios]
//                --scheduler HOST:PORT [--token-file F] --time-scale S
//                [--command TEMPLATE] [--compare] --out DIR
//
// Each trace job is submitted through the same client call as `gavel submit` at its arrival
// time ÷ S, with its steps ÷ S (rounded, at least 1), so that a job running at the table's
// throughput lasts its simulated duration ÷ S. By default it runs the example training program
// (examples/training/train.py: the table's steps/s for the GPU type it gets). The command then
// waits for every job, writes DIR/live.csv and DIR/live.json (sim::JobsToCsv, ResultToJson; times
// in live seconds from the first arrival), and with --compare simulates the scaled trace on the
// daemon's cluster (its live agents' GPUs), policy and round length, writes DIR/simulated.csv
// and DIR/simulated.json, and prints both with the relative difference per metric.
//
// Free functions; RunReplay blocks for the whole replay. Thread-compatible.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gavel/cli/client_commands.h"
#include "gavel/cli/simulate_command.h"
#include "gavel/core/status.h"
#include "gavel/sim/simulator.h"
#include "gavel/workload/trace_job.h"

namespace gavel::cli {

struct ReplayOptions {
  ClientOptions client;
  std::string trace_file;
  std::string trace_format = "gavel";
  std::string trace_tasks;  // pai: the task table
  bool skip_bad_rows = false;
  double time_scale = 1.0;  // S: arrivals and steps ÷ S
  // argv template, split on spaces before {job_type}, {steps}, {scale_factor}, {index} and
  // {time_scale} are replaced (so a value with spaces stays one argument); empty = the
  // example training program.
  std::string command;
  std::string throughputs_file;  // the table the program and the simulation read; empty = shipped
  std::string out_dir;
  bool compare = false;
  // The simulation's physics (--compare): the physics flags of `gavel simulate`, where
  // --restart-overhead also takes `measured` (the default here: the live run's mean start-up)
  // and --dispatch-delay is given as text here so that it also takes `measured` (the live
  // rounds' median length beyond the round and the mean start-up). Restarts are always outside
  // the lease, as in gavel serve.
  PhysicsFlags physics;
  std::string dispatch_delay = "0";  // SECONDS | measured
  std::uint64_t seed = 0;        // the simulation's seed
  double poll_seconds = 0.2;     // how often the jobs are listed (first starts' resolution)
  double max_seconds = 0.0;      // give up waiting after this long; 0 = no limit
  bool quiet = false;            // no progress lines on stderr
};

// The trace as replayed S times faster: arrivals ÷ S, steps ÷ S rounded to the nearest
// integer, at least 1.
std::vector<workload::TraceJob> ScaleTrace(std::vector<workload::TraceJob> trace, double scale);

// One metric of the comparison: live, simulated, (live − simulated) / simulated.
struct ComparedMetric {
  std::string name;
  double live = 0.0;
  double simulated = 0.0;
  double relative_difference = 0.0;  // 0 when both are 0
};
std::vector<ComparedMetric> CompareResults(const sim::SimulationResult& live,
                                           const sim::SimulationResult& simulated);
void PrintComparison(const std::vector<ComparedMetric>& metrics, std::ostream& out);

// Runs the replay. Errors name the flag, file or job at fault.
Status RunReplay(const ReplayOptions& options, std::ostream& out);

CLI::App* AddReplayCommand(CLI::App& app, ReplayOptions* options);
// Runs a parsed `replay`; returns the process exit code (errors go to stderr).
int RunReplayCommand(const ReplayOptions& options);

}  // namespace gavel::cli
