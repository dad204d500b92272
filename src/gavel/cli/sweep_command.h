// `gavel sweep`: runs every point of clusters × policies × profiling percentages × reference
// models × seeds × input rates as an
// independent `gavel simulate` run, on a pool of threads, and writes one CSV row per finished
// point plus an HTML report with inline SVG plots.
//
// Each point goes through ToSimulationOptions (simulate_command.h), so a sweep point's numbers
// are exactly those of a direct `gavel simulate` run of the same point. Simulations share no
// mutable state (sim/simulator.h promises this), so points run concurrently.
//
// Resumable: the CSV is appended (and flushed) as each point finishes; on a rerun, points whose
// key (cluster, policy, profiling percentage, reference models, seed, jobs_per_hour, window) is
// already in the CSV are skipped. The
// report is always drawn from the whole CSV.
//
// Per point, points/<key>.csv keeps the distributions the report draws: the window jobs'
// JCTs and queueing delays (CDFs per policy) and the cluster's utilisation over time.
//
// Saturation: a point with rate r > 0 jobs/hour and window end e is cut once simulated time
// passes saturation_factor × e × 3600 / r + saturation_slack_seconds (default 2 × the arrival
// span of the window + 30 days, room for the longest jobs) and is recorded as saturated instead of
// failing the sweep. Rate 0 means a static run (all jobs at time 0) with no limit.
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

struct SweepOptions {
  std::vector<std::string> clusters = {"36:36:36"};
  std::string policies;       // comma-separated
  std::string seeds = "0";    // comma-separated
  std::vector<double> rates;  // jobs/hour; 0 = static
  std::size_t window_start = 0;
  std::size_t window_end = 5000;
  bool multi_gpu = false;
  // Generated jobs: "gavel" (the original's) or "philly" (workload/philly_workload.h). A
  // philly sweep writes sweep-philly.csv and report-philly.html, so its points never mix
  // with a gavel sweep's in the same directory, and its saturation slack is at least a year
  // (the Philly table's longest job runs 60 days on a V100).
  std::string workload = "gavel";
  std::string compat;
  // Throughput estimation grid (docs/estimator.md): every point runs at every combination.
  std::vector<double> profiling_percentages = {1.0};
  std::vector<int> num_reference_models = {26};
  double saturation_factor = 2.0;
  // The longest generated job runs about a week on a V100 and longer on slower types.
  double saturation_slack_seconds = 30.0 * 24.0 * 3600.0;
  std::size_t threads = 0;    // 0 = all cores
  std::string out_dir;        // sweep.csv and report.html land here
  bool progress_bar = false;  // true: redraw one bar line (stderr is a terminal)
  // Also run `isolated` at every point for finish-time fairness (the max_rho and mean_rho
  // columns, ranked in the report); empty cells without it.
  bool fairness = false;
  // Generated jobs, as `gavel simulate` takes them: the fraction that is elastic
  // (core/elastic.h) and the utility family ("", "sigmoid" or "linear"; core/utility.h) whose
  // total_utility and jobs_rejected the CSV then carries.
  double elastic_fraction = 0.0;
  std::string utility;
  double hpo_fraction = 0.0;  // hyper-parameter searches, as gavel simulate's --hpo-fraction
  int hpo_trials = 4;
  // The cluster physics of every point (docs/simulator.md); not part of a point's key, so use
  // one --out directory per physics setting.
  PhysicsFlags physics;
  // Run the points as a Slurm job array (sweep_slurm.h, docs/slurm.md) instead of on threads.
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

// Runs the sweep. Progress goes to `progress`; the comparison table (per cluster and rate: mean
// average JCT per policy and the speed-up of each `X_perf` over `X`) goes to `out`.
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
