#include "gavel/cli/profile_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gavel/cli/flag_bounds.h"
#include "gavel/core/shipped_data.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/estimator/profiled_gpu_type.h"

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;

// Runs argv to completion with this process's stdout and stderr; its exit status, or -1 when
// it could not start or was killed. `quiet` sends its output to /dev/null.
int RunChild(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (quiet) {
      std::FILE* null = std::freopen("/dev/null", "w", stdout);
      if (null != nullptr) ::dup2(::fileno(stdout), STDERR_FILENO);
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The interpreter: the user's, else the first python3 that imports torch.
Result<std::string> FindPython(const std::string& given) {
  if (!given.empty()) return given;
  for (const std::string candidate : {"python3", "/usr/bin/python3"}) {
    if (RunChild({candidate, "-c", "import torch"}, /*quiet=*/true) == 0) return candidate;
  }
  return Status::FailedPrecondition(
      "no python3 here can import torch (Debian: apt-get install python3-torch "
      "python3-torchvision; or give --python)");
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot open " + path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": not valid JSON: " + e.what());
  }
}

Result<estimator::ProfileMeasurements> ParseMeasurements(const nlohmann::json& m,
                                                         const std::string& path) {
  estimator::ProfileMeasurements out;
  try {
    for (const auto& [job_type, rate] : m.at("isolated").items()) {
      out.isolated[job_type] = rate.get<double>();
    }
    for (const auto& p : m.at("pairs")) {
      out.pairs.push_back({p.at("a").get<std::string>(), p.at("b").get<std::string>(),
                           {p.at("rates").at(0).get<double>(), p.at("rates").at(1).get<double>()}});
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": not the profiler's measurements: " + e.what());
  }
  return out;
}

Status RunProfile(const ProfileOptions& o) {
  if (o.out.empty()) return Status::InvalidArgument("--out: required");
  // Phase 1: the table and the job types to measure.
  const std::string table_path =
      o.throughputs_file.empty() ? DefaultThroughputsFile() : o.throughputs_file;
  GAVEL_ASSIGN_OR_RETURN(ThroughputTable loaded, ThroughputTable::LoadFile(table_path));
  const auto table = std::make_shared<const ThroughputTable>(std::move(loaded));
  std::vector<std::string> single_gpu;
  for (const JobTypeKey& key : table->job_types()) {
    if (key.scale_factor == 1) single_gpu.push_back(key.model);
  }
  GAVEL_ASSIGN_OR_RETURN(const std::vector<std::string> job_types,
                         SelectJobTypes(single_gpu, o.models));
  if (!o.gpu_type.empty() && table->HasGpuType(o.gpu_type)) {
    return Status::InvalidArgument("--gpu-type: \"" + o.gpu_type +
                                   "\" is already a GPU type of " + table_path +
                                   "; give the measured type its own name");
  }

  // Phase 2: measure, in a child process (imports torch, owns the device).
  GAVEL_ASSIGN_OR_RETURN(const std::string python, FindPython(o.python));
  const fs::path measurements =
      fs::temp_directory_path() / ("gavel_profile_" + std::to_string(::getpid()) + ".json");
  std::vector<std::string> argv = {python,  ShippedProgramFile("gavel_profile.py"),
                                   "--device", o.device,
                                   "--steps", std::to_string(o.steps),
                                   "--warmup", std::to_string(o.warmup),
                                   "--out", measurements.string()};
  if (o.max_batch) argv.insert(argv.end(), {"--max-batch", std::to_string(*o.max_batch)});
  if (o.pairs) argv.push_back("--pairs");
  for (const std::string& j : job_types) argv.insert(argv.end(), {"--job-type", j});
  const int code = RunChild(argv, /*quiet=*/false);
  if (code != 0) {
    return Status::Internal(argv[1] + " failed (exit " + std::to_string(code) +
                            "); its messages are above");
  }
  Result<nlohmann::json> raw = ReadJsonFile(measurements.string());
  std::error_code ignored;
  fs::remove(measurements, ignored);
  GAVEL_RETURN_IF_ERROR(raw.status());
  GAVEL_ASSIGN_OR_RETURN(const estimator::ProfileMeasurements measured,
                         ParseMeasurements(*raw, measurements.string()));
  const std::string gpu_type =
      o.gpu_type.empty() ? DefaultGpuTypeName(raw->value("device", std::string("cpu")),
                                              raw->value("device_name", std::string()))
                         : o.gpu_type;

  // Phase 3: complete the type's rows from the table and write them.
  GAVEL_ASSIGN_OR_RETURN(
      const estimator::ProfiledGpuType rows,
      estimator::CompleteProfiledGpuType(table, measured, {.gpu_type = gpu_type, .seed = o.seed}));
  {
    std::ofstream out(o.out);
    out << rows.table_json << "\n";
    if (!out) return Status::IoError("cannot write " + o.out);
  }
  std::cout << "gavel profile: wrote " << o.out << ": GPU type \"" << gpu_type << "\" ("
            << raw->value("device_name", std::string()) << ", " << raw->value("device", "")
            << "), " << measured.isolated.size() << " job types measured alone, "
            << rows.derived_isolated.size() << " derived; " << rows.pairs_measured
            << " pairs measured, " << rows.pairs_completed << " estimated; nearest table type "
            << rows.nearest_type << " (measured rates x" << rows.speed_level << " of its)\n"
            << "use it with: --throughputs-extra " << o.out << "\n";
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> SelectJobTypes(const std::vector<std::string>& all_single_gpu,
                                                const std::vector<std::string>& models) {
  if (models.empty()) return all_single_gpu;
  std::vector<std::string> chosen;
  for (const std::string& name : models) {
    bool matched = false;
    for (const std::string& job_type : all_single_gpu) {
      if (job_type == name || job_type.starts_with(name + " (batch size ")) {
        matched = true;
        if (std::find(chosen.begin(), chosen.end(), job_type) == chosen.end()) {
          chosen.push_back(job_type);
        }
      }
    }
    if (!matched) {
      std::set<std::string> families;
      for (const std::string& j : all_single_gpu) families.insert(j.substr(0, j.find(" (batch size ")));
      std::string list;
      for (const std::string& f : families) list += (list.empty() ? "" : ", ") + f;
      return Status::InvalidArgument("--models: \"" + name +
                                     "\" is no single-GPU job type of the table (families: " +
                                     list + "; or a full job type such as \"ResNet-18 (batch "
                                     "size 64)\")");
    }
  }
  return chosen;
}

std::string DefaultGpuTypeName(const std::string& device, const std::string& device_name) {
  if (!device.starts_with("cuda")) return "cpu";
  std::string word = device_name.substr(device_name.find_last_of(' ') + 1);
  std::string name;
  for (const char c : word) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return name.empty() ? "gpu" : name;
}

CLI::App* AddProfileCommand(CLI::App& app, ProfileOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "profile", "Measure the table's job types on this machine (PyTorch) and write table rows");
  cmd->add_option("--device", o->device, "cuda, cuda:N, cpu or auto (default: CUDA if present)");
  cmd->add_option("--gpu-type", o->gpu_type,
                  "Name of the measured type in the rows (default: from the device's name)");
  cmd->add_option("--steps", o->steps, "Timed steps per measurement (default 20)")
      ->check(BoundedInteger(1, 100000));
  cmd->add_option("--warmup", o->warmup, "Untimed steps first (default 3)")
      ->check(BoundedInteger(0, 10000));
  cmd->add_flag("--pairs", o->pairs,
                "Also measure every pair of the profiled job types sharing the device");
  cmd->add_option("--models", o->models,
                  "Job types or model families to measure (default: every single-GPU one)");
  cmd->add_option("--max-batch", o->max_batch,
                  "Cap the batch size; rates are scaled to the table's batch (quick CPU runs)")
      ->check(BoundedInteger(1, 1 << 20));
  cmd->add_option("--out", o->out, "Where to write the rows (JSON, the table's format)")
      ->required();
  cmd->add_option("--throughputs", o->throughputs_file,
                  "Table to complete from (default: the shipped simulation table)");
  cmd->add_option("--python", o->python, "Python interpreter with torch (default: python3)");
  cmd->add_option("--seed", o->seed, "Seed of the completion of unmeasured pairs (default 0)")
      ->check(SeedFlag());
  return cmd;
}

int RunProfileCommand(const ProfileOptions& options) {
  const Status status = RunProfile(options);
  if (!status.ok()) {
    std::cerr << "gavel profile: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
