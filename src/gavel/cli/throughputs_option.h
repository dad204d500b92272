// The `--throughputs-extra FILE` option that `simulate`, `allocate` and `serve` share: more GPU
// types beside the throughput table (typically `gavel profile`'s output), combined by
// ThroughputTable::LoadFiles. Header-only; one call per command.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace gavel::cli {

inline CLI::Option* AddThroughputsExtraOption(CLI::App& command, std::vector<std::string>* files) {
  return command
      .add_option("--throughputs-extra", *files,
                  "More GPU types in the table's format, beside the table (e.g. `gavel profile` "
                  "output); repeatable")
      ->expected(1)
      ->take_all();
}

}  // namespace gavel::cli
