// `gavel simulate`: run a workload through the round-based scheduler on a simulated cluster,
// in the original simulator's vocabulary (-c 36:36:36, -p, --seed, -l, -s/-e, -i, -m, ...).
// The JSON result and the per-job CSV are stable contracts (docs/formats.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/sim/simulator.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gavel::cli {

// The cluster-physics options shared by `simulate` and `sweep` (docs/simulator.md). Empty
// strings = not given.
struct PhysicsFlags {
  int servers_per_rack = 0;
  double cpus_per_server = 0.0;
  double mem_per_server_gb = 0.0;
  std::string placement_penalty;  // FILE | default | none
  std::string restart_overhead;   // SECONDS | FILE | default | none
  std::string failures;           // philly | FILE | none
  bool realistic = false;         // placement penalty, restart overhead and failures: defaults
  bool restart_aware = false;     // the scheduler weighs restart overheads against moves
  std::optional<double> lag_bound;  // restarts per bounded-lag bound; unset = the default
  // gavel serve's lease semantics (sim::PhysicsOptions): not part of --realistic.
  bool restart_outside_lease = false;
  double dispatch_delay = 0.0;  // seconds
  bool whole_steps = false;
  std::optional<double> arrival_settle;  // seconds; unset = 0 (`gavel replay`: the daemon's)
  bool any() const {
    return servers_per_rack != 0 || cpus_per_server != 0.0 || mem_per_server_gb != 0.0 ||
           !placement_penalty.empty() || !restart_overhead.empty() || !failures.empty() ||
           realistic || restart_aware || lag_bound || restart_outside_lease || dispatch_delay != 0.0 ||
           whole_steps || arrival_settle;
  }
};

// The physics `flags` ask for (tables read here). Errors name the flag and file.
Result<sim::PhysicsOptions> ToPhysicsOptions(const PhysicsFlags& flags);
// Registers the physics flags on a subcommand.
void AddPhysicsFlags(CLI::App* command, PhysicsFlags* flags);

// The options that shape the cluster, the workload and the physics of a simulation. `gavel
// simulate` and `gavel sweep` both take every one of them, with the same names and meanings,
// because AddSimulationFlags registers them on both; a sweep point copies them unchanged into
// the simulate run it is.
struct SimulationFlags {
  std::string worker_types = "v100,p100,k80";
  std::string gpus_per_server = "1:1:1";  // in worker_types order
  std::size_t window_start = 0;
  std::optional<std::size_t> window_end;  // generated default 5000; trace default: all
  double round_seconds = 360.0;
  bool multi_gpu = false;  // -m
  bool multi_priority = false;
  bool assign_slos = false;
  std::optional<double> fixed_duration;  // -f, seconds on one V100
  bool steady_state = false;
  double elastic_fraction = 0.0;  // generated jobs: fraction elastic (core/elastic.h)
  std::string utility;            // generated jobs: "", "sigmoid" or "linear" (core/utility.h)
  double hpo_fraction = 0.0;      // generated jobs: fraction that are hyper-parameter searches
  int hpo_trials = 4;             // trials per search (workload/generator.h)
  std::string throughputs_file;        // empty = the shipped simulation table
  std::vector<std::string> throughputs_extra;  // more GPU types (gavel profile's output)
  std::string trace_file;              // a trace instead of generated jobs
  std::string trace_format = "gavel";  // gavel | csv | msr | philly | pai | helios
  std::string trace_tasks;             // pai: the task table (default: beside --trace)
  bool skip_bad_rows = false;          // philly | pai | helios: skip and count unreadable rows
  std::string workload = "gavel";      // generated jobs: gavel (the original's) | philly
  double diurnal_amplitude = 0.5;      // --workload philly: relative daily rate swing, [0, 1)
  bool ideal = false;
  std::string compat;           // "gavel", "none"/empty, or switch names
  std::string solver = "auto";  // "auto": the policy's fast path; "clp": the whole LP on Clp
  bool fairness = false;
  std::string instance_costs;  // "$/GPU-hour" per type, in worker_types order
  PhysicsFlags physics;
};

// Registers the SimulationFlags options on `command` (simulate's and sweep's).
void AddSimulationFlags(CLI::App* command, SimulationFlags* flags);

// `gavel simulate`'s options: the shared ones plus what one run picks (one cluster, policy,
// seed and arrival rate) and where its results go.
struct SimulateOptions : SimulationFlags {
  std::string cluster = "36:36:36";  // GPU counts, in worker_types order
  std::string policy;
  std::uint64_t seed = 0;
  std::optional<double> lam;            // mean inter-arrival time, seconds; 0 = static
  std::optional<double> jobs_per_hour;  // alternative to lam
  // A trace's arrival times divided by this: 2 = the same jobs arriving twice as fast.
  double load_scale = 1.0;
  // Throughput estimation (docs/estimator.md); K unset = all 26 job types are references.
  double profiling_percentage = 1.0;
  std::optional<int> num_reference_models;

  std::optional<double> time_limit;  // seconds of simulated time
  std::string json_path;             // "-" = stdout; empty = none
  std::string jobs_csv_path;         // "-" = stdout; empty = none

  // Saturation guard: "auto" (default) = 2 × the window's arrival span + 30 days of simulated
  // time, for workloads that arrive over time; "none"; or seconds. Past it the run stops and
  // is reported saturated.
  std::string saturation_limit = "auto";
  // Progress on stderr: "auto" (default) = when stderr is a terminal; "always"; "never".
  std::string progress = "auto";
};

// The simulation `options` ask for, with the defaults and checks of `gavel simulate` (the
// throughput table and a trace are read here). Errors name the offending option. When
// `notes` is given, lines worth telling the user (what a public-trace import skipped) are
// appended to it.
Result<sim::SimulationOptions> ToSimulationOptions(const SimulateOptions& options,
                                                   std::vector<std::string>* notes = nullptr);

// An arrival rate in jobs/hour within [3600 / kMaxSeconds, kMaxJobsPerHour]: the lower end is
// one job per kMaxSeconds, the longest mean inter-arrival --lam takes. ToSimulationOptions
// checks --jobs-per-hour with it; sweep checks its positive rates before running any point.
Status CheckJobsPerHour(double jobs_per_hour, const std::string& where);

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
