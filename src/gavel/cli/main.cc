// The `gavel` command: thin subcommands over the libraries.
#include <iostream>

#include <CLI/CLI.hpp>

#include "gavel/cli/allocate_command.h"

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (app.got_subcommand("policies")) {
    gavel::cli::PrintPolicies(std::cout);
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
