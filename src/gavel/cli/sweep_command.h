// `gavel sweep`: runs every point of clusters × policies × profiling percentages × reference
// models × seeds × input rates (or, over a trace, load scales) as an independent `gavel
// simulate` run, then compares the policies with paired statistics over the seeds and writes
// a report that decides (docs/simulator.md, "Sweeps: comparisons to decide on").
//
// The parts: this file is the command line and the phases of a sweep (enumerate the points,
// skip those an earlier run finished, run the rest, search the sustainable load, report);
// sweep_points.h runs points and keeps the CSV; sweep_capacity.h is the bisection of
// --find-capacity; sweep_report.h turns the CSV into the table, summary.json, summary.csv and
// report.html through the report part (src/gavel/report).
//
// Every option of `gavel simulate` that shapes the cluster, the workload or the physics is
// one of SweepOptions' SimulationFlags, registered by the same function as simulate's.
//
// Resumable: the CSV is appended (and flushed) as each point finishes; on a rerun, points whose
// key (cluster, policy, profiling percentage, reference models, seed, jobs_per_hour, window) is
// already in the CSV are skipped, and --find-capacity replays its bisection from capacity.csv.
// The report is always drawn from the whole CSV.
//
// Saturation: a point with rate r > 0 jobs/hour and window end e is cut once simulated time
// passes saturation_factor × e × 3600 / r + saturation_slack_seconds (default 2 × the arrival
// span of the window + 30 days, room for the longest jobs) and is recorded as saturated instead of
// failing the sweep; a trace point, at the bound `gavel simulate --saturation-limit auto` uses.
// Rate 0 means a static run (all jobs at time 0) with no limit.
//
// Thread-safety: RunSweep is a free function; it owns its pool and joins it before returning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gavel/cli/simulate_command.h"
#include "gavel/core/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gavel::cli {

struct SweepOptions : SimulationFlags {
  std::vector<std::string> clusters = {"36:36:36"};
  std::string policies;       // comma-separated
  std::string seeds = "0";    // comma-separated
  std::vector<double> rates;  // jobs/hour; 0 = static (generated jobs only)
  // --trace only: arrival-time compressions to sweep (default 1); a point's jobs_per_hour is
  // then the trace's mean input rate × its scale.
  std::vector<double> load_scales;
  // Throughput estimation grid (docs/estimator.md): every point runs at every combination.
  std::vector<double> profiling_percentages = {1.0};
  std::vector<int> num_reference_models = {26};
  double saturation_factor = 2.0;
  // The longest generated job runs about a week on a V100 and longer on slower types.
  double saturation_slack_seconds = 30.0 * 24.0 * 3600.0;
  // Per policy and cluster, bisect on rate (a trace: load scale) for the highest value that
  // drains on every seed, until the failing value is within (1 + capacity_precision) of it.
  bool find_capacity = false;
  double capacity_precision = 0.05;
  std::size_t threads = 0;    // 0 = all cores
  std::string out_dir;        // sweep.csv, report.html, summary.json, summary.csv land here
  bool progress_bar = false;  // true: redraw one bar line (stderr is a terminal)
  // Run the points as a Slurm job array (sweep_slurm.h, docs/slurm.md) instead of on threads;
  // --find-capacity's probes still run here.
  bool slurm = false;
  std::string slurm_partition;
  // Set only inside an array task: the task list of the array (run the one point it names).
  std::string slurm_task_list;
};

// linspace(a, b, n) with zeros dropped (the original's -a/-b/-n).
std::vector<double> RateLinspace(double a, double b, int n);

// The saturation bound for one point, in seconds of simulated time; 0 for a static point.
double SaturationLimitSeconds(double jobs_per_hour, std::size_t window_end, double factor,
                              double slack_seconds);

// Runs the sweep. Progress goes to `progress`; the comparison table (per cluster and rate: each
// policy's means with 95% intervals, the rankings with ties, the sustainable loads) to `out`.
// A point that fails for any reason other than saturation makes the result non-OK (after the
// other points finish); its row is not written, so a rerun retries it.
Status RunSweep(const SweepOptions& options, std::ostream& out, std::ostream& progress);

// The `sweep` subcommand's command line: the options it fills (--rates lands in
// options.rates), and the rates given as linspace(a, b, n) instead or as well.
struct SweepCommandLine {
  SweepOptions options;
  std::optional<double> a;
  std::optional<double> b;
  std::optional<int> n;
};

// Registers `sweep` on `app`, filling `*line`.
CLI::App* AddSweepCommand(CLI::App& app, SweepCommandLine* line);
// Runs a parsed `sweep`; returns the process exit code (errors go to stderr).
int RunSweepCommand(const SweepCommandLine& line);

}  // namespace gavel::cli
