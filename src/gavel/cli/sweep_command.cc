#include "gavel/cli/sweep_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "gavel/cli/flag_bounds.h"
#include "gavel/cli/sweep_capacity.h"
#include "gavel/cli/sweep_points.h"
#include "gavel/cli/sweep_report.h"
#include "gavel/cli/sweep_slurm.h"
#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"
#include "gavel/policy/registry.h"

namespace gavel::cli {
namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// What the points run on, resolved once: the window and, for a trace, its mean input rate.
struct Workload {
  std::size_t window_end = 5000;
  double trace_jobs_per_hour = 0.0;  // 0: generated jobs (or a trace with every job at time 0)
  std::string description;           // a line for the report
};

// The file names of this sweep's outputs: sweep.csv / report.html for the original's generated
// workload, sweep-<workload>.csv for another, sweep-trace-<file stem>.csv for a trace, so that
// points of different workloads never mix in one directory.
std::string OutputName(const std::string& stem, const std::string& extension,
                       const SweepOptions& o) {
  if (!o.trace_file.empty()) {
    std::string name;
    for (const char c : std::filesystem::path(o.trace_file).stem().string()) {
      name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ? c : '-';
    }
    return stem + "-trace-" + name + extension;
  }
  return o.workload == "gavel" ? stem + extension : stem + "-" + o.workload + extension;
}

Result<Workload> ResolveWorkload(const SweepOptions& o, const std::vector<std::string>& policies,
                                 std::uint64_t seed) {
  Workload w;
  if (o.trace_file.empty()) {
    w.window_end = o.window_end.value_or(5000);
    w.description = "Generated jobs (--workload " + o.workload + (o.multi_gpu ? ", -m" : "") +
                    "), window jobs " + std::to_string(o.window_start) + " to " +
                    std::to_string(w.window_end);
    return w;
  }
  SimulateOptions s;
  static_cast<SimulationFlags&>(s) = o;
  s.cluster = o.clusters.front();
  s.policy = policies.front();
  s.seed = seed;
  s.saturation_limit = "none";
  GAVEL_ASSIGN_OR_RETURN(const sim::SimulationOptions options, ToSimulationOptions(s));
  double first = options.trace.front().arrival_time.value(), last = first;
  for (const workload::TraceJob& job : options.trace) {
    first = std::min(first, job.arrival_time.value());
    last = std::max(last, job.arrival_time.value());
  }
  w.window_end = o.window_end.value_or(options.trace.size());
  if (last > first) {
    w.trace_jobs_per_hour =
        static_cast<double>(options.trace.size() - 1) * 3600.0 / (last - first);
  }
  w.description = "Trace " + o.trace_file + " (" + o.trace_format + "), " +
                  std::to_string(options.trace.size()) + " jobs at a mean " +
                  FormatNumber(w.trace_jobs_per_hour) + " jobs/h; window jobs " +
                  std::to_string(o.window_start) + " to " + std::to_string(w.window_end);
  return w;
}

Result<std::vector<std::uint64_t>> ParseSeeds(const SweepOptions& o) {
  std::vector<std::uint64_t> seeds;
  for (const std::string& text : Split(o.seeds, ',')) {
    // ParseUint64, not stoull: stoull takes "-1" and wraps it to 2^64-1.
    const std::optional<std::uint64_t> seed = ParseUint64(text);
    if (!seed || *seed > bounds::kMaxSeed) {
      return Status::InvalidArgument("--seeds: \"" + text + "\" is not an integer in [0, " +
                                     std::to_string(bounds::kMaxSeed) + "]");
    }
    seeds.push_back(*seed);
  }
  if (seeds.empty()) return Status::InvalidArgument("--seeds: no seed given");
  return seeds;
}

Status CheckOptions(const SweepOptions& o, const std::vector<std::string>& policies) {
  if (policies.empty()) return Status::InvalidArgument("--policies: no policy given");
  // Fail before any work (and before the CSV exists) rather than once per point.
  for (const std::string& policy : policies) {
    const Result<const policy::PolicyInfo*> info = policy::FindPolicy(policy);
    if (!info.ok() && policy.find('=') != std::string::npos &&
        policy.find(':') == std::string::npos) {
      return Status::InvalidArgument("--policies: \"" + policy +
                                     "\" is no policy: commas separate policies here, so "
                                     "separate a policy's options with ':' (name:k=v:k=v)");
    }
    if (!info.ok()) return Status::InvalidArgument("--policies: " + info.status().message());
  }
  if (!o.trace_file.empty()) {
    if (!o.rates.empty()) {
      return Status::InvalidArgument(
          "--rates: a --trace brings its own arrivals; sweep it over load with --load-scale");
    }
    for (const double scale : o.load_scales) {
      if (!(scale >= 1e-6 && scale <= 1e6)) {  // simulate --load-scale's bounds
        return Status::InvalidArgument("--load-scale: " + FormatNumber(scale) +
                                       " is not in [1e-6, 1e6]");
      }
    }
  } else {
    if (!o.load_scales.empty()) {
      return Status::InvalidArgument(
          "--load-scale compresses a --trace's arrivals; generated jobs take --rates");
    }
    if (o.rates.empty() && !o.find_capacity) {
      return Status::InvalidArgument(
          "no input rate: give --rates or -a/-b/-n (0 = static), or --find-capacity");
    }
    // Each point's own check (ToSimulationOptions), made before any work and before the CSV
    // exists rather than once per point; 0 is a static run, with no rate.
    for (const double rate : o.rates) {
      if (rate != 0.0) GAVEL_RETURN_IF_ERROR(CheckJobsPerHour(rate, "--rates"));
    }
  }
  if (o.clusters.empty()) return Status::InvalidArgument("--cluster: no cluster given");
  if (o.profiling_percentages.empty() || o.num_reference_models.empty()) {
    return Status::InvalidArgument("--profiling-percentage/--num-reference-models: no value");
  }
  for (const double p : o.profiling_percentages) {
    if (!(p >= 0.0 && p <= 1.0)) {
      return Status::InvalidArgument("--profiling-percentage: " + FormatNumber(p) +
                                     " is not in [0, 1]");
    }
  }
  for (const int k : o.num_reference_models) {
    if (k < 1 || k > 26) {
      return Status::InvalidArgument("--num-reference-models: " + std::to_string(k) +
                                     " is not in [1, 26]");
    }
  }
  if (!(o.saturation_factor > 0.0) || !(o.saturation_slack_seconds >= 0.0)) {
    return Status::InvalidArgument("--saturation-factor must be positive, the slack >= 0");
  }
  if (!(o.capacity_precision >= 1e-4 && o.capacity_precision <= 1.0)) {
    return Status::InvalidArgument("--capacity-precision must be in [0.0001, 1]");
  }
  if (!o.slurm && !o.slurm_partition.empty()) {
    return Status::InvalidArgument("--slurm-partition: only with --slurm");
  }
  return Status::Ok();
}

// A policy with its estimation setting: what a capacity search is per (with the cluster).
struct PolicySetting {
  std::string policy;
  double profiling_percentage = 1.0;
  int num_reference_models = 26;
};

std::vector<PolicySetting> Settings(const SweepOptions& o,
                                    const std::vector<std::string>& policies) {
  std::vector<PolicySetting> settings;
  for (const std::string& policy : policies) {
    for (const double p : o.profiling_percentages) {
      for (const int k : o.num_reference_models) settings.push_back({policy, p, k});
    }
  }
  return settings;
}

// The point of `setting` on `cluster` at `value`: a rate (generated jobs) or a load scale.
Point MakePoint(const std::string& cluster, const PolicySetting& setting, std::uint64_t seed,
                double value, const SweepOptions& o, const Workload& w) {
  Point p;
  p.cluster = cluster;
  p.policy = setting.policy;
  p.seed = seed;
  p.profiling_percentage = setting.profiling_percentage;
  p.num_reference_models = setting.num_reference_models;
  p.window_start = o.window_start;
  p.window_end = w.window_end;
  if (o.trace_file.empty()) {
    p.jobs_per_hour = value;
  } else {
    p.load_scale = value;
    p.jobs_per_hour = w.trace_jobs_per_hour * value;
  }
  return p;
}

// The grid, in the order the CSV is easiest to read in (slowest-first would balance better).
std::vector<Point> EnumeratePoints(const SweepOptions& o, const std::vector<PolicySetting>& settings,
                                   const std::vector<std::uint64_t>& seeds, const Workload& w) {
  std::vector<double> values = o.rates;
  if (!o.trace_file.empty()) {
    values = o.load_scales.empty() && !o.find_capacity ? std::vector<double>{1.0} : o.load_scales;
  }
  std::vector<Point> points;
  for (const std::string& cluster : o.clusters) {
    for (const double value : values) {
      for (const PolicySetting& setting : settings) {
        for (const std::uint64_t seed : seeds) {
          points.push_back(MakePoint(cluster, setting, seed, value, o, w));
        }
      }
    }
  }
  return points;
}

// Inside a Slurm array task (--slurm-task-list): the one point of this task, its row written
// to its own file (atomically: a half-written row is never gathered).
Status RunSlurmTask(const std::vector<Point>& points, const SweepOptions& o,
                    const std::filesystem::path& dir) {
  GAVEL_ASSIGN_OR_RETURN(const std::size_t index, PointOfThisTask(o.slurm_task_list));
  if (index >= points.size()) {
    return Status::InvalidArgument("--slurm-task-list: point " + std::to_string(index) +
                                   " of " + std::to_string(points.size()));
  }
  GAVEL_ASSIGN_OR_RETURN(const Row row, RunPoint(points[index], o));
  const std::string file =
      SweepRowFile(std::filesystem::absolute(dir / "slurm").string(), index);
  const std::string temporary = file + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << JoinRow(SweepCsvColumns()) << "\n" << RowLine(row) << "\n";
    if (!out) return Status::IoError(temporary + ": cannot write");
  }
  std::error_code error;
  std::filesystem::rename(temporary, file, error);
  if (error) return Status::IoError(file + ": " + error.message());
  return Status::Ok();
}

// On Slurm: one array task per point, then the rows they wrote, in point order.
Status RunOnSlurm(const std::vector<Point>& todo, const std::vector<std::size_t>& todo_index,
                  const SweepOptions& o, const std::filesystem::path& dir, std::ostream& csv,
                  Progress& bar, std::ostream& progress, std::vector<Status>& failures) {
  const std::string slurm_dir = std::filesystem::absolute(dir / "slurm").string();
  GAVEL_ASSIGN_OR_RETURN(const SweepArrayResult array,
                         RunSweepArray({o.slurm_partition, slurm_dir, todo_index}, progress));
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const std::string file = SweepRowFile(slurm_dir, todo_index[i]);
    std::ifstream in(file);
    std::string header, row;
    if (!std::getline(in, header) || !std::getline(in, row) ||
        header != JoinRow(SweepCsvColumns())) {
      std::string log = array.log_pattern;
      log.replace(log.find("%a"), 2, std::to_string(i));
      failures.push_back(Status::Internal(todo[i].Label() + ": Slurm task " +
                                          std::to_string(array.job_id) + "_" +
                                          std::to_string(i) + " wrote no row (log " + log + ")"));
      bar.Finished(todo[i].Label() + ": FAILED");
      continue;
    }
    csv << row << "\n" << std::flush;
    bar.Finished(todo[i].Label());
    std::error_code error;
    std::filesystem::remove(file, error);
  }
  return Status::Ok();
}

using KeySet = std::map<std::vector<std::string>, bool>;  // point key -> drained

void Remember(const std::vector<CsvRow>& rows, KeySet& known) {
  for (const CsvRow& row : rows) {
    std::vector<std::string> key;
    for (std::size_t i = 0; i < kSweepKeyColumns; ++i) {
      key.push_back(row.cells.at(SweepCsvColumns()[i]));
    }
    known[key] = row.cells.at("outcome") == "drained";
  }
}

// --find-capacity: every (cluster, setting)'s bisection, run in rounds whose probes (all
// seeds of each open search's next value) share the pool. Probes land in capacity.csv, so a
// rerun replays the searches from it without simulating again.
Result<std::vector<report::Capacity>> FindCapacities(const SweepOptions& o,
                                                     const std::vector<PolicySetting>& settings,
                                                     const std::vector<std::uint64_t>& seeds,
                                                     const Workload& w,
                                                     const std::vector<CsvRow>& grid,
                                                     const std::filesystem::path& dir,
                                                     std::ostream& progress) {
  const std::filesystem::path path = dir / OutputName("capacity", ".csv", o);
  GAVEL_ASSIGN_OR_RETURN(const std::vector<CsvRow> probes, LoadCsv(path));
  KeySet known;
  Remember(grid, known);
  Remember(probes, known);
  const bool trace = !o.trace_file.empty();
  CapacitySearchOptions search_options;
  search_options.precision = o.capacity_precision;
  search_options.start = 1.0;
  if (!trace) {
    for (const double rate : o.rates) {
      if (rate > 0.0) search_options.start = std::min(search_options.start, rate);
    }
    search_options.min_value = 3600.0 / bounds::kMaxSeconds;
    search_options.max_value = bounds::kMaxJobsPerHour;
  }
  struct Search {
    std::string cluster;
    PolicySetting setting;
    CapacitySearch search;
    std::string error;  // a probe failed (not saturated): the search stops here
  };
  std::vector<Search> searches;
  for (const std::string& cluster : o.clusters) {
    for (const PolicySetting& setting : settings) {
      searches.push_back({cluster, setting, CapacitySearch(search_options), ""});
    }
  }
  // The verdict at `value`: drained on every seed, failed on one, or unknown (points to run).
  const auto verdict = [&](const Search& s, double value, std::vector<Point>* missing) {
    std::optional<bool> drained = true;
    for (const std::uint64_t seed : seeds) {
      const Point p = MakePoint(s.cluster, s.setting, seed, value, o, w);
      const auto it = known.find(p.Key());
      if (it == known.end()) {
        if (missing != nullptr) missing->push_back(p);
        drained.reset();
      } else if (drained && !it->second) {
        drained = false;
      }
    }
    return drained;
  };
  // Seed each search with the grid's values, ascending (CapacitySearch keeps the first failure).
  std::vector<double> grid_values = trace ? o.load_scales : o.rates;
  std::sort(grid_values.begin(), grid_values.end());
  for (Search& s : searches) {
    for (const double value : grid_values) {
      if (value <= 0.0) continue;
      if (const std::optional<bool> v = verdict(s, value, nullptr)) s.search.Record(value, *v);
    }
  }
  std::ofstream csv;
  GAVEL_RETURN_IF_ERROR(OpenCsvForAppend(path, csv));
  Progress bar(progress, o.progress_bar);
  for (int round = 1;; ++round) {
    std::vector<Point> batch;
    std::vector<std::pair<Search*, double>> waiting;  // searches whose next value is in `batch`
    for (Search& s : searches) {
      if (!s.error.empty()) continue;
      while (const std::optional<double> value = s.search.Next()) {
        const std::optional<bool> v = verdict(s, *value, &batch);
        if (!v) {
          waiting.emplace_back(&s, *value);
          break;
        }
        s.search.Record(*value, *v);
      }
    }
    if (batch.empty()) break;
    progress << "sweep: --find-capacity round " << round << ", " << batch.size() << " points\n";
    bar.Start(batch.size(), 0, "");
    std::vector<Status> failures;
    RunPoints(batch, o, csv, bar, failures);
    bar.End();
    GAVEL_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, LoadCsv(path));
    Remember(rows, known);
    // A probe that failed outright (a policy that cannot run this workload) has no row: its
    // search ends with the reason instead of retrying forever.
    for (auto& [s, value] : waiting) {
      if (verdict(*s, value, nullptr)) continue;
      s->error = "a probe failed";
      const std::string label = MakePoint(s->cluster, s->setting, 0, value, o, w).Label();
      const std::string who = label.substr(0, label.find(" seed "));
      for (const Status& failure : failures) {
        if (failure.message().rfind(who + " seed ", 0) == 0) {
          s->error = failure.message();
          break;
        }
      }
    }
  }
  std::vector<report::Capacity> capacities;
  const double to_rate = trace ? w.trace_jobs_per_hour : 1.0;
  for (const Search& s : searches) {
    report::Capacity c;
    c.cluster = s.cluster;
    c.policy = PolicyLabel(s.setting.policy, s.setting.profiling_percentage,
                           s.setting.num_reference_models);
    if (s.search.sustainable()) c.sustainable = *s.search.sustainable() * to_rate;
    if (s.search.failing()) c.failing = *s.search.failing() * to_rate;
    c.precision = o.capacity_precision;
    c.note = s.error.empty() ? s.search.note() : s.error;
    if (trace && s.search.sustainable()) {
      c.note += (c.note.empty() ? "" : "; ") + std::string("load scale ") +
                FormatNumber(*s.search.sustainable());
    }
    capacities.push_back(std::move(c));
  }
  return capacities;
}

std::vector<std::string> SetupLines(const SweepOptions& o, const Workload& w,
                                    const std::vector<std::uint64_t>& seeds) {
  std::string seed_list;
  for (const std::uint64_t seed : seeds) {
    if (!seed_list.empty()) seed_list += ',';
    seed_list += std::to_string(seed);
  }
  std::vector<std::string> lines = {w.description, "Seeds " + seed_list};
  lines.push_back(o.physics.any() ? "Cluster physics on (restarts and wasted GPU time ranked)"
                                  : "No cluster physics (restarts not ranked)");
  if (o.find_capacity) {
    lines.push_back("Sustainable load by bisection to a relative precision of " +
                    FormatNumber(o.capacity_precision));
  }
  return lines;
}

}  // namespace

std::vector<double> RateLinspace(double a, double b, int n) {
  std::vector<double> rates;
  for (int i = 0; i < n; ++i) {
    const double rate = n == 1 ? a : a + (b - a) * i / (n - 1);
    if (rate != 0.0) rates.push_back(rate);
  }
  return rates;
}

double SaturationLimitSeconds(double jobs_per_hour, std::size_t window_end, double factor,
                              double slack_seconds) {
  if (jobs_per_hour <= 0.0) return 0.0;
  const double arrival_span = static_cast<double>(window_end) * 3600.0 / jobs_per_hour;
  return factor * arrival_span + slack_seconds;
}

Status RunSweep(const SweepOptions& o, std::ostream& out, std::ostream& progress) {
  // Phase 1: the points, and which of them an earlier run already finished.
  const std::vector<std::string> policies = Split(o.policies, ',');
  GAVEL_RETURN_IF_ERROR(CheckOptions(o, policies));
  GAVEL_ASSIGN_OR_RETURN(const std::vector<std::uint64_t> seeds, ParseSeeds(o));
  if (o.out_dir.empty()) return Status::InvalidArgument("--out: no directory given");
  GAVEL_ASSIGN_OR_RETURN(const Workload workload, ResolveWorkload(o, policies, seeds.front()));
  const std::vector<PolicySetting> settings = Settings(o, policies);
  const std::vector<Point> points = EnumeratePoints(o, settings, seeds, workload);
  const std::filesystem::path dir(o.out_dir);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::IoError(o.out_dir + ": " + error.message());
  const std::filesystem::path csv_path = dir / OutputName("sweep", ".csv", o);
  GAVEL_ASSIGN_OR_RETURN(const std::vector<CsvRow> earlier, LoadCsv(csv_path));
  std::set<std::vector<std::string>> done;
  for (const CsvRow& row : earlier) {
    std::vector<std::string> key;
    for (std::size_t i = 0; i < kSweepKeyColumns; ++i) {
      key.push_back(row.cells.at(SweepCsvColumns()[i]));
    }
    done.insert(key);
  }
  if (!o.slurm_task_list.empty()) return RunSlurmTask(points, o, dir);
  std::vector<Point> todo;
  std::vector<std::size_t> todo_index;  // each one's place in `points`
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (done.count(points[i].Key()) == 0) {
      todo.push_back(points[i]);
      todo_index.push_back(i);
    }
  }

  // Phase 2: run the rest, appending each finished row.
  std::vector<Status> failures;
  {
    std::ofstream csv;
    GAVEL_RETURN_IF_ERROR(OpenCsvForAppend(csv_path, csv));
    Progress bar(progress, o.progress_bar);
    bar.Start(points.size(), points.size() - todo.size(), "");
    if (o.slurm && !todo.empty()) {
      GAVEL_RETURN_IF_ERROR(
          RunOnSlurm(todo, todo_index, o, dir, csv, bar, progress, failures));
    } else if (!todo.empty()) {
      RunPoints(todo, o, csv, bar, failures);
    }
    bar.End();
    csv.close();
    if (!csv) return Status::IoError(csv_path.string() + ": write failed");
  }
  GAVEL_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, LoadCsv(csv_path));

  // Phase 3: the sustainable load of every policy, by bisection.
  std::vector<report::Capacity> capacities;
  if (o.find_capacity) {
    GAVEL_ASSIGN_OR_RETURN(capacities,
                           FindCapacities(o, settings, seeds, workload, rows, dir, progress));
  }

  // Phase 4: statistics, the table and the report, from every row of the CSV.
  std::vector<std::string> labels;
  for (const PolicySetting& s : settings) {
    labels.push_back(PolicyLabel(s.policy, s.profiling_percentage, s.num_reference_models));
  }
  report::Analysis analysis = AnalyzeRows(rows, labels, o.physics.any());
  analysis.capacities = capacities;
  PrintSweepTable(analysis, out);
  const SweepOutputs outputs{.report_html = dir / OutputName("report", ".html", o),
                             .summary_json = dir / OutputName("summary", ".json", o),
                             .summary_csv = dir / OutputName("summary", ".csv", o)};
  GAVEL_RETURN_IF_ERROR(
      WriteSweepOutputs(outputs, dir, rows, analysis, SetupLines(o, workload, seeds)));
  out << "CSV: " << csv_path.string() << "\nSummary: " << outputs.summary_json.string()
      << "\nReport: " << outputs.report_html.string() << "\n";
  if (!failures.empty()) {
    return Status::Internal(std::to_string(failures.size()) +
                            " point(s) failed; first: " + failures.front().message());
  }
  return Status::Ok();
}

CLI::App* AddSweepCommand(CLI::App& app, SweepCommandLine* line) {
  SweepOptions& o = line->options;
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep",
      "Simulate clusters x policies x seeds x input rates in parallel; compare with paired "
      "statistics; CSV, summary.json and an HTML report");
  sweep_cmd->add_option("-c,--cluster", o.clusters,
                        "GPU counts per type (v100:p100:k80); repeatable (default 36:36:36)");
  sweep_cmd->add_option("-p,--policies,--policy", o.policies, "Policy names, comma-separated")
      ->required();
  sweep_cmd->add_option("--seeds,--seed", o.seeds, "Seeds, comma-separated (default 0)");
  sweep_cmd->add_option("--rates", o.rates, "Input rates in jobs/hour (0 = static)")
      ->delimiter(',')
      ->check(Bounded(0.0, bounds::kMaxJobsPerHour));
  sweep_cmd->add_option("-a,--throughput-lower-bound", line->a, "Lowest rate (jobs/hour)")
      ->check(Bounded(0.0, bounds::kMaxJobsPerHour));
  sweep_cmd->add_option("-b,--throughput-upper-bound", line->b, "Highest rate (jobs/hour)")
      ->check(Bounded(0.0, bounds::kMaxJobsPerHour));
  sweep_cmd->add_option("-n,--num-data-points", line->n, "Rates in linspace(a, b, n)")
      ->check(BoundedInteger(1, 10'000));
  AddSimulationFlags(sweep_cmd, &o);
  sweep_cmd
      ->add_option("--load-scale", o.load_scales,
                   "--trace: arrival-time compressions to sweep, comma-separated (2 = the same "
                   "jobs twice as fast; default 1)")
      ->delimiter(',');
  sweep_cmd
      ->add_option("--profiling-percentage,--profiling-percentages", o.profiling_percentages,
                   "Throughput estimation: profiling percentages, comma-separated (default 1)")
      ->delimiter(',');
  sweep_cmd
      ->add_option("--num-reference-models", o.num_reference_models,
                   "Throughput estimation: numbers of reference job types, comma-separated "
                   "(default 26)")
      ->delimiter(',');
  sweep_cmd
      ->add_option("--saturation-factor", o.saturation_factor,
                   "Cut a run at factor x arrival span + 30 days of simulated time (default 2)")
      ->check(Bounded(1e-3, 1e6));
  sweep_cmd
      ->add_option("--saturation-slack", o.saturation_slack_seconds,
                   "Seconds of simulated time added to the bound (default 2592000 = 30 days; "
                   "smaller makes a short window's --find-capacity meaningful)")
      ->check(Bounded(0.0, bounds::kMaxSeconds, " s"));
  sweep_cmd->add_flag("--find-capacity", o.find_capacity,
                      "Per policy and cluster, bisect on rate (a trace: load scale) for the "
                      "highest that drains on every seed");
  sweep_cmd
      ->add_option("--capacity-precision", o.capacity_precision,
                   "--find-capacity stops once the failing rate is within (1 + this) of the "
                   "sustainable one (default 0.05)")
      ->check(Bounded(1e-4, 1.0, ""));
  sweep_cmd->add_option("-j,--jobs", o.threads, "Threads (default: all cores)")
      ->check(BoundedInteger(1, 4096));
  sweep_cmd->add_flag("--slurm", o.slurm,
                      "Run the points as a Slurm job array (SLURM_CONF's cluster; "
                      "docs/slurm.md)");
  sweep_cmd->add_option("--slurm-partition", o.slurm_partition,
                        "With --slurm: the partition of the array (default: Slurm's)");
  sweep_cmd->add_option("--slurm-task-list", o.slurm_task_list,
                        "Internal: set by --slurm for its array tasks")
      ->group("");
  sweep_cmd
      ->add_option("--out", o.out_dir,
                   "Directory for sweep.csv, summary.json, summary.csv and report.html")
      ->required();
  return sweep_cmd;
}

int RunSweepCommand(const SweepCommandLine& line) {
  SweepOptions options = line.options;
  if ((line.a || line.b || line.n) && !(line.a && line.b && line.n)) {
    std::cerr << "gavel sweep: -a, -b and -n go together\n";
    return 1;
  }
  // The linspace rates first, then those of --rates.
  if (line.n) {
    const std::vector<double> linspace = RateLinspace(*line.a, *line.b, *line.n);
    options.rates.insert(options.rates.begin(), linspace.begin(), linspace.end());
  }
  // A bar redrawn in place only makes sense on a terminal; logs get one line per point.
  options.progress_bar = isatty(STDERR_FILENO) != 0;
  const Status status = RunSweep(options, std::cout, std::cerr);
  if (!status.ok()) {
    std::cerr << "gavel sweep: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
