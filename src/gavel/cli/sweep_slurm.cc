#include "gavel/cli/sweep_slurm.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gavel/core/parse_number.h"
#include "gavel/slurm/pilots.h"
#include "gavel/slurm/slurm_api.h"

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;

// This process's command line less the options that made it the submitter; the task marker
// added. /proc/self/cmdline rather than a copy of main's argv: the sweep's options are many
// and each task must see them exactly as typed.
Result<std::vector<std::string>> TaskArguments(const std::string& list) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  if (args.empty()) return Status::IoError("cannot read /proc/self/cmdline");
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::IoError("cannot find this executable: " + ec.message());
  std::vector<std::string> out = {self.string()};
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--slurm") continue;
    if (args[i] == "--slurm-partition") {
      ++i;
      continue;
    }
    if (args[i].rfind("--slurm-partition=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  out.push_back("--slurm-task-list");
  out.push_back(list);
  return out;
}

}  // namespace

std::string SweepRowFile(const std::string& dir, std::size_t point_index) {
  return dir + "/rows/" + std::to_string(point_index) + ".csv";
}

Result<SweepArrayResult> RunSweepArray(const SweepArray& array, std::ostream& progress) {
  if (array.point_indices.empty()) return Status::InvalidArgument("no point to run");
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<slurm::SlurmApi> api, slurm::MakeLibSlurmApi());
  std::error_code ec;
  fs::create_directories(array.dir + "/rows", ec);
  if (ec) return Status::IoError(array.dir + ": " + ec.message());

  // Phase 1: the task list (one point index a line) and the script.
  const auto stamp = std::chrono::system_clock::now().time_since_epoch().count();
  const std::string list = array.dir + "/array-" + std::to_string(stamp) + ".txt";
  {
    std::ofstream out(list);
    for (std::size_t index : array.point_indices) out << index << "\n";
    if (!out) return Status::IoError(list + ": cannot write");
  }
  GAVEL_ASSIGN_OR_RETURN(const std::vector<std::string> args, TaskArguments(list));
  std::string command = "exec";
  for (const std::string& arg : args) command += " " + slurm::ShellQuote(arg);

  slurm::BatchJob job;
  job.name = "gavel-sweep";
  job.script = "#!/bin/sh\n# A point of `gavel sweep --slurm` (docs/slurm.md).\n" + command + "\n";
  job.partition = array.partition;
  job.work_dir = fs::current_path().string();  // relative paths in the arguments, as sbatch
  job.output = array.dir + "/task-%A_%a.out";
  job.requeue = true;  // a node lost mid-point reruns the point
  job.array = "0-" + std::to_string(array.point_indices.size() - 1);

  // Phase 2: submit, then wait until no task of the array is pending or running.
  GAVEL_ASSIGN_OR_RETURN(const std::uint32_t id, api->Submit(job));
  progress << "slurm: job array " << id << ", " << array.point_indices.size()
           << " task(s), logs " << array.dir << "/task-" << id << "_*.out" << std::endl;
  std::size_t last_active = array.point_indices.size() + 1;
  int unreachable = 0;
  while (true) {
    Result<std::vector<slurm::SlurmJob>> jobs = api->Jobs();
    if (!jobs.ok()) {
      // slurmctld restarting: keep waiting a while, the array survives it.
      if (++unreachable > 120) return jobs.status();
    } else {
      unreachable = 0;
      std::size_t active = 0;
      for (const slurm::SlurmJob& task : *jobs) {
        if ((task.array_job_id == id || task.id == id) && task.active) ++active;
      }
      if (active != last_active) {
        progress << "slurm: job array " << id << ": " << active << " task record(s) active"
                 << std::endl;
        last_active = active;
      }
      if (active == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return SweepArrayResult{id, array.dir + "/task-" + std::to_string(id) + "_%a.out"};
}

Result<std::size_t> PointOfThisTask(const std::string& list) {
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  const std::optional<std::size_t> line =
      task == nullptr ? std::nullopt : ParseInteger<std::size_t>(task);
  if (!line) {
    return Status::FailedPrecondition(
        "--slurm-task-list: not inside a Slurm array task (no SLURM_ARRAY_TASK_ID)");
  }
  std::ifstream in(list);
  if (!in) return Status::IoError("--slurm-task-list '" + list + "': cannot read");
  std::string text;
  for (std::size_t i = 0; i <= *line; ++i) {
    if (!std::getline(in, text)) {
      return Status::InvalidArgument("--slurm-task-list '" + list + "': no line " +
                                     std::to_string(*line + 1));
    }
  }
  const std::optional<std::size_t> index = ParseInteger<std::size_t>(text);
  if (!index) {
    return Status::InvalidArgument("--slurm-task-list '" + list + "' line " +
                                   std::to_string(*line + 1) + ": \"" + text +
                                   "\" is not a point index");
  }
  return *index;
}

}  // namespace gavel::cli
