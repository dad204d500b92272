// The `gavel` command as users start it, in builds with the runtime. The commands that talk to
// a running daemon (submit, jobs, cancel, workers, status, logs) run in this process, which
// links only what they need: gRPC, protobuf and the wire types. Every other command (serve,
// worker, simulate, sweep, replay, allocate, policies, profile) and the top-level --help
// replace this process with `gavel-engine`, the whole command line (main.cc), found beside
// this binary and given the same arguments (execv keeps the process id, so a supervisor or a
// `kill` that knows `gavel serve`'s pid still reaches it).
//
// Why two binaries: the whole command line loads 77 shared libraries at start (Coin-OR,
// LAPACK, Slurm, SQLite beside gRPC), and the dynamic loader was most of its start-up
// (bench/README.md, "Runtime at scale"). The client commands are the ones users and scripts
// run often, so they start lean.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

#include "gavel/cli/client_commands.h"
#include "gavel/cli/logs_command.h"

namespace {

// Replaces this process with gavel-engine (beside this binary) on the same arguments; returns
// only on failure, with the exit status of a command that was not found.
int ExecEngine(char** argv) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    std::cerr << "gavel: cannot find its own binary (/proc/self/exe): " << error.message() << "\n";
    return 127;
  }
  const std::string engine = (self.parent_path() / "gavel-engine").string();
  ::execv(engine.c_str(), argv);
  std::cerr << "gavel: cannot run " << engine << " (it holds every command but the client's): "
            << std::strerror(errno) << "\n";
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Gavel: heterogeneity-aware scheduling policies for deep-learning clusters"};
  app.require_subcommand(1);
  gavel::cli::ClientCommandOptions client;
  gavel::cli::AddClientCommands(app, &client);
  gavel::cli::LogsOptions logs;
  gavel::cli::AddLogsCommand(app, &logs);

  // The first argument names the command; anything that is not one of the client's (another
  // command, --help, nothing) is the engine's to parse and answer.
  bool client_command = false;
  if (argc >= 2) {
    for (const CLI::App* command : app.get_subcommands({})) {
      if (command->check_name(argv[1])) client_command = true;
    }
  }
  if (!client_command) return ExecEngine(argv);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (const auto code = gavel::cli::RunClientCommands(client)) return *code;
  if (const auto code = gavel::cli::RunLogsCommand(logs)) return *code;
  return 1;
}
