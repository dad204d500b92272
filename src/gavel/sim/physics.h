// The physics of a shared GPU cluster that the original simulator leaves out (docs/simulator.md):
// per-job-type slow-down when a job's GPUs span servers or racks, a restart overhead whenever a job
// starts, resumes or moves, host CPU/memory demands, and failures after the Philly study (user
// errors early, not retried; infrastructure failures later, retried with backoff from the last
// checkpoint). Every part is off unless asked for, and the simulator forces all of it off under
// `--compat gavel`.
//
// The tables are data (data/placement_penalty.csv, data/restart_overhead.csv) keyed by model
// family: the job type up to " (batch size ...)". A family missing from a table uses its "*"
// row, or no effect when the table has none.
//
// PhysicsModel applies the options to a run: it adjusts each micro-task the SimExecutor
// launches (steps done, when it ends, whether it fails) and keeps the counters the result
// reports. Failure draws come from a generator seeded by (seed, job id) alone, so a job's
// failure fate does not depend on the policy or on other jobs.
// Tables are immutable values; a PhysicsModel belongs to one run (not synchronised).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/mechanism/placement.h"
#include "gavel/mechanism/round_plan.h"
#include "gavel/workload/job_outcome.h"

namespace gavel::sim {

// "ResNet-50 (batch size 64)" -> "ResNet-50".
std::string ModelFamily(std::string_view job_type);

// Throughput factors for a job whose GPUs span more than one server (in one rack) or more
// than one rack. File: CSV `family,across_servers,across_racks`, '#' comment lines, factors in
// (0, 1].
struct PlacementPenalty {
  struct Factors {
    double across_servers = 1.0;
    double across_racks = 1.0;
  };
  std::map<std::string, Factors, std::less<>> by_family;
  // Multiplier on the job's throughput when its GPUs lie on `servers` servers in `racks`
  // racks (1 for one server).
  double Factor(std::string_view job_type, int servers, int racks) const;
  static Result<PlacementPenalty> Parse(std::string_view text, const std::string& source);
  static Result<PlacementPenalty> LoadFile(const std::string& path);
};

// Seconds a job loses each time it starts, resumes after preemption or moves (process
// start, checkpoint restore, warm-up). File: CSV `family,seconds`, '#' comment lines.
struct RestartOverhead {
  std::map<std::string, double, std::less<>> by_family;
  Seconds For(std::string_view job_type) const;
  static RestartOverhead Uniform(double seconds);
  static Result<RestartOverhead> Parse(std::string_view text, const std::string& source);
  static Result<RestartOverhead> LoadFile(const std::string& path);
};

// Job-size classes used by the failure model and the metrics: 1, 2-4, 5-8, >8 GPUs.
int SizeClass(int gpus);
inline constexpr std::array<const char*, 4> kSizeClassNames = {"1", "2-4", "5-8", ">8"};

// Failures, after the Philly study (docs/simulator.md gives the figures behind the defaults).
// File: JSON with the fields below (all optional; missing = the Philly default).
struct FailureModel {
  // Chance that a job has a (deterministic) user error, by size class; it fails after an
  // exponentially distributed run time with mean user_error_mean_seconds and is not retried.
  std::array<double, 4> user_error_probability = {0.08, 0.12, 0.16, 0.20};
  double user_error_mean_seconds = 600.0;
  // Infrastructure failures: a Poisson process in the job's GPU-hours of running.
  double infra_failures_per_gpu_hour = 1.0 / 1000.0;
  // gavel serve's retry rule: retried after backoff · 2^(k-1) (capped), failed after more than
  // max_retries failures.
  int max_retries = 3;
  double retry_backoff_seconds = 10.0;
  double max_retry_backoff_seconds = 600.0;

  static FailureModel Philly() { return FailureModel{}; }
  static Result<FailureModel> Parse(std::string_view text, const std::string& source);
  static Result<FailureModel> LoadFile(const std::string& path);
  Seconds Backoff(int failures) const;
};

// Default host demands per GPU by model family (docs/simulator.md); a trace may override.
mechanism::WorkerDemand DefaultDemand(std::string_view job_type);

struct PhysicsOptions {
  // Racks and host resources (servers_per_rack 0 and unlimited CPU/memory = as before).
  mechanism::HostResources host;
  std::optional<PlacementPenalty> placement_penalty;
  std::optional<RestartOverhead> restart_overhead;
  std::optional<FailureModel> failures;
  // The scheduler knows each job's restart overhead and weighs it against moving the job to
  // another GPU type (the mechanism's restart_cost scorer). Needs restart_overhead; changes
  // decisions, not physics.
  bool restart_aware = false;
  // The mechanism's bounded lag (mechanism/chooser.h): a running job keeps its GPUs until a
  // waiting one is owed more than this many of its restart costs. nullopt = the default
  // (kLagBoundRestarts) for policies whose allocation the mechanism time-slices (not those
  // that reallocate every round), whenever restart_overhead is set; 0 = off.
  std::optional<double> lag_bound_restarts;
  // How `gavel serve` runs a lease, for comparing with a live run (docs/runtime.md, "Replaying
  // a trace"). Off (false, 0) = the simulator's own model, where a restart's overhead is taken
  // out of the lease (at most half of it) and a round's micro-tasks start at its plan.
  //   restart_outside_lease: the lease starts once the program is up (the iterator's Init),
  //     so a restart's overhead lengthens the micro-task instead of shortening its training.
  //   dispatch_delay: every micro-task, lease extensions included, starts this long after the
  //     round's plan (the reports of the round before, the plan and StartRound reaching the
  //     agents): the gap between two rounds' leases.
  //   whole_steps: leases end on whole steps, as the runtime's iterator ends them. A
  //     single-GPU (time) lease runs to the first step boundary at or after its time (the
  //     iterator checks the lease before each step), so it trains ceil(time x throughput)
  //     steps and overruns its time by up to a step; a multi-GPU job's lease is a step bound
  //     of floor(lease x throughput) steps, at least one, and no time bound (the daemon's gang
  //     lease, AgentExecutor). A round lasts as long as its longest micro-task, so the
  //     overruns lengthen it as they lengthen a live round that waits for its reports. The
  //     fractional model (false) is what matters at real time scales, where a step is a
  //     small part of a round; at 60x a K80 step of some job types is half a 6-s round.
  bool restart_outside_lease = false;
  Seconds dispatch_delay{0.0};
  bool whole_steps = false;
  //   step_early_leases: with whole_steps, a single-GPU time lease that holds more than a
  //     step is one step shorter, so that it ends within its time (the daemon's on-time
  //     rounds, `gavel serve --rounds-on-time`: the report is in at the boundary); a
  //     multi-GPU job's step bound is the steps that fit in the lease after its restart, a
  //     step short, at least one.
  bool step_early_leases = false;
  //   arrival_settle: a round that starts on an idle cluster (nothing running) starts this
  //     long after the arrival that wakes it, with every job arrived by then, as gavel serve's
  //     does (daemon/core_options.h, arrival_settle()): jobs arriving within it start together,
  //     and the waking job waits it out. Arrivals while anything runs wait for the round's end
  //     either way. Decides when rounds start, not how a lease runs: no PhysicsModel needed.
  Seconds arrival_settle{0.0};
  // Placement is topology-aware (placement.h) whenever any host resource or rack grouping
  // is given or the placement penalty is on.
  bool topology_aware() const {
    return host.servers_per_rack > 0 || host.cpus_per_server > 0.0 ||
           host.mem_gb_per_server > 0.0 || placement_penalty.has_value();
  }
  bool any() const {
    return topology_aware() || restart_overhead.has_value() || failures.has_value() ||
           dispatch_delay.value() > 0.0 || whole_steps || arrival_settle.value() > 0.0;
  }
};

// The shipped defaults (--realistic and `--placement-penalty`/`--restart-overhead` with no
// file): data/placement_penalty.csv, data/restart_overhead.csv, FailureModel::Philly().
std::string ShippedPlacementPenaltyFile();
std::string ShippedRestartOverheadFile();

struct PhysicsStats {
  std::int64_t restarts = 0;  // resumes and moves (first starts excluded)
  double restart_overhead_gpu_seconds = 0.0;
  double placement_slowdown_gpu_seconds = 0.0;
  std::int64_t spread_micro_tasks = 0;  // ran on more than one server
  std::int64_t user_errors = 0;
  std::int64_t infra_failures = 0;
  std::int64_t failed_jobs = 0;  // user errors, plus jobs out of retries
  double wasted_gpu_seconds = 0.0;
};

enum class Failure { kNone, kUser, kInfra };

// What PhysicsModel decided for one launched micro-task.
struct Outcome {
  std::vector<double> steps;  // per member, done by the end
  Seconds finish{0.0};
  Failure failure = Failure::kNone;
};

class PhysicsModel {
 public:
  PhysicsModel(PhysicsOptions options, const mechanism::ClusterLayout* layout,
               std::uint64_t seed);
  const PhysicsOptions& options() const { return options_; }

  // Job ids are dense; call once per job as it is admitted. With a failure model, a job whose
  // workload planned its end (`planned`, job_outcome.h: the Philly workload, imported traces)
  // follows that plan instead of the model's draws: a user error or an infrastructure failure
  // strikes when its progress reaches at_progress x total_steps (the infrastructure failure
  // once, then it is retried and runs on). A planned kill is no failure: the simulator ends
  // the job there by shortening its steps (PlannedSteps). Without a failure model the plan
  // is ignored.
  void AdmitJob(JobId job, std::string_view job_type, int gpus, double total_steps = 0.0,
                const std::optional<workload::JobOutcome>& planned = std::nullopt);
  // The steps a job runs to: its total, or the planned kill point under a failure model.
  double PlannedSteps(double total_steps,
                      const std::optional<workload::JobOutcome>& planned) const;
  // The micro-task of `a` started at `start`.
  Outcome Launch(const mechanism::Assignment& a, Seconds start);
  // The job failed for good (user error, or out of retries) after using `gpu_seconds` of
  // successful micro-tasks, all of which is lost.
  void JobFailed(double gpu_seconds);
  // An infrastructure failure of the job: true = retry (after Backoff(failures)), false = out
  // of retries.
  bool Retry(JobId job, int* failures);
  bool Failed(JobId job) const { return jobs_.at(Index(job)).failed; }
  void MarkFailed(JobId job) { jobs_.at(Index(job)).failed = true; }
  const PhysicsStats& stats() const { return stats_; }

 private:
  struct JobState {
    std::string job_type;
    bool started = false;
    bool failed = false;
    int infra_failures = 0;
    double run_seconds = 0.0;  // time it has run (micro-tasks, restarts included)
    double user_error_at = std::numeric_limits<double>::infinity();
    double infra_failure_at = std::numeric_limits<double>::infinity();
    // A planned failure (AdmitJob): strikes when steps_done would pass planned_at_steps.
    Failure planned_failure = Failure::kNone;
    double planned_at_steps = std::numeric_limits<double>::infinity();
    double steps_done = 0.0;  // steps of successful micro-tasks (for planned failures)
    std::uint64_t rng = 0;  // splitmix64 state
  };
  static std::size_t Index(JobId job) { return static_cast<std::size_t>(job.value()); }
  double Exponential(JobState& job, double mean);

  PhysicsOptions options_;
  const mechanism::ClusterLayout* layout_;
  std::uint64_t seed_;
  std::vector<JobState> jobs_;
  PhysicsStats stats_;
};

}  // namespace gavel::sim
