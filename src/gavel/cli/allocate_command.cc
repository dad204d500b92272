#include "gavel/cli/allocate_command.h"

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gavel/cli/display_text.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"
#include "gavel/policy/common.h"
#include "gavel/policy/registry.h"

namespace gavel::cli {
namespace {

using nlohmann::ordered_json;
using policy::PolicyInput;
using policy::PolicyOutput;

// Entries below this are printed as 0: solver round-off (the barrier solves of --compat gavel
// leave noise around 1e-8).
constexpr double kPrintEpsilon = 1e-7;

double Clean(double v) { return v < kPrintEpsilon ? 0.0 : v; }

ordered_json ToJson(const std::string& policy_name, const std::string& solver,
                    const PolicyInput& input, const PolicyOutput& output, double solve_seconds,
                    bool packing) {
  ordered_json result;
  result["policy"] = policy_name;
  result["solver"] = solver;
  result["status"] = policy::AllocationStatusName(output.status);
  result["solve_seconds"] = solve_seconds;
  result["objective"] = output.objective ? ordered_json(*output.objective) : ordered_json(nullptr);
  ordered_json allocation = ordered_json::object();
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    ordered_json row = ordered_json::object();
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      row[input.gpu_types[j]] = Clean(output.allocation(i, j));
    }
    allocation[input.jobs[i].id.ToString()] = row;
  }
  result["allocation"] = allocation;
  if (packing) {
    // Only pairs that get time: a snapshot of n jobs has up to n²/2 candidate pairs.
    ordered_json pairs = ordered_json::object();
    for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
      if (output.pair_allocation.RowSum(p) < kPrintEpsilon) continue;
      const auto& pair = input.pairs[p];
      ordered_json row = ordered_json::object();
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        const double x = Clean(output.pair_allocation(p, j));
        if (x > 0.0) row[input.gpu_types[j]] = x;
      }
      pairs[input.jobs[static_cast<std::size_t>(pair.first)].id.ToString() + "+" +
            input.jobs[static_cast<std::size_t>(pair.second)].id.ToString()] = row;
    }
    result["pairs"] = pairs;
  }
  if (!output.note.empty()) result["note"] = output.note;
  return result;
}

void PrintTable(const std::string& policy_name, const ClusterSnapshot& snapshot,
                const PolicyInput& input, const PolicyOutput& output, double solve_seconds,
                std::ostream& out) {
  out << "policy " << policy_name << ": " << policy::AllocationStatusName(output.status);
  if (output.objective) out << ", objective " << *output.objective;
  out << ", solved in " << std::fixed << std::setprecision(4) << solve_seconds << " s\n";
  out.unsetf(std::ios::fixed);
  out << "cluster:";
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    out << " " << EscapeForDisplay(input.gpu_types[j]) << "=" << input.gpu_counts[j];
  }
  out << "\n\n";
  std::size_t type_width = 8;
  for (const auto& job : snapshot.jobs) type_width = std::max(type_width, EscapeForDisplay(job.job_type).size());
  out << std::left << std::setw(6) << "JOB" << std::setw(static_cast<int>(type_width) + 2)
      << "TYPE" << std::setw(4) << "SF";
  for (const auto& t : input.gpu_types) out << std::right << std::setw(9) << EscapeForDisplay(t);
  out << std::right << std::setw(13) << "STEPS/S" << std::setw(10) << "BEST/S" << "\n";
  char buffer[32];
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    out << std::left << std::setw(6) << input.jobs[i].id.ToString()
        << std::setw(static_cast<int>(type_width) + 2)
        << (snapshot.jobs[i].job_type.empty() ? "-" : EscapeForDisplay(snapshot.jobs[i].job_type))
        << std::setw(4)
        << input.jobs[i].scale_factor << std::right;
    double best = 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      std::snprintf(buffer, sizeof buffer, "%9.3f", Clean(output.allocation(i, j)));
      out << buffer;
      best = std::max(best, input.throughput(i, j));
    }
    std::snprintf(buffer, sizeof buffer, "%13.3f%10.3f",
                  policy::EffectiveThroughput(input, output, i), best);
    out << buffer << "\n";
  }
  std::size_t shown = 0;
  for (std::size_t p = 0; p < output.pair_allocation.rows(); ++p) {
    if (output.pair_allocation.RowSum(p) < kPrintEpsilon) continue;
    if (shown++ == 0) out << "\nspace-sharing pairs:\n";
    const auto& pair = input.pairs[p];
    out << "  " << input.jobs[static_cast<std::size_t>(pair.first)].id.ToString() << "+"
        << input.jobs[static_cast<std::size_t>(pair.second)].id.ToString();
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const double x = Clean(output.pair_allocation(p, j));
      if (x > 0.0) out << "  " << EscapeForDisplay(input.gpu_types[j]) << "=" << x;
    }
    out << "\n";
  }
  out << "\nColumns per GPU type: fraction of time the job should spend there. STEPS/S: the\n"
         "job's expected throughput under this allocation; BEST/S: alone on its fastest type.\n";
}

}  // namespace

Status RunAllocate(const AllocateOptions& options, std::ostream& out) {
  if (options.format != "json" && options.format != "table") {
    return Status::InvalidArgument("--format must be json or table, got " + options.format);
  }
  GAVEL_ASSIGN_OR_RETURN(const policy::PolicyInfo* info, policy::FindPolicy(options.policy));
  GAVEL_ASSIGN_OR_RETURN(const ClusterSnapshot snapshot, LoadSnapshotFile(options.snapshot_path));

  std::optional<ThroughputTable> table;
  const bool needs_table = std::any_of(snapshot.jobs.begin(), snapshot.jobs.end(),
                                       [](const JobSpec& j) { return !j.job_type.empty(); });
  if (needs_table) {
    const std::string path =
        snapshot.throughputs_file.empty() ? DefaultThroughputsFile() : snapshot.throughputs_file;
    GAVEL_ASSIGN_OR_RETURN(table, ThroughputTable::LoadFiles(path, options.throughputs_extra));
  }

  if (options.solver != "auto" && options.solver != "clp") {
    return Status::InvalidArgument("--solver must be auto or clp, got " + options.solver);
  }
  policy::PolicyOptions policy_options;
  policy_options.compat_gavel = options.compat_gavel;
  policy_options.solve_path =
      options.solver == "clp" ? policy::SolvePath::kGeneral : policy::SolvePath::kFast;
  GAVEL_ASSIGN_OR_RETURN(auto policy, policy::MakePolicy(options.policy, policy_options));

  const auto start = std::chrono::steady_clock::now();
  auto input = policy::BuildPolicyInput(snapshot, table ? &*table : nullptr,
                                        policy::RequirementsOf(info->capabilities,
                                                               options.compat_gavel));
  if (!input.ok()) return input.status().WithContext(options.snapshot_path);
  auto output = policy->Allocate(*input);
  if (!output.ok()) return output.status().WithContext(std::string(info->name));
  const double solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (options.format == "json") {
    out << ToJson(options.policy, options.solver, *input, *output, solve_seconds,
                  info->capabilities.packing)
               .dump()
        << "\n";
  } else {
    PrintTable(options.policy, snapshot, *input, *output, solve_seconds, out);
  }
  return Status::Ok();
}

void PrintPolicies(std::ostream& out) {
  std::size_t width = 0;
  for (const auto& info : policy::AllPolicies()) width = std::max(width, info.name.size());
  for (const auto& info : policy::AllPolicies()) {
    out << std::left << std::setw(static_cast<int>(width) + 2) << info.name << info.description
        << "\n";
  }
}

}  // namespace gavel::cli
