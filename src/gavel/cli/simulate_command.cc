#include "gavel/cli/simulate_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <vector>

#include "gavel/cli/flag_bounds.h"
#include "gavel/cli/throughputs_option.h"
#include "gavel/core/bounds.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/policy/registry.h"
#include "gavel/sim/simulator.h"
#include "gavel/workload/generator.h"
#include "gavel/workload/philly_workload.h"
#include "gavel/workload/trace_importers.h"
#include "gavel/workload/trace_io.h"

namespace gavel::cli {
namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

Result<double> ParseNumber(const std::string& text, const std::string& what) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument(what + ": \"" + text + "\" is not a number");
}

Result<int> ParseCount(const std::string& text, const std::string& what) {
  GAVEL_ASSIGN_OR_RETURN(const double value, ParseNumber(text, what));
  if (value < 0.0 || value != std::floor(value) || value > bounds::kMaxGpus) {
    return Status::InvalidArgument(what + ": \"" + text + "\" is not an integer in [0, " +
                                   std::to_string(bounds::kMaxGpus) + "]");
  }
  return static_cast<int>(value);
}

// "36:36:36" with types "v100,p100,k80" -> specs in the user's order.
Result<std::vector<GpuTypeSpec>> ParseCluster(const SimulateOptions& o) {
  const std::vector<std::string> types = Split(o.worker_types, ',');
  const std::vector<std::string> counts = Split(o.cluster, ':');
  const std::vector<std::string> per_server = Split(o.gpus_per_server, ':');
  if (types.empty()) return Status::InvalidArgument("--worker-types: no GPU type given");
  if (counts.size() != types.size()) {
    return Status::InvalidArgument("--cluster \"" + o.cluster + "\": expected " +
                                   std::to_string(types.size()) + " counts (" + o.worker_types +
                                   "), separated by ':'");
  }
  if (per_server.size() != types.size()) {
    return Status::InvalidArgument("--num-gpus-per-server \"" + o.gpus_per_server +
                                   "\": expected " + std::to_string(types.size()) + " values (" +
                                   o.worker_types + "), separated by ':'");
  }
  std::vector<GpuTypeSpec> specs;
  for (std::size_t i = 0; i < types.size(); ++i) {
    GpuTypeSpec spec;
    spec.name = types[i];
    GAVEL_ASSIGN_OR_RETURN(spec.count, ParseCount(counts[i], "--cluster"));
    GAVEL_ASSIGN_OR_RETURN(spec.gpus_per_server,
                           ParseCount(per_server[i], "--num-gpus-per-server"));
    if (spec.gpus_per_server < 1) {
      return Status::InvalidArgument("--num-gpus-per-server: each type needs at least 1");
    }
    specs.push_back(spec);
  }
  return specs;
}

Result<std::map<std::string, double>> ParseCosts(const SimulateOptions& o) {
  std::map<std::string, double> costs;
  if (o.instance_costs.empty()) return costs;
  const std::vector<std::string> types = Split(o.worker_types, ',');
  const std::vector<std::string> prices = Split(o.instance_costs, ':');
  if (prices.size() != types.size()) {
    return Status::InvalidArgument("--instance-costs \"" + o.instance_costs + "\": expected " +
                                   std::to_string(types.size()) + " prices (" + o.worker_types +
                                   "), separated by ':'");
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    GAVEL_ASSIGN_OR_RETURN(const double price, ParseNumber(prices[i], "--instance-costs"));
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(price, 0.0, bounds::kMaxPrice, "--instance-costs",
                                             " $/hour"));
    costs[types[i]] = price;
  }
  return costs;
}

Status WriteOutput(const std::string& path, const std::string& text, std::ostream& out) {
  if (path == "-") {
    out << text;
    return Status::Ok();
  }
  std::ofstream file(path);
  if (!file) return Status::IoError(path + ": cannot open for writing");
  file << text;
  if (!file.good()) return Status::IoError(path + ": write failed");
  return Status::Ok();
}

void PrintSummary(const sim::SimulationResult& r, std::ostream& out) {
  out << std::fixed << std::setprecision(3);
  out << "Policy " << r.policy << ", seed " << r.seed;
  if (r.compat.all()) {
    out << ", compat gavel";
  } else {
    for (const std::string& name : r.compat.Names()) out << ", compat " << name;
  }
  out << (r.ideal ? ", ideal" : "") << "\n";
  out << "Window jobs [" << r.window_start << ", " << r.window_end
      << "): " << r.window_jobs_completed << " completed, " << r.window_jobs_dropped
      << " dropped\n";
  out << "Average job completion time: " << r.average_jct_seconds << " seconds ("
      << std::setprecision(2) << r.average_jct_seconds / 3600.0 << " hours)\n";
  out << std::setprecision(3);
  out << "JCT p50/p90/p99: " << r.jct_p50_seconds << " / " << r.jct_p90_seconds << " / "
      << r.jct_p99_seconds << " seconds\n";
  out << "Total duration: " << r.makespan_seconds << " seconds (" << std::setprecision(2)
      << r.makespan_seconds / 3600.0 << " hours)\n";
  out << std::setprecision(3);
  out << "Cluster utilization: " << r.utilization << " (window " << r.window_utilization << ")\n";
  if (r.total_cost > 0.0) out << "Total cost: $" << std::setprecision(2) << r.total_cost << "\n";
  if (r.slo_jobs > 0) {
    out << "Number of SLO violations: " << r.slo_violations << " of " << r.slo_jobs << "\n";
  }
  out << std::setprecision(2);
  if (r.lease_extension_opportunities > 0) {
    out << "Extended leases "
        << 100.0 * static_cast<double>(r.lease_extensions) /
               static_cast<double>(r.lease_extension_opportunities)
        << "% of the time (" << r.lease_extensions << "/" << r.lease_extension_opportunities
        << ")\n";
  }
  if (r.throughput_estimation) {
    const sim::ThroughputEstimationSummary& e = *r.throughput_estimation;
    out << std::setprecision(4) << "Throughput estimation (P " << e.profiling_percentage
        << ", K " << e.num_reference_models << "): mean absolute error " << e.mean_absolute_error
        << ", true type matched " << e.jobs_matched_true_type << "/" << e.jobs_matched << "\n";
  }
  if (r.fairness) {
    out << std::setprecision(3) << "Finish-time fairness vs isolated: mean rho "
        << r.fairness->mean_rho << ", max " << r.fairness->max_rho << ", p90 "
        << r.fairness->p90_rho << "\n";
  }
  out << std::setprecision(3);
  out << "Queueing delay p50/p90: " << r.queueing_delay_p50_seconds << " / "
      << r.queueing_delay_p90_seconds << " seconds (mean fair-share "
      << r.fair_share_delay_mean_seconds << ", fragmentation "
      << r.fragmentation_delay_mean_seconds << ")\n";
  if (r.physics.restarts > 0 || r.physics.restart_overhead_gpu_seconds > 0.0 ||
      r.physics.placement_slowdown_gpu_seconds > 0.0 || r.physics.user_errors > 0 ||
      r.physics.infra_failures > 0) {
    out << "Restarts: " << r.physics.restarts << " (" << r.physics.restart_overhead_gpu_seconds
        << " GPU-s, " << 100.0 * r.restart_share << "% of busy GPU-time), placement slow-down: " << r.physics.placement_slowdown_gpu_seconds
        << " GPU-s, failed jobs: " << r.failed_jobs << " (" << r.physics.user_errors
        << " user errors, " << r.physics.infra_failures << " infrastructure failures), wasted "
        << r.physics.wasted_gpu_seconds << " GPU-s\n";
  }
  out << "Realised vs allocated time share (allocation_share_mad): " << r.allocation_share_mad
      << "\n";
  if (r.saturated) out << "SATURATED: the run was cut at the saturation limit\n";
  if (r.active_jobs_at_end > 0) {
    out << "Left at the end: " << r.active_jobs_at_end << " active jobs, " << r.starved_jobs
        << " starved window jobs, oldest unfinished window job "
        << r.oldest_unfinished_window_job_age_seconds / 3600.0 << " hours old\n";
  }
  out << "Rounds: " << r.rounds << ", policy solves: " << r.policy_solves << " ("
      << r.policy_solve_seconds << " s), wall time: " << r.wall_seconds << " s\n";
  out.unsetf(std::ios::fixed);
}

// The saturation bound `spec` asks for; `span` = the window's arrival span (0 = static);
// `longest` = the longest job's run time alone on its slowest GPU type, when known (traces).
Result<std::optional<Seconds>> SaturationLimit(const std::string& spec, double span,
                                               double longest) {
  if (spec == "none") return std::optional<Seconds>();
  if (spec == "auto") {
    if (!(span > 0.0)) return std::optional<Seconds>();
    // As `gavel sweep`: twice the arrival span, plus 30 days for the longest jobs; plus, for a
    // trace, its longest job's run time, so that one job of months (public traces have them)
    // is not taken for an overloaded cluster.
    return std::optional<Seconds>(Seconds(2.0 * span + 30.0 * 24.0 * 3600.0 + longest));
  }
  GAVEL_ASSIGN_OR_RETURN(const double seconds, ParseNumber(spec, "--saturation-limit"));
  if (!(seconds > 0.0)) {
    return Status::InvalidArgument("--saturation-limit must be auto, none or positive seconds");
  }
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(seconds, 0.0, bounds::kMaxSeconds,
                                           "--saturation-limit", " s"));
  return std::optional<Seconds>(Seconds(seconds));
}

// A redrawn status line on stderr, at most twice a second.
std::function<void(const sim::Progress&)> ProgressLine() {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [last](const sim::Progress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(500)) return;
    *last = now;
    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << "\rsimulated " << p.now.value() / 3600.0
         << " h, round " << p.rounds << ": window jobs " << p.window_done << "/"
         << p.window_jobs << " done, " << p.active << " active, " << p.admitted
         << " admitted   ";
    std::cerr << line.str() << std::flush;
  };
}

// A trace in one of our formats, or imported from a public one (notes get the import report).
Result<std::vector<workload::TraceJob>> ReadWorkloadTrace(const SimulateOptions& o,
                                                          const ThroughputTable& table,
                                                          std::vector<std::string>* notes) {
  const Result<workload::PublicTraceFormat> public_format =
      workload::ParsePublicTraceFormat(o.trace_format);
  if (!public_format.ok()) {
    GAVEL_ASSIGN_OR_RETURN(const workload::TraceFormat format,
                           workload::ParseTraceFormat(o.trace_format));
    return workload::ReadTraceFile(o.trace_file, format);
  }
  workload::ImportOptions import;
  import.seed = o.seed;
  import.skip_bad_rows = o.skip_bad_rows;
  import.pai_task_table = o.trace_tasks;
  GAVEL_ASSIGN_OR_RETURN(
      workload::ImportedTrace imported,
      workload::ImportPublicTraceFile(o.trace_file, *public_format, import, table));
  if (notes != nullptr) notes->push_back(imported.report.Summary(o.trace_file));
  return std::move(imported.jobs);
}

// --workload philly: the Philly-like stream rides on the generator options (generator.h).
Status AddPhillyWorkload(const SimulateOptions& o, workload::GeneratorOptions& g) {
  if (o.multi_priority || o.assign_slos || o.fixed_duration || o.steady_state) {
    return Status::InvalidArgument(
        "--workload philly draws sizes and durations from the Philly table; it does not "
        "combine with --generate-multi-priority-jobs, --assign-slos, --fixed-job-duration or "
        "--simulate-steady-state");
  }
  GAVEL_ASSIGN_OR_RETURN(
      workload::PhillyJobDistribution table,
      workload::PhillyJobDistribution::LoadCsv(workload::DefaultPhillyDistributionFile()));
  auto philly = std::make_shared<workload::PhillyWorkloadOptions>();
  philly->distribution = std::make_shared<const workload::PhillyJobDistribution>(std::move(table));
  philly->diurnal_amplitude = o.diurnal_amplitude;
  const Status valid = workload::ValidatePhillyWorkloadOptions(*philly);
  if (!valid.ok()) return Status::InvalidArgument("--diurnal-amplitude: " + valid.message());
  g.philly_workload = std::move(philly);
  return Status::Ok();
}

}  // namespace

Status CheckJobsPerHour(double jobs_per_hour, const std::string& where) {
  return bounds::CheckRange(jobs_per_hour, 3600.0 / bounds::kMaxSeconds, bounds::kMaxJobsPerHour,
                            where, " jobs/hour");
}

Result<sim::PhysicsOptions> ToPhysicsOptions(const PhysicsFlags& f) {
  sim::PhysicsOptions physics;
  // Held to these bounds here as well as by the flags' validators: sweep lines and tests
  // build PhysicsFlags without CLI11.
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(f.servers_per_rack, 0.0, bounds::kMaxGpus,
                                           "--servers-per-rack"));
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(f.cpus_per_server, 0.0, bounds::kMaxHostCpus,
                                           "--cpus-per-server", " cores (0 = not limited)"));
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(f.mem_per_server_gb, 0.0, bounds::kMaxHostMemGb,
                                           "--mem-per-server-gb", " GB (0 = not limited)"));
  physics.host.servers_per_rack = f.servers_per_rack;
  physics.host.cpus_per_server = f.cpus_per_server;
  physics.host.mem_gb_per_server = f.mem_per_server_gb;
  const auto annotate = [](const Status& status, const std::string& flag) {
    return Status(status.code(), flag + ": " + status.message());
  };

  std::string penalty = f.placement_penalty;
  if (penalty.empty() && f.realistic) penalty = "default";
  if (!penalty.empty() && penalty != "none") {
    const std::string path = penalty == "default" ? sim::ShippedPlacementPenaltyFile() : penalty;
    Result<sim::PlacementPenalty> table = sim::PlacementPenalty::LoadFile(path);
    if (!table.ok()) return annotate(table.status(), "--placement-penalty");
    physics.placement_penalty = std::move(*table);
  }

  std::string restart = f.restart_overhead;
  if (restart.empty() && f.realistic) restart = "default";
  if (!restart.empty() && restart != "none") {
    const std::optional<double> seconds = ParseFiniteDouble(restart);
    if (seconds && !std::filesystem::exists(restart)) {
      GAVEL_RETURN_IF_ERROR(
          bounds::CheckRange(*seconds, 0.0, bounds::kMaxRoundSeconds, "--restart-overhead", " s"));
      physics.restart_overhead = sim::RestartOverhead::Uniform(*seconds);
    } else {
      const std::string path = restart == "default" ? sim::ShippedRestartOverheadFile() : restart;
      Result<sim::RestartOverhead> table = sim::RestartOverhead::LoadFile(path);
      if (!table.ok()) return annotate(table.status(), "--restart-overhead");
      physics.restart_overhead = std::move(*table);
    }
  }

  if (f.restart_aware && !physics.restart_overhead) {
    return Status::InvalidArgument(
        "--restart-aware: needs a restart overhead (--realistic or --restart-overhead)");
  }
  physics.restart_aware = f.restart_aware;
  if (f.lag_bound && !physics.restart_overhead) {
    return Status::InvalidArgument(
        "--lag-bound: needs a restart overhead (--realistic or --restart-overhead)");
  }
  physics.lag_bound_restarts = f.lag_bound;
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(f.dispatch_delay, 0.0, bounds::kMaxRoundSeconds,
                                           "--dispatch-delay", " s"));
  physics.restart_outside_lease = f.restart_outside_lease;
  physics.dispatch_delay = Seconds(f.dispatch_delay);
  physics.whole_steps = f.whole_steps;
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(f.arrival_settle.value_or(0.0), 0.0,
                                           bounds::kMaxRoundSeconds, "--arrival-settle", " s"));
  physics.arrival_settle = Seconds(f.arrival_settle.value_or(0.0));

  std::string failures = f.failures;
  if (failures.empty() && f.realistic) failures = "philly";
  if (failures == "philly") {
    physics.failures = sim::FailureModel::Philly();
  } else if (!failures.empty() && failures != "none") {
    Result<sim::FailureModel> model = sim::FailureModel::LoadFile(failures);
    if (!model.ok()) return annotate(model.status(), "--failures");
    physics.failures = std::move(*model);
  }
  return physics;
}

void AddPhysicsFlags(CLI::App* command, PhysicsFlags* flags) {
  command
      ->add_option("--servers-per-rack", flags->servers_per_rack,
                   "Servers per rack, per GPU type (default 0: one rack per type)")
      ->check(BoundedInteger(0, bounds::kMaxGpus));
  command
      ->add_option("--cpus-per-server", flags->cpus_per_server,
                   "CPU cores per server (default 0: not limited)")
      ->check(Bounded(0.0, bounds::kMaxHostCpus, " cores"));
  command
      ->add_option("--mem-per-server-gb", flags->mem_per_server_gb,
                   "Host memory per server in GB (default 0: not limited)")
      ->check(Bounded(0.0, bounds::kMaxHostMemGb, " GB"));
  command->add_option("--placement-penalty", flags->placement_penalty,
                      "Slow-down of jobs spread over servers/racks: FILE, default "
                      "(data/placement_penalty.csv) or none");
  command->add_option("--restart-overhead", flags->restart_overhead,
                      "Cost of a start, resume or move: SECONDS, FILE, default "
                      "(data/restart_overhead.csv) or none");
  command->add_option("--failures", flags->failures,
                      "Job failures: philly (the Philly study's model), FILE (JSON) or none");
  command->add_flag("--restart-outside-lease", flags->restart_outside_lease,
                    "A restart's overhead lengthens the micro-task instead of shortening its "
                    "lease (gavel serve's leases start once the program is up)");
  command
      ->add_option("--dispatch-delay", flags->dispatch_delay,
                   "Seconds every lease starts after its round's plan (gavel serve's reports "
                   "and dispatch between rounds; default 0)")
      ->check(Bounded(0.0, bounds::kMaxRoundSeconds, " s"));
  command->add_flag("--whole-steps", flags->whole_steps,
                    "Leases end on whole steps as gavel serve's do: a time lease runs to the "
                    "step boundary after its time, a multi-GPU lease is floor(round x "
                    "throughput) steps");
  command
      ->add_option("--arrival-settle", flags->arrival_settle,
                   "Seconds a round that starts on an idle cluster waits after the arrival "
                   "that wakes it, so that jobs arriving meanwhile start with it (gavel "
                   "serve's pause: 5 % of the round, at most 1 s; default 0)")
      ->check(Bounded(0.0, bounds::kMaxRoundSeconds, " s"));
  command->add_flag("--realistic", flags->realistic,
                    "Placement penalty, restart overhead and Philly failures with the shipped "
                    "defaults (each can still be set explicitly)");
  command->add_flag("--restart-aware", flags->restart_aware,
                    "The scheduler weighs each job's restart overhead against moving it to "
                    "another GPU type (the restart_cost scorer; needs a restart overhead)");
  command
      ->add_option("--lag-bound", flags->lag_bound,
                   "Bounded lag: a running job keeps its GPUs until a waiting job is owed more "
                   "than RESTARTS of its restart overheads (0 = off; default 200 for policies "
                   "the mechanism time-slices, with a restart overhead)")
      ->check(Bounded(0.0, 1e6, " restarts"));
}

Result<sim::SimulationOptions> ToSimulationOptions(const SimulateOptions& o,
                                                   std::vector<std::string>* notes) {
  sim::SimulationOptions options;
  GAVEL_ASSIGN_OR_RETURN(options.cluster, ParseCluster(o));
  GAVEL_ASSIGN_OR_RETURN(options.instance_costs, ParseCosts(o));
  {
    const Result<const policy::PolicyInfo*> info = policy::FindPolicy(o.policy);
    if (!info.ok()) return Status::InvalidArgument("--policy: " + info.status().message());
  }
  options.policy = o.policy;
  options.seed = o.seed;
  // --round-seconds and --seed are held to their bounds by the flag validators (simulate) and
  // EnumeratePoints (sweep); the round length again where every run passes (sim::PrepareRun).
  options.round_length = Seconds(o.round_seconds);
  {
    Result<mechanism::Compat> compat = mechanism::Compat::Parse(o.compat);
    if (!compat.ok()) return Status::InvalidArgument("--compat: " + compat.status().message());
    options.compat = *compat;
  }
  if (o.solver != "auto" && o.solver != "clp") {
    return Status::InvalidArgument("--solver must be auto or clp, got " + o.solver);
  }
  options.solve_path = o.solver == "clp" ? policy::SolvePath::kGeneral : policy::SolvePath::kFast;
  options.ideal = o.ideal;
  if (!(o.profiling_percentage >= 0.0 && o.profiling_percentage <= 1.0)) {
    return Status::InvalidArgument("--profiling-percentage must be in [0, 1]");
  }
  options.profiling_percentage = o.profiling_percentage;
  if (o.num_reference_models) {
    if (*o.num_reference_models < 1 || *o.num_reference_models > 26) {
      return Status::InvalidArgument("--num-reference-models must be in [1, 26]");
    }
    options.num_reference_models = *o.num_reference_models;
  }
  options.fairness = o.fairness;
  options.window_start = o.window_start;
  options.window_end = o.window_end;
  if (o.time_limit) options.time_limit = Seconds(*o.time_limit);

  const std::string table_path =
      o.throughputs_file.empty() ? DefaultThroughputsFile() : o.throughputs_file;
  GAVEL_ASSIGN_OR_RETURN(ThroughputTable table,
                         ThroughputTable::LoadFiles(table_path, o.throughputs_extra));
  options.throughputs = std::make_shared<const ThroughputTable>(std::move(table));

  if (!o.trace_file.empty()) {
    if (o.lam || o.jobs_per_hour) {
      return Status::InvalidArgument("--trace and --lam/--jobs-per-hour exclude each other");
    }
    if (o.workload != "gavel") {
      return Status::InvalidArgument("--trace and --workload exclude each other");
    }
    GAVEL_ASSIGN_OR_RETURN(options.trace, ReadWorkloadTrace(o, *options.throughputs, notes));
    if (options.trace.empty()) return Status::InvalidArgument(o.trace_file + ": no jobs");
    if (!(o.load_scale > 0.0) || !std::isfinite(o.load_scale)) {
      return Status::InvalidArgument("--load-scale must be a positive number");
    }
    if (o.load_scale != 1.0) {
      for (workload::TraceJob& job : options.trace) {
        job.arrival_time = Seconds(job.arrival_time.value() / o.load_scale);
      }
    }
  } else {
    if (o.load_scale != 1.0) {
      return Status::InvalidArgument(
          "--load-scale compresses a --trace's arrivals; generated jobs take --jobs-per-hour");
    }
    if (o.lam.has_value() == o.jobs_per_hour.has_value()) {
      return Status::InvalidArgument(
          "give the arrival rate with exactly one of --lam (mean inter-arrival seconds; 0 = "
          "all jobs at time 0) and --jobs-per-hour, or a --trace");
    }
    double lam = 0.0;
    if (o.lam) {
      lam = *o.lam;
      if (!(lam >= 0.0) || !std::isfinite(lam)) {
        return Status::InvalidArgument("--lam must be a non-negative number of seconds");
      }
    } else {
      GAVEL_RETURN_IF_ERROR(CheckJobsPerHour(*o.jobs_per_hour, "--jobs-per-hour"));
      lam = 3600.0 / *o.jobs_per_hour;
    }
    workload::GeneratorOptions g;
    g.seed = o.seed;
    g.mean_interarrival = Seconds(lam);
    g.generate_multi_gpu_jobs = o.multi_gpu;
    g.generate_multi_priority_jobs = o.multi_priority;
    g.assign_slos = o.assign_slos;
    if (!(o.elastic_fraction >= 0.0 && o.elastic_fraction <= 1.0)) {
      return Status::InvalidArgument("--elastic-fraction must be in [0, 1]");
    }
    g.elastic_fraction = o.elastic_fraction;
    g.hpo_fraction = o.hpo_fraction;
    g.hpo_trials = o.hpo_trials;
    if (!o.utility.empty()) {
      Result<UtilityFamily> family = ParseUtilityFamily(o.utility);
      if (!family.ok()) return family.status().WithContext("--utility");
      g.utility = *family;
    }
    if (o.fixed_duration) {
      if (!(*o.fixed_duration >= 0.0)) {
        return Status::InvalidArgument("--fixed-job-duration must be >= 0 seconds");
      }
      g.fixed_duration = Seconds(*o.fixed_duration);
    }
    if (o.steady_state) {
      for (const GpuTypeSpec& spec : options.cluster)
        g.steady_state_cluster[spec.name] = spec.count;
    }
    if (o.workload == "philly") {
      GAVEL_RETURN_IF_ERROR(AddPhillyWorkload(o, g));
    } else if (o.workload != "gavel") {
      return Status::InvalidArgument("--workload must be gavel or philly, got " + o.workload);
    }
    options.generator = g;
    if (!options.window_end) options.window_end = 5000;
  }

  // The original has no physics: under --compat gavel every physics flag is ignored.
  if (!options.compat.all()) {
    GAVEL_ASSIGN_OR_RETURN(options.physics, ToPhysicsOptions(o.physics));
  }
  double span = 0.0;
  double longest = 0.0;  // a trace's longest window job alone on its slowest usable GPU type
  if (options.generator) {
    span = *options.window_end * options.generator->mean_interarrival.value();
  } else {
    const std::size_t end = std::min(options.trace.size(), options.window_end.value_or(options.trace.size()));
    for (std::size_t i = std::min(o.window_start, end); i < end; ++i) {
      const workload::TraceJob& job = options.trace[i];
      span = std::max(span, job.arrival_time.value());
      if (!options.throughputs->HasJobType(job.key())) continue;
      for (const std::string& type : options.throughputs->gpu_types()) {
        const double rate = options.throughputs->Isolated(type, job.key()).value_or(0.0);
        if (rate > 0.0) longest = std::max(longest, job.total_steps / rate);
      }
    }
  }
  GAVEL_ASSIGN_OR_RETURN(options.saturation_limit,
                         SaturationLimit(o.saturation_limit, span, longest));
  return options;
}

Status RunSimulate(const SimulateOptions& o, std::ostream& out) {
  std::vector<std::string> notes;
  GAVEL_ASSIGN_OR_RETURN(sim::SimulationOptions options, ToSimulationOptions(o, &notes));
  // Notes go where they cannot spoil a JSON or CSV written to stdout.
  std::ostream& notes_out = o.json_path == "-" || o.jobs_csv_path == "-" ? std::cerr : out;
  for (const std::string& note : notes) notes_out << note << "\n";
  if (options.compat.estimator && options.num_reference_models != 26) {
    std::cerr << "gavel simulate: note: --compat estimator ignores --num-reference-models, as "
                 "the original's simulate driver does (gavel sweep forwards it)\n";
    options.num_reference_models = 26;
  }
  if (options.compat.all() && o.physics.any()) {
    std::cerr << "gavel simulate: --compat gavel reproduces the original, which has no cluster "
                 "physics; the physics flags are ignored\n";
  }
  const bool progress =
      o.progress == "always" || (o.progress == "auto" && isatty(STDERR_FILENO) == 1);
  if (progress) options.progress = ProgressLine();
  // Jobs' rows are written as the run goes, and their results forgotten, unless rho (which
  // needs a second run) or the fluid model needs the whole list, or the CSV shares stdout
  // with the JSON (which comes first).
  const bool stream_jobs =
      !options.fairness && !options.ideal && !(o.json_path == "-" && o.jobs_csv_path == "-");
  std::ofstream csv_file;
  std::ostream* csv = nullptr;
  if (stream_jobs) {
    options.keep_jobs = false;
    if (!o.jobs_csv_path.empty()) {
      if (o.jobs_csv_path == "-") {
        csv = &out;
      } else {
        csv_file.open(o.jobs_csv_path);
        if (!csv_file) return Status::IoError(o.jobs_csv_path + ": cannot open for writing");
        csv = &csv_file;
      }
      GAVEL_ASSIGN_OR_RETURN(const mechanism::ClusterLayout layout,
                             mechanism::ClusterLayout::Create(options.cluster));
      sim::WriteJobsCsvHeader(layout.type_names(), *csv);
      options.job_sink = [csv, &o](const sim::JobResult& job) {
        sim::WriteJobsCsvRow(job, *csv);
        return csv->good() ? Status::Ok() : Status::IoError(o.jobs_csv_path + ": write failed");
      };
    }
  }
  Result<sim::SimulationResult> run = sim::Simulate(options);
  if (csv_file.is_open() && !run.ok()) {
    csv_file.close();
    std::remove(o.jobs_csv_path.c_str());  // no half a CSV from a failed run
  }
  if (progress) std::cerr << "\r" << std::string(100, ' ') << "\r" << std::flush;
  if (!run.ok()) return run.status();
  const sim::SimulationResult& result = *run;
  if (result.saturated) {
    std::cerr << "gavel simulate: saturated: simulated time passed the saturation limit of "
              << options.saturation_limit->value() << " s with "
              << (result.window_end - result.window_start - result.window_jobs_completed -
                  result.window_jobs_dropped - result.failed_jobs)
              << " window jobs unfinished (arrivals outpace the cluster); the results cover "
                 "the jobs that finished\n";
  }
  if (!o.json_path.empty()) {
    GAVEL_RETURN_IF_ERROR(WriteOutput(o.json_path, sim::ResultToJson(result), out));
  }
  if (csv_file.is_open()) {
    csv_file.close();
    if (!csv_file) return Status::IoError(o.jobs_csv_path + ": write failed");
  } else if (!o.jobs_csv_path.empty() && csv == nullptr) {
    GAVEL_RETURN_IF_ERROR(WriteOutput(o.jobs_csv_path, sim::JobsToCsv(result), out));
  }
  if (o.json_path != "-" && o.jobs_csv_path != "-") PrintSummary(result, out);
  return Status::Ok();
}

void AddSimulationFlags(CLI::App* command, SimulationFlags* flags) {
  command->add_option("--worker-types", flags->worker_types,
                           "GPU type names, comma-separated (default v100,p100,k80)");
  command->add_option("--num-gpus-per-server", flags->gpus_per_server,
                           "GPUs per server per type (default 1:1:1)");
  command
      ->add_option("-s,--window-start", flags->window_start,
                   "First job id of the measurement window (default 0)")
      ->check(BoundedInteger(0, bounds::kMaxJobs));
  command
      ->add_option("-e,--window-end", flags->window_end,
                   "Job id after the measurement window (default 5000; a trace: all its jobs)")
      ->check(BoundedInteger(0, bounds::kMaxJobs));
  command
      ->add_option("-i,--round-seconds", flags->round_seconds,
                   "Round length in seconds (default 360)")
      ->check(Bounded(bounds::kMinRoundSeconds, bounds::kMaxRoundSeconds, " s"));
  command->add_flag("-m,--generate-multi-gpu-jobs", flags->multi_gpu,
                         "Generate multi-GPU jobs (1/2/4/8 GPUs)");
  command->add_flag("--generate-multi-priority-jobs", flags->multi_priority,
                         "Give 20% of generated jobs priority weight 5");
  command->add_flag("--assign-slos", flags->assign_slos,
                         "Give generated jobs SLO deadlines");
  command->add_option("--elastic-fraction", flags->elastic_fraction,
                           "Fraction of generated jobs that are elastic (workers 1 to 2x their "
                           "GPUs, at most 8; default 0)");
  command->add_option("--hpo-fraction", flags->hpo_fraction,
                           "Fraction of generated jobs that are hyper-parameter searches: apps "
                           "of --hpo-trials jobs arriving together, the weaker trials stopping "
                           "early (default 0)")
      ->check(Bounded(0.0, 1.0, ""));
  command->add_option("--hpo-trials", flags->hpo_trials,
                           "Trials per hyper-parameter search (default 4)")
      ->check(BoundedInteger(2, 64));
  command->add_option("--utility", flags->utility,
                           "Give generated jobs a utility of completion time: sigmoid|linear "
                           "(reports total_utility and jobs_rejected)");
  command
      ->add_option("-f,--fixed-job-duration", flags->fixed_duration,
                   "Every generated job runs this long on a V100")
      ->check(Bounded(0.0, bounds::kMaxSeconds, " s"));
  command->add_flag("--simulate-steady-state", flags->steady_state,
                         "Start with as many jobs as the cluster has GPUs");
  command->add_option("--throughputs", flags->throughputs_file,
                           "Throughput table (default: the shipped simulation table)");
  AddThroughputsExtraOption(*command, &flags->throughputs_extra);
  command->add_option("--trace", flags->trace_file,
                           "Trace file instead of generated jobs");
  command
      ->add_option("--trace-format", flags->trace_format,
                   "gavel (default), csv, msr, or a public trace: philly (cluster_job_log), pai "
                   "(pai_job_table.csv), helios (cluster_log.csv)")
      ->check(CLI::IsMember({"gavel", "csv", "msr", "philly", "pai", "helios"}));
  command->add_option("--trace-tasks", flags->trace_tasks,
                           "pai: the task table (default: pai_task_table.csv beside --trace)");
  command->add_flag("--skip-bad-rows", flags->skip_bad_rows,
                         "philly/pai/helios: skip unreadable rows and report how many");
  command
      ->add_option("--workload", flags->workload,
                   "Generated jobs: gavel (default, the original's) or philly (Philly-like "
                   "sizes, durations, diurnal arrivals and outcome labels)")
      ->check(CLI::IsMember({"gavel", "philly"}));
  command->add_option("--diurnal-amplitude", flags->diurnal_amplitude,
                           "--workload philly: daily arrival-rate swing A in [0, 1) (default "
                           "0.5: the rate goes from 0.5x to 1.5x its mean)");
  command->add_flag("--ideal", flags->ideal,
                         "Apply allocations exactly between events (fluid model), no rounds");
  command->add_option("--compat", flags->compat,
                           "`gavel` reproduces the original implementation's quirks; a "
                           "comma-separated list of switches reproduces only those");
  command
      ->add_option("--solver", flags->solver,
                   "auto (default): the policy's fast path where it has one; clp: the whole LP "
                   "on Clp")
      ->check(CLI::IsMember({"auto", "clp"}));
  command->add_flag("--fairness", flags->fairness,
                         "Also run `isolated` and report finish-time fairness rho per job");
  command->add_option(
      "--instance-costs", flags->instance_costs,
      "$ per GPU-hour per type, in --worker-types order (e.g. 0.74:0.43:0.135)");
  AddPhysicsFlags(command, &flags->physics);
}

CLI::App* AddSimulateCommand(CLI::App& app, SimulateOptions* options) {
  CLI::App* simulate_cmd = app.add_subcommand(
      "simulate", "Simulate a workload on a cluster under a policy and the round mechanism");
  simulate_cmd->add_option("-c,--cluster", options->cluster,
                           "GPU counts per type, in --worker-types order (default 36:36:36)");
  AddSimulationFlags(simulate_cmd, options);
  simulate_cmd
      ->add_option("-p,--policy", options->policy, "Policy name (see `gavel policies`)")
      ->required();
  simulate_cmd->add_option("--seed", options->seed, "Random seed (default 0)")
      ->check(SeedFlag());
  simulate_cmd
      ->add_option("-l,--lam", options->lam,
                   "Mean inter-arrival time in seconds; 0 = all jobs at time 0 (static)")
      ->check(Bounded(0.0, bounds::kMaxSeconds, " s"));
  simulate_cmd
      ->add_option("--jobs-per-hour", options->jobs_per_hour, "Arrival rate (jobs per hour)")
      ->check(Bounded(3600.0 / bounds::kMaxSeconds, bounds::kMaxJobsPerHour, " jobs/hour"));
  simulate_cmd
      ->add_option("--load-scale", options->load_scale,
                   "--trace: divide the arrival times by this (2 = the same jobs twice as fast; "
                   "default 1)")
      ->check(Bounded(1e-6, 1e6, ""));
  simulate_cmd->add_option("--profiling-percentage", options->profiling_percentage,
                           "Throughput estimation: fraction of a new job's entries profiled "
                           "against the reference types (packing policies; default 1)");
  simulate_cmd->add_option("--num-reference-models", options->num_reference_models,
                           "Throughput estimation: number of reference job types profiled "
                           "offline (1-26; default 26)");
  simulate_cmd
      ->add_option("--time-limit", options->time_limit,
                   "Fail once simulated time passes this many seconds")
      ->check(Bounded(0.0, bounds::kMaxSeconds, " s"));
  simulate_cmd->add_option("--saturation-limit", options->saturation_limit,
                           "auto (default: 2 x the arrival span + 30 days), none, or seconds of "
                           "simulated time after which the run stops as saturated");
  simulate_cmd
      ->add_option("--progress", options->progress,
                   "auto (default: when stderr is a terminal), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  simulate_cmd->add_option("--json", options->json_path,
                           "Write the JSON result here (- = stdout)");
  simulate_cmd->add_option("--jobs-csv", options->jobs_csv_path,
                           "Write the per-job CSV here (- = stdout)");
  return simulate_cmd;
}

int RunSimulateCommand(const SimulateOptions& options) {
  const Status status = RunSimulate(options, std::cout);
  if (!status.ok()) {
    std::cerr << "gavel simulate: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
