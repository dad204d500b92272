// The `gavel` command: thin subcommands over the libraries.
#include <unistd.h>

#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

#include "gavel/cli/allocate_command.h"
#include "gavel/cli/client_commands.h"
#include "gavel/cli/serve_command.h"
#include "gavel/cli/simulate_command.h"
#include "gavel/cli/sweep_command.h"
#include "gavel/cli/worker_command.h"

int main(int argc, char** argv) {
  CLI::App app{"Gavel: heterogeneity-aware scheduling policies for deep-learning clusters"};
  app.require_subcommand(1);

  gavel::cli::AllocateOptions allocate;
  std::string compat;
  CLI::App* allocate_cmd =
      app.add_subcommand("allocate", "Compute one policy's allocation for a cluster snapshot");
  allocate_cmd->add_option("-p,--policy", allocate.policy, "Policy name (see `gavel policies`)")
      ->required();
  allocate_cmd->add_option("--snapshot", allocate.snapshot_path, "Snapshot JSON file")
      ->required();
  allocate_cmd->add_option("--compat", compat,
                           "`gavel` reproduces the original implementation's quirks")
      ->check(CLI::IsMember({"gavel"}));
  allocate_cmd->add_option("--format", allocate.format, "json (default) or table")
      ->check(CLI::IsMember({"json", "table"}));

  app.add_subcommand("policies", "List the policy names with a one-line description");

  gavel::cli::WorkerOptions worker;
  CLI::App* worker_cmd = gavel::cli::AddWorkerCommand(app, &worker);

  gavel::cli::ServeOptions serve;
  CLI::App* serve_cmd = gavel::cli::AddServeCommand(app, &serve);
  gavel::cli::ClientCommandOptions client;
  gavel::cli::AddClientCommands(app, &client);

  gavel::cli::SimulateOptions simulate;
  double lam = 0.0;
  double jobs_per_hour = 0.0;
  std::size_t window_end = 0;
  double fixed_duration = 0.0;
  double time_limit = 0.0;
  CLI::App* simulate_cmd = app.add_subcommand(
      "simulate", "Simulate a workload on a cluster under a policy and the round mechanism");
  simulate_cmd->add_option("-c,--cluster", simulate.cluster,
                           "GPU counts per type, in --worker-types order (default 36:36:36)");
  simulate_cmd->add_option("--worker-types", simulate.worker_types,
                           "GPU type names, comma-separated (default v100,p100,k80)");
  simulate_cmd->add_option("--num-gpus-per-server", simulate.gpus_per_server,
                           "GPUs per server per type (default 1:1:1)");
  simulate_cmd->add_option("-p,--policy", simulate.policy, "Policy name (see `gavel policies`)")
      ->required();
  simulate_cmd->add_option("--seed", simulate.seed, "Random seed (default 0)");
  CLI::Option* lam_opt = simulate_cmd->add_option(
      "-l,--lam", lam, "Mean inter-arrival time in seconds; 0 = all jobs at time 0 (static)");
  CLI::Option* jph_opt =
      simulate_cmd->add_option("--jobs-per-hour", jobs_per_hour, "Arrival rate (jobs per hour)");
  simulate_cmd->add_option("-s,--window-start", simulate.window_start,
                           "First job id of the measurement window (default 0)");
  CLI::Option* window_end_opt = simulate_cmd->add_option(
      "-e,--window-end", window_end,
      "Job id after the measurement window (default 5000; a trace: all its jobs)");
  simulate_cmd->add_option("-i,--round-seconds", simulate.round_seconds,
                           "Round length in seconds (default 360)");
  simulate_cmd->add_flag("-m,--generate-multi-gpu-jobs", simulate.multi_gpu,
                         "Generate multi-GPU jobs (1/2/4/8 GPUs)");
  simulate_cmd->add_flag("--generate-multi-priority-jobs", simulate.multi_priority,
                         "Give 20% of generated jobs priority weight 5");
  simulate_cmd->add_flag("--assign-slos", simulate.assign_slos,
                         "Give generated jobs SLO deadlines");
  CLI::Option* fixed_opt = simulate_cmd->add_option(
      "-f,--fixed-job-duration", fixed_duration, "Every generated job runs this long on a V100");
  simulate_cmd->add_flag("--simulate-steady-state", simulate.steady_state,
                         "Start with as many jobs as the cluster has GPUs");
  simulate_cmd->add_option("--throughputs", simulate.throughputs_file,
                           "Throughput table (default: the shipped simulation table)");
  simulate_cmd->add_option("--trace", simulate.trace_file, "Trace file instead of generated jobs");
  simulate_cmd->add_option("--trace-format", simulate.trace_format, "gavel (default), csv or msr")
      ->check(CLI::IsMember({"gavel", "csv", "msr"}));
  simulate_cmd->add_flag("--ideal", simulate.ideal,
                         "Apply allocations exactly between events (fluid model), no rounds");
  simulate_cmd->add_option("--compat", simulate.compat,
                           "`gavel` reproduces the original implementation's quirks; a "
                           "comma-separated list of switches reproduces only those");
  simulate_cmd->add_flag("--fairness", simulate.fairness,
                         "Also run `isolated` and report finish-time fairness rho per job");
  simulate_cmd->add_option(
      "--instance-costs", simulate.instance_costs,
      "$ per GPU-hour per type, in --worker-types order (e.g. 0.74:0.43:0.135)");
  CLI::Option* limit_opt = simulate_cmd->add_option(
      "--time-limit", time_limit, "Fail once simulated time passes this many seconds");
  simulate_cmd->add_option("--json", simulate.json_path, "Write the JSON result here (- = stdout)");
  simulate_cmd->add_option("--jobs-csv", simulate.jobs_csv_path,
                           "Write the per-job CSV here (- = stdout)");

  gavel::cli::SweepOptions sweep;
  std::vector<double> sweep_rates;
  double sweep_a = 0.0;
  double sweep_b = 0.0;
  int sweep_n = 0;
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", "Simulate clusters x policies x seeds x input rates in parallel; CSV + HTML");
  sweep_cmd->add_option("-c,--cluster", sweep.clusters,
                        "GPU counts per type (v100:p100:k80); repeatable (default 36:36:36)");
  sweep_cmd->add_option("-p,--policies", sweep.policies, "Policy names, comma-separated")
      ->required();
  sweep_cmd->add_option("--seeds", sweep.seeds, "Seeds, comma-separated (default 0)");
  CLI::Option* rates_opt =
      sweep_cmd->add_option("--rates", sweep_rates, "Input rates in jobs/hour (0 = static)")
          ->delimiter(',');
  CLI::Option* a_opt =
      sweep_cmd->add_option("-a,--throughput-lower-bound", sweep_a, "Lowest rate (jobs/hour)");
  CLI::Option* b_opt =
      sweep_cmd->add_option("-b,--throughput-upper-bound", sweep_b, "Highest rate (jobs/hour)");
  CLI::Option* n_opt =
      sweep_cmd->add_option("-n,--num-data-points", sweep_n, "Rates in linspace(a, b, n)");
  sweep_cmd->add_option("-s,--window-start", sweep.window_start,
                        "First job id of the measurement window (default 0)");
  sweep_cmd->add_option("-e,--window-end", sweep.window_end,
                        "Job id after the measurement window (default 5000)");
  sweep_cmd->add_flag("-m,--generate-multi-gpu-jobs", sweep.multi_gpu,
                      "Generate multi-GPU jobs (1/2/4/8 GPUs)");
  sweep_cmd->add_option("--compat", sweep.compat,
                        "`gavel` reproduces the original implementation's quirks");
  sweep_cmd->add_option("--saturation-factor", sweep.saturation_factor,
                        "Cut a run at factor x arrival span + 30 days of simulated time "
                        "(default 2)");
  sweep_cmd->add_option("-j,--jobs", sweep.threads, "Threads (default: all cores)");
  sweep_cmd->add_option("--out", sweep.out_dir, "Directory for sweep.csv and report.html")
      ->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (worker_cmd->parsed()) return gavel::cli::RunWorkerCommand(worker);
  if (serve_cmd->parsed()) return gavel::cli::RunServeCommand(serve);
  if (const auto code = gavel::cli::RunClientCommands(client)) return *code;
  if (app.got_subcommand("policies")) {
    gavel::cli::PrintPolicies(std::cout);
    return 0;
  }
  if (app.got_subcommand("simulate")) {
    if (lam_opt->count() > 0) simulate.lam = lam;
    if (jph_opt->count() > 0) simulate.jobs_per_hour = jobs_per_hour;
    if (window_end_opt->count() > 0) simulate.window_end = window_end;
    if (fixed_opt->count() > 0) simulate.fixed_duration = fixed_duration;
    if (limit_opt->count() > 0) simulate.time_limit = time_limit;
    const gavel::Status status = gavel::cli::RunSimulate(simulate, std::cout);
    if (!status.ok()) {
      std::cerr << "gavel simulate: " << status.message() << "\n";
      return 1;
    }
    return 0;
  }
  if (sweep_cmd->parsed()) {
    if ((a_opt->count() > 0 || b_opt->count() > 0 || n_opt->count() > 0) &&
        !(a_opt->count() > 0 && b_opt->count() > 0 && n_opt->count() > 0)) {
      std::cerr << "gavel sweep: -a, -b and -n go together\n";
      return 1;
    }
    if (n_opt->count() > 0) sweep.rates = gavel::cli::RateLinspace(sweep_a, sweep_b, sweep_n);
    if (rates_opt->count() > 0) {
      sweep.rates.insert(sweep.rates.end(), sweep_rates.begin(), sweep_rates.end());
    }
    // A bar redrawn in place only makes sense on a terminal; logs get one line per point.
    sweep.progress_bar = isatty(STDERR_FILENO) != 0;
    const gavel::Status status = gavel::cli::RunSweep(sweep, std::cout, std::cerr);
    if (!status.ok()) {
      std::cerr << "gavel sweep: " << status.message() << "\n";
      return 1;
    }
    return 0;
  }
  allocate.compat_gavel = compat == "gavel";
  const gavel::Status status = gavel::cli::RunAllocate(allocate, std::cout);
  if (!status.ok()) {
    std::cerr << "gavel allocate: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
