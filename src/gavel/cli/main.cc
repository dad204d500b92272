// The `gavel` command: thin subcommands over the libraries. A build without the runtime
// (GAVEL_RUNTIME=OFF, the `sim` preset of `make run`) has only allocate, policies, simulate,
// sweep and profile.
#include <CLI/CLI.hpp>
#include <iostream>

#include "gavel/cli/allocate_command.h"
#include "gavel/cli/profile_command.h"
#include "gavel/cli/simulate_command.h"
#include "gavel/cli/sweep_command.h"
#include "gavel/cli/throughputs_option.h"
#if GAVEL_WITH_RUNTIME
#include "gavel/cli/client_commands.h"
#include "gavel/cli/logs_command.h"
#include "gavel/cli/replay_command.h"
#include "gavel/cli/serve_command.h"
#include "gavel/cli/worker_command.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"Gavel: heterogeneity-aware scheduling policies for deep-learning clusters"};
  app.require_subcommand(1);

  gavel::cli::AllocateOptions allocate;
  std::string compat;
  CLI::App* allocate_cmd =
      app.add_subcommand("allocate", "Compute one policy's allocation for a cluster snapshot");
  allocate_cmd->add_option("-p,--policy", allocate.policy, "Policy name (see `gavel policies`)")
      ->required();
  allocate_cmd->add_option("--snapshot", allocate.snapshot_path, "Snapshot JSON file")->required();
  allocate_cmd
      ->add_option("--compat", compat, "`gavel` reproduces the original implementation's quirks")
      ->check(CLI::IsMember({"gavel"}));
  allocate_cmd->add_option("--format", allocate.format, "json (default) or table")
      ->check(CLI::IsMember({"json", "table"}));
  allocate_cmd
      ->add_option("--solver", allocate.solver,
                   "auto (default): the policy's fast path where it has one; clp: the whole LP "
                   "on Clp")
      ->check(CLI::IsMember({"auto", "clp"}));
  gavel::cli::AddThroughputsExtraOption(*allocate_cmd, &allocate.throughputs_extra);

  app.add_subcommand("policies", "List the policy names with a one-line description");

#if GAVEL_WITH_RUNTIME
  gavel::cli::WorkerOptions worker;
  CLI::App* worker_cmd = gavel::cli::AddWorkerCommand(app, &worker);

  gavel::cli::ServeOptions serve;
  CLI::App* serve_cmd = gavel::cli::AddServeCommand(app, &serve);
  gavel::cli::ClientCommandOptions client;
  gavel::cli::AddClientCommands(app, &client);
  gavel::cli::LogsOptions logs;
  gavel::cli::AddLogsCommand(app, &logs);
#endif

  gavel::cli::SimulateOptions simulate;
  CLI::App* simulate_cmd = gavel::cli::AddSimulateCommand(app, &simulate);
#if GAVEL_WITH_RUNTIME
  gavel::cli::ReplayOptions replay;
  CLI::App* replay_cmd = gavel::cli::AddReplayCommand(app, &replay);
#endif
  gavel::cli::SweepCommandLine sweep;
  CLI::App* sweep_cmd = gavel::cli::AddSweepCommand(app, &sweep);
  gavel::cli::ProfileOptions profile;
  CLI::App* profile_cmd = gavel::cli::AddProfileCommand(app, &profile);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

#if GAVEL_WITH_RUNTIME
  if (worker_cmd->parsed()) return gavel::cli::RunWorkerCommand(worker);
  if (serve_cmd->parsed()) return gavel::cli::RunServeCommand(serve);
  if (const auto code = gavel::cli::RunClientCommands(client)) return *code;
  if (const auto code = gavel::cli::RunLogsCommand(logs)) return *code;
#endif
  if (app.got_subcommand("policies")) {
    gavel::cli::PrintPolicies(std::cout);
    return 0;
  }
  if (simulate_cmd->parsed()) return gavel::cli::RunSimulateCommand(simulate);
#if GAVEL_WITH_RUNTIME
  if (replay_cmd->parsed()) return gavel::cli::RunReplayCommand(replay);
#endif
  if (sweep_cmd->parsed()) return gavel::cli::RunSweepCommand(sweep);
  if (profile_cmd->parsed()) return gavel::cli::RunProfileCommand(profile);
  allocate.compat_gavel = compat == "gavel";
  const gavel::Status status = gavel::cli::RunAllocate(allocate, std::cout);
  if (!status.ok()) {
    std::cerr << "gavel allocate: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
