// The simulator: runs a workload through the RoundScheduler on a simulated cluster and
// measures the outcome (the original's metrics; docs/formats.md).
//
// The loop (one round per iteration; rounds are back to back, as in the original):
//   advance the clock to the end of the running round (its longest micro-task), or to the
//   next arrival when nothing runs → deliver the micro-task ends (per-GPU reports) → admit the
//   jobs that arrived → plan the next round → hand it to the SimExecutor, which schedules its
//   micro-task ends in the event queue, ordered by (time, sequence number).
// With `ideal`, allocations are applied exactly between events instead (a fluid model,
// ideal.h): each job progresses at Σ_t X[j][t]·T[j][t] (plus its pairs), the allocation is
// recomputed at every arrival and completion, and a job completes at the exact time its
// remaining steps run out.
//
// Under compat (the sim's switches) the simulator also reproduces the original's accounting quirks:
// a round's micro-tasks are all delivered at the round's end, latest-finishing first, and each is
// booked from the end of the previous round that ran anything (so an idle gap inflates the next
// round's elapsed time); the per-GPU step split lets a multi-GPU job's last micro-task fail; a
// job's SLO deadline counts from when it was admitted, and an SLO is "violated" when its JCT (a
// duration) exceeds the deadline (a time). By default micro-tasks are delivered in the order they
// end, booked from their real start, split evenly, and an SLO is violated when the job finishes
// after its deadline. docs/differences.md lists all.
//
// Free function; a run owns all its state. Thread-safe (runs do not share state).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/lp/solver.h"
#include "gavel/mechanism/compat.h"
#include "gavel/mechanism/scorers.h"
#include "gavel/policy/policy.h"
#include "gavel/sim/physics.h"
#include "gavel/workload/generator.h"
#include "gavel/workload/trace_job.h"

namespace gavel::sim {

// Where a running simulation is (for a progress display).
struct Progress {
  Seconds now{0.0};
  std::size_t window_done = 0;  // window jobs finished (or dropped, or failed)
  std::size_t window_jobs = 0;
  std::size_t admitted = 0;
  std::size_t active = 0;
  std::int64_t rounds = 0;
};

struct JobResult;

struct SimulationOptions {
  // GPU types in the user's order (the scheduler's per-round type order).
  std::vector<GpuTypeSpec> cluster;
  std::shared_ptr<const ThroughputTable> throughputs;
  std::string policy;
  std::uint64_t seed = 0;
  Seconds round_length{360.0};
  Seconds min_reset_interval{1920.0};
  // Which of the original's quirks to reproduce (mechanism/compat.h); Compat::Gavel() = all.
  mechanism::Compat compat;
  bool ideal = false;

  // The workload: generated jobs (the stream's own seed and lam are in `generator`) or a
  // fixed list of jobs (a trace), in arrival order.
  std::optional<workload::GeneratorOptions> generator;
  std::vector<workload::TraceJob> trace;

  // Measurement window: jobs with ids in [window_start, window_end). The run ends when all of
  // them are done. For a trace, no window_end means every job of the trace. A generated
  // workload needs window_end; with lam = 0 (static) exactly window_end jobs are generated.
  std::size_t window_start = 0;
  std::optional<std::size_t> window_end;

  // $/GPU-hour by GPU type name; empty = no prices (no cost, and cost policies refuse).
  std::map<std::string, double> instance_costs;
  // Also run the `isolated` policy on the same workload and report each job's finish-time
  // fairness rho = JCT / JCT under isolated.
  bool fairness = false;
  // Stop with an error once simulated time passes this (a guard for overloaded clusters).
  std::optional<Seconds> time_limit;
  // The policy's LP solver; null = the default (policy::PolicyOptions::lp_solver).
  std::shared_ptr<lp::Solver> lp_solver;
  // The policy's solve path (policy::SolvePath): its fast path or the whole LP on Clp.
  policy::SolvePath solve_path = policy::SolvePath::kFast;

  // The cluster's physics (physics.h); all off by default. Not with `ideal`.
  PhysicsOptions physics;
  // Once simulated time passes this, the run stops and its result says `saturated` (arrivals
  // outpaced the cluster) instead of failing like time_limit.
  std::optional<Seconds> saturation_limit;
  // Called every few rounds of the round-based run; null = none. Must not throw.
  std::function<void(const Progress&)> progress;
  // Width of the utilisation-over-time buckets (SimulationResult::utilization_timeline).
  Seconds timeline_bucket{3600.0};
  // Throughput estimation (docs/estimator.md): with a packing policy, a profiling percentage
  // P < 1 or fewer reference models K than the 26 job types makes the scheduler see estimated
  // co-located throughputs, replaced by the table's as pairs run. P in [0, 1], K in [1, 26].
  double profiling_percentage = 1.0;
  int num_reference_models = 26;
  // Each job's result, in id order, as soon as it and every job before it have left
  // (finished, or were dropped, rejected or failed); the others' at the end of the run. An
  // error stops the run with it. Null = none. Round-based runs without `fairness` only.
  std::function<Status(const JobResult&)> job_sink;
  // Keep every job's result in SimulationResult::jobs. Off, a run's memory no longer grows
  // with its finished jobs (pass them to job_sink instead); the figures are the same.
  // Round-based runs without `fairness` only (rho and the fluid model read the list).
  bool keep_jobs = true;
  // Tests only (mechanism::SchedulerOptions::exhaustive_scans): the round mechanism's plain
  // scans over every combination, which must give bit-identical results.
  bool exhaustive_scans = false;
};

// How well the estimator did (SimulationResult::throughput_estimation).
struct ThroughputEstimationSummary {
  double profiling_percentage = 1.0;
  int num_reference_models = 26;
  std::size_t jobs_matched = 0;
  std::size_t jobs_matched_true_type = 0;  // matched to their own type
  double matched_true_type_fraction = 0.0;
  std::size_t fallbacks = 0;  // compat: random choices; default: nothing profiled
  // Mean |estimated − table| of the normalised co-located throughput (relative to alone), over
  // both members of every pair the scheduler created, on every GPU type of the cluster where
  // the member can run alone, as estimated when the pair was created.
  double mean_absolute_error = 0.0;
  std::int64_t estimated_entries = 0;
  std::int64_t pairs_measured = 0;  // (pair, GPU type) combinations that ran and were measured
};

struct JobResult {
  JobId id;
  std::string job_type;
  int scale_factor = 1;
  double priority_weight = 1.0;
  Seconds arrival{0.0};
  std::optional<Seconds> first_start;
  std::optional<Seconds> finish;
  std::optional<Seconds> jct;
  std::optional<Seconds> deadline;
  bool dropped = false;
  bool in_window = false;
  std::vector<double> gpu_seconds;  // per GPU type, in SimulationResult::gpu_types order
  double cost = 0.0;
  std::optional<double> rho;  // finish-time fairness, with `fairness`
  bool failed = false;        // physics: a user error, or out of retries
  // Seconds its allocation entitled it to and seconds it ran (mechanism::JobRecord); none for
  // a run without the round mechanism's books (`gavel replay`'s live run).
  std::optional<double> entitled_seconds;
  std::optional<double> received_seconds;
  // Arrival to first start, split as the Philly study does: fragmentation delay while enough
  // GPUs of a type it can use were free in total yet it was not placed, fair-share delay
  // otherwise (waiting for its share of GPUs).
  std::optional<Seconds> queueing_delay;
  double fair_share_delay_seconds = 0.0;
  double fragmentation_delay_seconds = 0.0;
  bool rejected = false;           // refused by the policy's admission control (oasis)
  std::optional<double> utility;   // its utility at its JCT, when it has a utility and finished
};

// JCT statistics of the window's completed jobs of one size class (physics.h SizeClass).
struct SizeClassJct {
  std::string name;
  std::size_t jobs = 0;
  double mean = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
};

struct FairnessSummary {
  std::size_t jobs = 0;  // window jobs finished under both policies
  double mean_rho = 0.0;
  double max_rho = 0.0;
  double p50_rho = 0.0;
  double p90_rho = 0.0;
  double p99_rho = 0.0;
  double fraction_above_one = 0.0;
};

struct SimulationResult {
  // Configuration echo.
  std::string policy;
  std::uint64_t seed = 0;
  mechanism::Compat compat;
  bool ideal = false;
  std::vector<std::string> gpu_types;  // sorted names
  std::vector<int> gpu_counts;         // parallel to gpu_types

  // Window.
  std::size_t window_start = 0;
  std::size_t window_end = 0;
  std::optional<Seconds> window_start_time;  // arrival of the first window job
  std::size_t window_jobs_completed = 0;
  std::size_t window_jobs_dropped = 0;

  // JCT over the window's completed jobs (dropped jobs excluded, as in the original).
  double average_jct_seconds = 0.0;
  double jct_p50_seconds = 0.0;
  double jct_p90_seconds = 0.0;
  double jct_p99_seconds = 0.0;
  double makespan_seconds = 0.0;  // simulated time at the end of the run
  // The original's: mean over GPUs of busy time / run time (compat: busy time as booked).
  double utilization = 0.0;
  // GPU-busy seconds inside the window (real intervals) / (GPUs × window duration).
  double window_utilization = 0.0;
  double total_cost = 0.0;
  std::size_t slo_jobs = 0;
  std::size_t slo_violations = 0;
  std::int64_t lease_extensions = 0;
  std::int64_t lease_extension_opportunities = 0;
  std::int64_t rounds = 0;
  std::int64_t allocation_recomputations = 0;
  std::int64_t policy_solves = 0;
  double policy_solve_seconds = 0.0;
  std::int64_t micro_tasks = 0;
  std::int64_t failed_micro_tasks = 0;
  std::size_t jobs_admitted = 0;
  std::size_t jobs_completed = 0;
  std::size_t jobs_dropped = 0;
  double wall_seconds = 0.0;

  std::optional<FairnessSummary> fairness;

  // Utilities (core/utility.h): reported when any job has one. total_utility sums the window's
  // completed jobs' utility at their JCT; jobs_rejected counts window jobs refused by
  // admission control (0 for every scheduler without it).
  bool has_utility = false;
  double total_utility = 0.0;
  std::size_t jobs_rejected = 0;

  // The run stopped at options.saturation_limit with window jobs unfinished.
  bool saturated = false;
  // What was left when the run ended (BacklogOf): tells a cut caused by a few starving jobs
  // (starved_jobs > 0, a small backlog) from an overloaded cluster (a backlog that grew).
  std::size_t active_jobs_at_end = 0;  // admitted, not finished, dropped, rejected or failed
  std::size_t starved_jobs = 0;        // unfinished window jobs far below their equal share
  double oldest_unfinished_window_job_age_seconds = 0.0;  // 0 when every window job is done
  // GPU-seconds the GPUs were busy (as the utilisation counts them), and the part of it spent
  // on restart overhead (physics.restart_overhead_gpu_seconds / busy_gpu_seconds; 0 if idle).
  double busy_gpu_seconds = 0.0;
  double restart_share = 0.0;
  // Realised against allocated share: over the window's completed jobs, the mean of
  // |time run − time the allocation entitled it to| / JCT (mechanism::JobRecord's received and
  // entitled seconds). 0 = every job received exactly its allocation's time share.
  double allocation_share_mad = 0.0;
  // Physics counters (zero when physics is off) and the Philly study's metrics.
  PhysicsStats physics;
  std::size_t failed_jobs = 0;  // window jobs that failed
  double queueing_delay_mean_seconds = 0.0;  // window jobs that started
  double queueing_delay_p50_seconds = 0.0;
  double queueing_delay_p90_seconds = 0.0;
  double fair_share_delay_mean_seconds = 0.0;
  double fragmentation_delay_mean_seconds = 0.0;
  std::vector<SizeClassJct> jct_by_size;  // the four classes, in order
  // Busy GPUs / all GPUs per bucket of options.timeline_bucket from time 0 (round runs).
  double timeline_bucket_seconds = 0.0;
  std::vector<double> utilization_timeline;

  std::optional<ThroughputEstimationSummary> throughput_estimation;  // when estimating
  std::vector<JobResult> jobs;  // every admitted job, by id (SimulationOptions::keep_jobs)
};

Result<SimulationResult> Simulate(const SimulationOptions& options);

// The backlog at the end of a run, from its per-job list. A job is active from its arrival
// until it finishes (or is dropped, rejected or fails; such a job counts as active until the
// end, having no finish time). An unfinished window job is starved when the GPU-seconds it
// received per second since its arrival are below `starved_below` times its equal share:
// min(its GPUs, total_gpus / the time-average number of active jobs since its arrival).
struct Backlog {
  std::size_t active_jobs = 0;
  std::size_t starved_jobs = 0;
  double oldest_unfinished_window_job_age_seconds = 0.0;
};
inline constexpr double kStarvedBelowEqualShare = 0.25;
Backlog BacklogOf(const std::vector<JobResult>& jobs, int total_gpus, Seconds end,
                  double starved_below = kStarvedBelowEqualShare);

// The policy the scheduler runs: `policy` itself, or, when restarts cost something
// (physics.restart_overhead) and the user gave no options, with `stay=` kStayWhenRestartsCost
// for the policies that take it (docs/policies.md, "Staying put").
inline constexpr double kStayWhenRestartsCost = 0.05;
std::string PolicyWithPhysicsDefaults(const std::string& policy, const PhysicsOptions& physics);
// `policy` as `gavel serve --policy` runs it (the policy's own defaults, `stay` off), spelled so
// that PolicyWithPhysicsDefaults adds nothing: a name without options that offers `stay` gets
// `stay=0`. What `gavel replay --compare` simulates, so that both run the same policy.
std::string PolicyAsServed(const std::string& policy);

// The bounded lag's K when restarts cost something (PhysicsOptions::lag_bound_restarts): the
// mechanism's default, which `gavel serve` runs too (bench/README.md, "Restart-aware
// realisation").
inline constexpr double kLagBoundRestarts = mechanism::kDefaultLagBoundRestarts;
// The K the scheduler runs with: 0 without restart overhead, the user's, or the default for
// `policy` (0 for a policy that reallocates every round: it picks what runs itself).
double LagBoundFor(const std::string& policy, const PhysicsOptions& physics);

// The result as JSON (docs/formats.md), without the per-job list.
std::string ResultToJson(const SimulationResult& result);
// The per-job CSV: id, job_type, scale_factor, priority_weight, arrival, first_start, finish,
// jct, in_window, dropped, gpu_seconds_<type>..., cost, rho, failed, the queueing delays,
// entitled_seconds, received_seconds (empty cells where unknown).
std::string JobsToCsv(const SimulationResult& result);
// The same, a part at a time (a run streaming its jobs through SimulationOptions::job_sink):
// the header for the GPU types (SimulationResult::gpu_types: the layout's sorted names), and
// one job's row.
void WriteJobsCsvHeader(const std::vector<std::string>& gpu_types, std::ostream& out);
void WriteJobsCsvRow(const JobResult& job, std::ostream& out);

// Fills a result's run-wide figures from its per-job list, for a run the simulator did not
// make (`gavel replay`'s live run) so that ResultToJson and JobsToCsv write it like a simulated
// one. Reads each job's in_window, jct, dropped, failed, rejected, queueing_delay and
// scale_factor; sets the window's counts, JCT mean and percentiles, queueing delays and JCT per
// size class. Leaves the rest (makespan, utilisation, configuration echo) to the caller.
void SummarizeJobs(SimulationResult& result);

// numpy.percentile's default (linear interpolation); `values` need not be sorted; 0 if empty.
double Percentile(std::vector<double> values, double percent);

}  // namespace gavel::sim
