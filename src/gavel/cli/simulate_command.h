// `gavel simulate`: run a workload through the round-based scheduler on a simulated cluster,
// in the original simulator's vocabulary (-c 36:36:36, -p, --seed, -l, -s/-e, -i, -m, ...).
// The JSON result and the per-job CSV are stable contracts (docs/formats.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "gavel/core/status.h"
#include "gavel/sim/simulator.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gavel::cli {

struct SimulateOptions {
  std::string cluster = "36:36:36";  // GPU counts, in worker_types order
  std::string worker_types = "v100,p100,k80";
  std::string gpus_per_server = "1:1:1";  // in worker_types order
  std::string policy;
  std::uint64_t seed = 0;
  std::optional<double> lam;            // mean inter-arrival time, seconds; 0 = static
  std::optional<double> jobs_per_hour;  // alternative to lam
  std::size_t window_start = 0;
  std::optional<std::size_t> window_end;  // generated default 5000; trace default: all
  double round_seconds = 360.0;
  bool multi_gpu = false;  // -m
  bool multi_priority = false;
  bool assign_slos = false;
  std::optional<double> fixed_duration;  // -f, seconds on one V100
  bool steady_state = false;
  std::string throughputs_file;        // empty = the shipped simulation table
  std::string trace_file;              // a trace instead of generated jobs
  std::string trace_format = "gavel";  // gavel | csv | msr
  bool ideal = false;
  std::string compat;  // "gavel", "none"/empty, or switch names
  std::string solver = "auto";  // "auto": the policy's fast path; "clp": the whole LP on Clp
  // Throughput estimation (docs/estimator.md); K unset = all 26 job types are references.
  double profiling_percentage = 1.0;
  std::optional<int> num_reference_models;

  bool fairness = false;
  std::string instance_costs;        // "$/GPU-hour" per type, in worker_types order
  std::optional<double> time_limit;  // seconds of simulated time
  std::string json_path;             // "-" = stdout; empty = none
  std::string jobs_csv_path;         // "-" = stdout; empty = none
};

// The simulation `options` ask for, with the defaults and checks of `gavel simulate` (the
// throughput table and a trace are read here). Errors name the offending option.
Result<sim::SimulationOptions> ToSimulationOptions(const SimulateOptions& options);

// Runs the simulation. Writes a short human summary to `out` unless the JSON goes there.
// Under the `estimator` compat switch, --num-reference-models is ignored (with a note on
// stderr), as the original's single-run driver ignores it; `gavel sweep` forwards it.
// Returns a non-OK status (naming the offending option) on bad input or a failed run.
Status RunSimulate(const SimulateOptions& options, std::ostream& out);

// Registers `simulate` (the original simulator's vocabulary) on `app`, filling `*options`.
CLI::App* AddSimulateCommand(CLI::App& app, SimulateOptions* options);
// Runs a parsed `simulate`; returns the process exit code (errors go to stderr).
int RunSimulateCommand(const SimulateOptions& options);

}  // namespace gavel::cli
