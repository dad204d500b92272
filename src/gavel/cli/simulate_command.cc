#include "gavel/cli/simulate_command.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <ostream>
#include <sstream>
#include <vector>

#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/policy/registry.h"
#include "gavel/sim/simulator.h"
#include "gavel/workload/generator.h"
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
  if (value < 0.0 || value != std::floor(value) || value > 1e9) {
    return Status::InvalidArgument(what + ": \"" + text + "\" is not a non-negative integer");
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
    if (price < 0.0) return Status::InvalidArgument("--instance-costs: prices must be >= 0");
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
  out << "Rounds: " << r.rounds << ", policy solves: " << r.policy_solves << " ("
      << r.policy_solve_seconds << " s), wall time: " << r.wall_seconds << " s\n";
  out.unsetf(std::ios::fixed);
}

}  // namespace

Result<sim::SimulationOptions> ToSimulationOptions(const SimulateOptions& o) {
  sim::SimulationOptions options;
  GAVEL_ASSIGN_OR_RETURN(options.cluster, ParseCluster(o));
  GAVEL_ASSIGN_OR_RETURN(options.instance_costs, ParseCosts(o));
  {
    const Result<const policy::PolicyInfo*> info = policy::FindPolicy(o.policy);
    if (!info.ok()) return Status::InvalidArgument("--policy: " + info.status().message());
  }
  options.policy = o.policy;
  options.seed = o.seed;
  if (!(o.round_seconds > 0.0) || !std::isfinite(o.round_seconds)) {
    return Status::InvalidArgument("--round-seconds must be a positive number");
  }
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
  GAVEL_ASSIGN_OR_RETURN(ThroughputTable table, ThroughputTable::LoadFile(table_path));
  options.throughputs = std::make_shared<const ThroughputTable>(std::move(table));

  if (!o.trace_file.empty()) {
    if (o.lam || o.jobs_per_hour) {
      return Status::InvalidArgument("--trace and --lam/--jobs-per-hour exclude each other");
    }
    GAVEL_ASSIGN_OR_RETURN(const workload::TraceFormat format,
                           workload::ParseTraceFormat(o.trace_format));
    GAVEL_ASSIGN_OR_RETURN(options.trace, workload::ReadTraceFile(o.trace_file, format));
    if (options.trace.empty()) return Status::InvalidArgument(o.trace_file + ": no jobs");
  } else {
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
      if (!(*o.jobs_per_hour > 0.0) || !std::isfinite(*o.jobs_per_hour)) {
        return Status::InvalidArgument("--jobs-per-hour must be a positive number");
      }
      lam = 3600.0 / *o.jobs_per_hour;
    }
    workload::GeneratorOptions g;
    g.seed = o.seed;
    g.mean_interarrival = Seconds(lam);
    g.generate_multi_gpu_jobs = o.multi_gpu;
    g.generate_multi_priority_jobs = o.multi_priority;
    g.assign_slos = o.assign_slos;
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
    options.generator = g;
    if (!options.window_end) options.window_end = 5000;
  }
  return options;
}

Status RunSimulate(const SimulateOptions& o, std::ostream& out) {
  GAVEL_ASSIGN_OR_RETURN(sim::SimulationOptions options, ToSimulationOptions(o));
  if (options.compat.estimator && options.num_reference_models != 26) {
    std::cerr << "gavel simulate: note: --compat estimator ignores --num-reference-models, as "
                 "the original's simulate driver does (gavel sweep forwards it)\n";
    options.num_reference_models = 26;
  }
  GAVEL_ASSIGN_OR_RETURN(const sim::SimulationResult result, sim::Simulate(options));
  if (!o.json_path.empty()) {
    GAVEL_RETURN_IF_ERROR(WriteOutput(o.json_path, sim::ResultToJson(result), out));
  }
  if (!o.jobs_csv_path.empty()) {
    GAVEL_RETURN_IF_ERROR(WriteOutput(o.jobs_csv_path, sim::JobsToCsv(result), out));
  }
  if (o.json_path != "-" && o.jobs_csv_path != "-") PrintSummary(result, out);
  return Status::Ok();
}

CLI::App* AddSimulateCommand(CLI::App& app, SimulateOptions* options) {
  CLI::App* simulate_cmd = app.add_subcommand(
      "simulate", "Simulate a workload on a cluster under a policy and the round mechanism");
  simulate_cmd->add_option("-c,--cluster", options->cluster,
                           "GPU counts per type, in --worker-types order (default 36:36:36)");
  simulate_cmd->add_option("--worker-types", options->worker_types,
                           "GPU type names, comma-separated (default v100,p100,k80)");
  simulate_cmd->add_option("--num-gpus-per-server", options->gpus_per_server,
                           "GPUs per server per type (default 1:1:1)");
  simulate_cmd
      ->add_option("-p,--policy", options->policy, "Policy name (see `gavel policies`)")
      ->required();
  simulate_cmd->add_option("--seed", options->seed, "Random seed (default 0)");
  simulate_cmd->add_option("-l,--lam", options->lam,
                           "Mean inter-arrival time in seconds; 0 = all jobs at time 0 (static)");
  simulate_cmd->add_option("--jobs-per-hour", options->jobs_per_hour,
                           "Arrival rate (jobs per hour)");
  simulate_cmd->add_option("-s,--window-start", options->window_start,
                           "First job id of the measurement window (default 0)");
  simulate_cmd->add_option(
      "-e,--window-end", options->window_end,
      "Job id after the measurement window (default 5000; a trace: all its jobs)");
  simulate_cmd->add_option("-i,--round-seconds", options->round_seconds,
                           "Round length in seconds (default 360)");
  simulate_cmd->add_flag("-m,--generate-multi-gpu-jobs", options->multi_gpu,
                         "Generate multi-GPU jobs (1/2/4/8 GPUs)");
  simulate_cmd->add_flag("--generate-multi-priority-jobs", options->multi_priority,
                         "Give 20% of generated jobs priority weight 5");
  simulate_cmd->add_flag("--assign-slos", options->assign_slos,
                         "Give generated jobs SLO deadlines");
  simulate_cmd->add_option("-f,--fixed-job-duration", options->fixed_duration,
                           "Every generated job runs this long on a V100");
  simulate_cmd->add_flag("--simulate-steady-state", options->steady_state,
                         "Start with as many jobs as the cluster has GPUs");
  simulate_cmd->add_option("--throughputs", options->throughputs_file,
                           "Throughput table (default: the shipped simulation table)");
  simulate_cmd->add_option("--trace", options->trace_file,
                           "Trace file instead of generated jobs");
  simulate_cmd
      ->add_option("--trace-format", options->trace_format, "gavel (default), csv or msr")
      ->check(CLI::IsMember({"gavel", "csv", "msr"}));
  simulate_cmd->add_flag("--ideal", options->ideal,
                         "Apply allocations exactly between events (fluid model), no rounds");
  simulate_cmd->add_option("--compat", options->compat,
                           "`gavel` reproduces the original implementation's quirks; a "
                           "comma-separated list of switches reproduces only those");
  simulate_cmd
      ->add_option("--solver", options->solver,
                   "auto (default): the policy's fast path where it has one; clp: the whole LP "
                   "on Clp")
      ->check(CLI::IsMember({"auto", "clp"}));
  simulate_cmd->add_option("--profiling-percentage", options->profiling_percentage,
                           "Throughput estimation: fraction of a new job's entries profiled "
                           "against the reference types (packing policies; default 1)");
  simulate_cmd->add_option("--num-reference-models", options->num_reference_models,
                           "Throughput estimation: number of reference job types profiled "
                           "offline (1-26; default 26)");
  simulate_cmd->add_flag("--fairness", options->fairness,
                         "Also run `isolated` and report finish-time fairness rho per job");
  simulate_cmd->add_option(
      "--instance-costs", options->instance_costs,
      "$ per GPU-hour per type, in --worker-types order (e.g. 0.74:0.43:0.135)");
  simulate_cmd->add_option("--time-limit", options->time_limit,
                           "Fail once simulated time passes this many seconds");
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
