// `gavel profile`: measures the throughput table's job types on this machine's device with real
// PyTorch models (python/gavel_profile.py, run as a child process) and writes throughput-table
// rows for a GPU type the user names, completed from the table where not measured
// (estimator/profiled_gpu_type.h). docs/profiling.md describes the command and its choices.
// Single-threaded; owns nothing beyond one run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gavel/core/status.h"

namespace gavel::cli {

struct ProfileOptions {
  std::string device = "auto";  // cuda, cuda:N, cpu or auto (CUDA when torch sees one)
  std::string gpu_type;         // the rows' type name; default from the device's name
  int steps = 20;               // timed steps per measurement
  int warmup = 3;               // untimed steps before timing
  bool pairs = false;           // also every pair of the profiled job types, co-located
  std::vector<std::string> models;  // job types or model families; default every single-GPU one
  std::optional<int> max_batch;     // cap on the batch size (quick runs on a CPU)
  std::string out;                  // where the rows go
  std::string throughputs_file;     // the table to complete from; default the shipped one
  std::string python;               // interpreter; default the first python3 that imports torch
  std::uint64_t seed = 0;           // the completion's starting factors
};

CLI::App* AddProfileCommand(CLI::App& app, ProfileOptions* options);
int RunProfileCommand(const ProfileOptions& options);

// The single-GPU job types of the table that `models` names: an exact job type
// ("ResNet-18 (batch size 64)") or a family ("ResNet-18": all its batch sizes). Every job type
// when `models` is empty. Error: a name that matches no job type, listing the families.
Result<std::vector<std::string>> SelectJobTypes(const std::vector<std::string>& all_single_gpu,
                                                const std::vector<std::string>& models);

// The GPU type name a device is given when the user names none: "cpu" for a CPU, else the last
// word of the device's name in lower case ("NVIDIA H200" -> "h200").
std::string DefaultGpuTypeName(const std::string& device, const std::string& device_name);

}  // namespace gavel::cli
