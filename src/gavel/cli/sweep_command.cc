#include "gavel/cli/sweep_command.h"

#include "gavel/cli/display_text.h"
#include "gavel/cli/flag_bounds.h"
#include "gavel/cli/sweep_slurm.h"
#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "gavel/core/mutex.h"
#include "gavel/cli/simulate_command.h"
#include "gavel/policy/registry.h"

namespace gavel::cli {
namespace {

constexpr char kSaturationMarker[] = "simulated time passed the limit";

// sweep.csv / report.html for the original's workload, sweep-<workload>.csv otherwise.
std::string OutputName(const std::string& stem, const std::string& extension,
                       const SweepOptions& o) {
  return o.workload == "gavel" ? stem + extension : stem + "-" + o.workload + extension;
}
constexpr double kPhillySlackSeconds = 365.0 * 24.0 * 3600.0;

// Key columns first: they identify a point for resuming.
const std::vector<std::string>& CsvColumns() {
  static const std::vector<std::string> columns = {"cluster",
                                                   "policy",
                                                   "profiling_percentage",
                                                   "num_reference_models",
                                                   "seed",
                                                   "jobs_per_hour",
                                                   "window_start",
                                                   "window_end",
                                                   "saturated",
                                                   "average_jct_seconds",
                                                   "jct_p50_seconds",
                                                   "jct_p90_seconds",
                                                   "makespan_seconds",
                                                   "utilization",
                                                   "window_jobs_completed",
                                                   "rounds",
                                                   "policy_solves",
                                                   "estimation_mae",
                                                   "matched_true_type_fraction",
                                                   "wall_seconds",
                                                   "queueing_delay_p50_seconds",
                                                   "queueing_delay_p90_seconds",
                                                   "restarts",
                                                   "failed_jobs",
                                                   "wasted_gpu_seconds",
                                                   "jct_p99_seconds",
                                                   "max_rho",
                                                   "mean_rho",
                                                   "total_utility",
                                                   "jobs_rejected"};
  return columns;
}
constexpr std::size_t kKeyColumns = 8;

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// A canonical spelling, so that a rate read back from the CSV matches the one asked for.
std::string FormatNumber(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.12g", value);
  return buffer;
}

std::string JoinRow(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += cells[i];
  }
  return line;
}

// A policy as the table and plots show it: with its estimation settings unless they are the
// defaults (everything known).
std::string PolicyLabel(const std::string& policy, double profiling_percentage,
                        int num_reference_models) {
  if (profiling_percentage >= 1.0 && num_reference_models >= 26) return policy;
  return policy + " P" + FormatNumber(profiling_percentage) + " K" +
         std::to_string(num_reference_models);
}

struct Point {
  std::string cluster;
  std::string policy;
  std::uint64_t seed = 0;
  double jobs_per_hour = 0.0;
  double profiling_percentage = 1.0;
  int num_reference_models = 26;

  std::vector<std::string> Key(const SweepOptions& o) const {
    return {cluster,
            policy,
            FormatNumber(profiling_percentage),
            std::to_string(num_reference_models),
            std::to_string(seed),
            FormatNumber(jobs_per_hour),
            std::to_string(o.window_start),
            std::to_string(o.window_end)};
  }
  std::string Label() const {
    return cluster + " " + PolicyLabel(policy, profiling_percentage, num_reference_models) +
           " seed " + std::to_string(seed) + " rate " +
           (jobs_per_hour > 0.0 ? FormatNumber(jobs_per_hour) + "/h" : std::string("static"));
  }
};

using Row = std::map<std::string, std::string>;

// A row read back from the CSV, with the numbers the table and the report use parsed once.
struct CsvRow {
  Row cells;
  double jobs_per_hour = 0.0;
  bool saturated = false;
  // Set only when !saturated (a saturated run has no JCT or makespan: those cells are empty).
  double average_jct_seconds = 0.0;
  double makespan_seconds = 0.0;
  double profiling_percentage = 1.0;
  int num_reference_models = 26;
};

Result<std::vector<CsvRow>> LoadCsv(const std::filesystem::path& path) {
  std::vector<CsvRow> rows;
  if (!std::filesystem::exists(path)) return rows;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::IoError(path.string() + ": cannot open for reading");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  if (!text.empty() && text.back() != '\n') {
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    std::ofstream rewrite(path, std::ios::binary | std::ios::trunc);
    rewrite << text;
    if (!rewrite.good()) return Status::IoError(path.string() + ": cannot rewrite");
  }
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return rows;
  if (line != JoinRow(CsvColumns())) {
    return Status::InvalidArgument(path.string() +
                                   ": header differs from this version's sweep columns; "
                                   "use another --out directory");
  }
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream cells_in(line);
    while (std::getline(cells_in, cell, ',')) cells.push_back(cell);
    if (line.back() == ',') cells.emplace_back();
    if (cells.size() != CsvColumns().size()) {
      return Status::InvalidArgument(path.string() + ":" + std::to_string(line_number) +
                                     ": expected " + std::to_string(CsvColumns().size()) +
                                     " cells");
    }
    CsvRow row;
    for (std::size_t i = 0; i < cells.size(); ++i) row.cells[CsvColumns()[i]] = cells[i];
    // The report reads these as numbers: a damaged file is an error naming the cell. A
    // saturated run alone may leave its JCT and makespan empty.
    const auto number = [&](const char* column) -> Result<double> {
      const std::string& written = row.cells[column];
      if (const std::optional<double> value = ParseFiniteDouble(written)) return *value;
      return Status::InvalidArgument(path.string() + ":" + std::to_string(line_number) + ": " +
                                     column + ": `" + written + "` is not a number");
    };
    GAVEL_ASSIGN_OR_RETURN(row.jobs_per_hour, number("jobs_per_hour"));
    GAVEL_ASSIGN_OR_RETURN(row.profiling_percentage, number("profiling_percentage"));
    GAVEL_ASSIGN_OR_RETURN(const double models, number("num_reference_models"));
    row.num_reference_models = static_cast<int>(models);
    row.saturated = row.cells["saturated"] == "1";
    if (!row.saturated) {
      GAVEL_ASSIGN_OR_RETURN(row.average_jct_seconds, number("average_jct_seconds"));
      GAVEL_ASSIGN_OR_RETURN(row.makespan_seconds, number("makespan_seconds"));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> RowKey(const Row& row) {
  std::vector<std::string> key;
  for (std::size_t i = 0; i < kKeyColumns; ++i) key.push_back(row.at(CsvColumns()[i]));
  return key;
}

// points/<key>.csv: the file of a point's distributions (the key's cells, made file-safe).
std::filesystem::path PointFile(const std::filesystem::path& dir,
                                const std::vector<std::string>& key) {
  std::string name;
  for (const std::string& cell : key) {
    if (!name.empty()) name += "_";
    for (const char c : cell) name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
  }
  return dir / "points" / (name + ".csv");
}

// Three lines: "jct_seconds,...", "queueing_delay_seconds,...", "utilization,<bucket s>,...".
Status WritePointFile(const std::filesystem::path& path, const sim::SimulationResult& r) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) return Status::IoError(path.parent_path().string() + ": " + error.message());
  std::ofstream file(path, std::ios::trunc);
  file << "jct_seconds";
  for (const sim::JobResult& job : r.jobs) {
    if (job.in_window && job.jct) file << "," << FormatNumber(job.jct->value());
  }
  file << "\nqueueing_delay_seconds";
  for (const sim::JobResult& job : r.jobs) {
    if (job.in_window && job.queueing_delay) file << "," << FormatNumber(job.queueing_delay->value());
  }
  file << "\nutilization," << FormatNumber(r.timeline_bucket_seconds);
  for (double u : r.utilization_timeline) file << "," << FormatNumber(u);
  file << "\n";
  if (!file.good()) return Status::IoError(path.string() + ": cannot write");
  return Status::Ok();
}

// Runs one point through `gavel simulate`'s own options and turns it into a CSV row.
Result<Row> RunPoint(const Point& p, const SweepOptions& o) {
  SimulateOptions s;
  s.physics = o.physics;
  s.saturation_limit = "none";  // the sweep's own bound (time_limit) applies
  s.progress = "never";
  s.cluster = p.cluster;
  s.policy = p.policy;
  s.seed = p.seed;
  s.window_start = o.window_start;
  s.window_end = o.window_end;
  s.multi_gpu = o.multi_gpu;
  s.compat = o.compat;
  s.workload = o.workload;
  // The original's sweep forwards both (its single-run driver ignores K; RunSimulate's rule).
  s.profiling_percentage = p.profiling_percentage;
  s.num_reference_models = p.num_reference_models;
  s.fairness = o.fairness;
  s.elastic_fraction = o.elastic_fraction;
  s.utility = o.utility;
  s.hpo_fraction = o.hpo_fraction;
  s.hpo_trials = o.hpo_trials;
  if (p.jobs_per_hour > 0.0) {
    s.jobs_per_hour = p.jobs_per_hour;
    const double slack = o.workload == "philly"
                             ? std::max(o.saturation_slack_seconds, kPhillySlackSeconds)
                             : o.saturation_slack_seconds;
    s.time_limit =
        SaturationLimitSeconds(p.jobs_per_hour, o.window_end, o.saturation_factor, slack);
  } else {
    s.lam = 0.0;
  }
  const std::vector<std::string> key = p.Key(o);
  Row row;
  for (std::size_t i = 0; i < kKeyColumns; ++i) row[CsvColumns()[i]] = key[i];
  for (std::size_t i = kKeyColumns; i < CsvColumns().size(); ++i) row[CsvColumns()[i]] = "";

  const auto start = std::chrono::steady_clock::now();
  const Result<sim::SimulationOptions> options = ToSimulationOptions(s);
  if (!options.ok()) return options.status().WithContext(p.Label());
  const Result<sim::SimulationResult> result = sim::Simulate(*options);
  if (!result.ok()) {
    const Status& status = result.status();
    if (status.code() == StatusCode::kFailedPrecondition &&
        status.message().find(kSaturationMarker) != std::string::npos) {
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      row["saturated"] = "1";
      row["wall_seconds"] = FormatNumber(wall);
      return row;
    }
    return status.WithContext(p.Label());
  }
  const sim::SimulationResult& r = *result;
  row["saturated"] = "0";
  row["average_jct_seconds"] = FormatNumber(r.average_jct_seconds);
  row["jct_p50_seconds"] = FormatNumber(r.jct_p50_seconds);
  row["jct_p90_seconds"] = FormatNumber(r.jct_p90_seconds);
  row["makespan_seconds"] = FormatNumber(r.makespan_seconds);
  row["utilization"] = FormatNumber(r.utilization);
  row["window_jobs_completed"] = FormatNumber(static_cast<double>(r.window_jobs_completed));
  row["rounds"] = FormatNumber(static_cast<double>(r.rounds));
  row["policy_solves"] = FormatNumber(static_cast<double>(r.policy_solves));
  if (r.throughput_estimation) {
    row["estimation_mae"] = FormatNumber(r.throughput_estimation->mean_absolute_error);
    row["matched_true_type_fraction"] =
        FormatNumber(r.throughput_estimation->matched_true_type_fraction);
  }
  row["wall_seconds"] = FormatNumber(r.wall_seconds);
  row["queueing_delay_p50_seconds"] = FormatNumber(r.queueing_delay_p50_seconds);
  row["queueing_delay_p90_seconds"] = FormatNumber(r.queueing_delay_p90_seconds);
  row["restarts"] = FormatNumber(static_cast<double>(r.physics.restarts));
  row["failed_jobs"] = FormatNumber(static_cast<double>(r.failed_jobs));
  row["wasted_gpu_seconds"] = FormatNumber(r.physics.wasted_gpu_seconds);
  row["jct_p99_seconds"] = FormatNumber(r.jct_p99_seconds);
  if (r.fairness) {
    row["max_rho"] = FormatNumber(r.fairness->max_rho);
    row["mean_rho"] = FormatNumber(r.fairness->mean_rho);
  }
  if (r.has_utility) {
    row["total_utility"] = FormatNumber(r.total_utility);
    row["jobs_rejected"] = FormatNumber(static_cast<double>(r.jobs_rejected));
  }
  GAVEL_RETURN_IF_ERROR(WritePointFile(PointFile(o.out_dir, key), r));
  return row;
}

// Reports progress: a redrawn bar on a terminal, one plain line per point otherwise.
class Progress {
 public:
  Progress(std::ostream& out, bool bar, std::size_t total, std::size_t skipped)
      : out_(out),
        bar_(bar),
        total_(total),
        done_(skipped),
        start_(std::chrono::steady_clock::now()) {
    if (skipped > 0) out_ << "sweep: " << skipped << " of " << total << " points already done\n";
    if (bar_) Draw("");
  }
  // Called under the sweep's mutex.
  void Finished(const std::string& what) {
    ++done_;
    if (bar_) {
      Draw(what);
    } else {
      out_ << "sweep: [" << done_ << "/" << total_ << "] " << what << "\n" << std::flush;
    }
  }
  void End() {
    if (bar_) out_ << "\n" << std::flush;
  }

 private:
  void Draw(const std::string& what) {
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = total_ == 0 ? kWidth : kWidth * done_ / total_;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    out_ << "\r\033[K[" << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "] "
         << done_ << "/" << total_ << "  " << std::fixed << std::setprecision(0) << elapsed
         << " s  " << what << std::flush;
    out_.unsetf(std::ios::fixed);
  }

  std::ostream& out_;
  bool bar_;
  std::size_t total_;
  std::size_t done_;
  std::chrono::steady_clock::time_point start_;
};

// ---- Aggregation shared by the table and the report ----

struct Cell {  // one (cluster, rate, policy): means over the seeds that finished
  double jct_sum = 0.0;
  double makespan_sum = 0.0;
  int finished = 0;
  int saturated = 0;
  double MeanJct() const { return finished > 0 ? jct_sum / finished : 0.0; }
  double MeanMakespan() const { return finished > 0 ? makespan_sum / finished : 0.0; }
};

// cluster -> rate -> policy -> cell; policies keep first-seen order separately.
struct Aggregate {
  std::map<std::string, std::map<double, std::map<std::string, Cell>>> cells;
  std::vector<std::string> policies;
};

// `policies` first fixes the order of tables and legends to the user's, not the finish order.
Aggregate AggregateRows(const std::vector<CsvRow>& rows, std::vector<std::string> policies) {
  Aggregate a;
  a.policies = std::move(policies);
  for (const CsvRow& row : rows) {
    const std::string policy = PolicyLabel(row.cells.at("policy"), row.profiling_percentage,
                                           row.num_reference_models);
    Cell& cell = a.cells[row.cells.at("cluster")][row.jobs_per_hour][policy];
    if (std::find(a.policies.begin(), a.policies.end(), policy) == a.policies.end()) {
      a.policies.push_back(policy);
    }
    if (row.saturated) {
      ++cell.saturated;
      continue;
    }
    cell.jct_sum += row.average_jct_seconds;
    cell.makespan_sum += row.makespan_seconds;
    ++cell.finished;
  }
  return a;
}

void PrintTable(const Aggregate& a, std::ostream& out) {
  out << std::left << std::setw(12) << "cluster" << std::setw(10) << "jobs/h" << std::setw(38)
      << "policy" << std::right << std::setw(10) << "JCT (h)" << std::setw(14) << "makespan (h)"
      << std::setw(7) << "seeds" << std::setw(11) << "speed-up"
      << "\n";
  // speed-up: on an X_perf row, mean JCT of X / mean JCT of X_perf at the same cluster and rate.
  for (const auto& [cluster, by_rate] : a.cells) {
    for (const auto& [rate, by_policy] : by_rate) {
      for (const std::string& policy : a.policies) {
        const auto it = by_policy.find(policy);
        if (it == by_policy.end()) continue;
        const Cell& cell = it->second;
        out << std::left << std::setw(12) << EscapeForDisplay(cluster) << std::setw(10)
            << (rate > 0.0 ? FormatNumber(rate) : std::string("static")) << std::setw(38) << policy
            << std::right << std::fixed << std::setprecision(2);
        if (cell.finished > 0) {
          out << std::setw(10) << cell.MeanJct() / 3600.0 << std::setw(14)
              << cell.MeanMakespan() / 3600.0;
        } else {
          out << std::setw(10) << "saturated" << std::setw(14) << "-";
        }
        out << std::setw(7)
            << (std::to_string(cell.finished) + "/" +
                std::to_string(cell.finished + cell.saturated));
        // The heterogeneity-aware speed-up: JCT of the agnostic policy / JCT of its _perf twin.
        const std::string suffix = "_perf";
        std::string speedup = "";
        if (policy.size() > suffix.size() &&
            policy.compare(policy.size() - suffix.size(), suffix.size(), suffix) == 0) {
          const auto base = by_policy.find(policy.substr(0, policy.size() - suffix.size()));
          if (base != by_policy.end() && base->second.finished > 0 && cell.finished > 0) {
            std::ostringstream s;
            s << std::fixed << std::setprecision(2) << base->second.MeanJct() / cell.MeanJct()
              << "x";
            speedup = s.str();
          }
        }
        out << std::setw(11) << speedup << "\n";
        out.unsetf(std::ios::fixed);
      }
    }
  }
}

// ---- Rankings: every metric, which scheduler wins where ----

struct RankedMetric {
  const char* column;  // a CsvColumns() name; metrics whose column this version lacks are skipped
  const char* label;
  bool higher_is_better;
  double scale;  // shown value = mean / scale
  const char* unit;
};

// The metrics the report ranks, in its order. Utility joins when the CSV carries it.
const std::vector<RankedMetric>& RankedMetrics() {
  static const std::vector<RankedMetric> metrics = {
      {"average_jct_seconds", "average JCT", false, 3600.0, " h"},
      {"jct_p99_seconds", "p99 JCT", false, 3600.0, " h"},
      {"makespan_seconds", "makespan", false, 3600.0, " h"},
      {"max_rho", "max rho", false, 1.0, ""},
      {"mean_rho", "mean rho", false, 1.0, ""},
      {"total_utility", "total utility", true, 1.0, ""},
      {"utilization", "utilisation", true, 1.0, ""},
      {"queueing_delay_p50_seconds", "queueing delay p50", false, 3600.0, " h"},
      {"queueing_delay_p90_seconds", "queueing delay p90", false, 3600.0, " h"},
      {"restarts", "restarts", false, 1.0, ""},
  };
  return metrics;
}

// Per (cluster, rate) and metric: the policies in rank order by their mean over the seeds that
// finished (saturated runs and empty cells left out; ties keep the user's order), then, per
// policy, the metrics it wins. Returns false when no metric had two policies to compare.
bool PrintRankings(const std::vector<CsvRow>& rows, const std::vector<std::string>& policies,
                   std::ostream& out) {
  using Means = std::map<std::string, std::pair<double, int>>;  // policy -> (sum, count)
  std::map<std::pair<std::string, double>, std::map<std::string, Means>> sums;
  const std::vector<std::string>& columns = CsvColumns();
  for (const CsvRow& row : rows) {
    if (row.saturated) continue;
    const std::string policy = PolicyLabel(row.cells.at("policy"), row.profiling_percentage,
                                           row.num_reference_models);
    for (const RankedMetric& metric : RankedMetrics()) {
      if (std::find(columns.begin(), columns.end(), metric.column) == columns.end()) continue;
      const std::optional<double> value = ParseFiniteDouble(row.cells.at(metric.column));
      if (!value) continue;
      auto& [sum, count] =
          sums[{row.cells.at("cluster"), row.jobs_per_hour}][metric.column][policy];
      sum += *value;
      ++count;
    }
  }
  bool any = false;
  for (const auto& [where, by_metric] : sums) {
    std::ostringstream block;
    std::map<std::string, std::vector<std::string>> wins;
    for (const RankedMetric& metric : RankedMetrics()) {
      const auto it = by_metric.find(metric.column);
      if (it == by_metric.end() || it->second.size() < 2) continue;
      std::vector<std::pair<double, std::string>> ranked;
      for (const std::string& policy : policies) {
        const auto p = it->second.find(policy);
        if (p != it->second.end()) ranked.emplace_back(p->second.first / p->second.second, policy);
      }
      std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
        return metric.higher_is_better ? a.first > b.first : a.first < b.first;
      });
      block << "  " << std::left << std::setw(20) << metric.label << std::right;
      for (std::size_t k = 0; k < ranked.size(); ++k) {
        block << (k == 0 ? "" : " > ") << k + 1 << ". " << ranked[k].second << " ("
              << FormatNumber(std::round(ranked[k].first / metric.scale * 1000.0) / 1000.0)
              << metric.unit << ")";
      }
      block << "\n";
      // Every policy tied with the best wins the metric.
      for (const auto& [value, policy] : ranked) {
        if (value == ranked.front().first) wins[policy].push_back(metric.label);
      }
    }
    if (block.str().empty()) continue;
    any = true;
    out << "Rankings, cluster " << EscapeForDisplay(where.first) << ", "
        << (where.second > 0.0 ? FormatNumber(where.second) + " jobs/h" : std::string("static"))
        << " (best first, means over seeds):\n"
        << block.str() << "  wins:";
    for (const std::string& policy : policies) {
      const auto w = wins.find(policy);
      if (w == wins.end()) continue;
      out << " " << policy << " (";
      for (std::size_t k = 0; k < w->second.size(); ++k) out << (k ? ", " : "") << w->second[k];
      out << ")";
    }
    out << "\n";
  }
  return any;
}

// ---- HTML report: self-contained, inline SVG, no scripts or fonts from the network ----

std::string Escape(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

const char* Colour(std::size_t i) {
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

constexpr double kWidth = 640.0, kHeight = 360.0, kLeft = 70.0, kRight = 190.0, kTop = 30.0,
                 kBottom = 50.0;

std::string Fmt(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

void Axes(std::ostream& svg, const std::string& title, const std::string& x_label,
          const std::string& y_label, double y_max) {
  svg << "<text x=\"" << Fmt(kWidth / 2) << "\" y=\"18\" text-anchor=\"middle\">" << Escape(title)
      << "</text>\n";
  svg << "<line x1=\"" << Fmt(kLeft) << "\" y1=\"" << Fmt(kHeight - kBottom) << "\" x2=\""
      << Fmt(kWidth - kRight) << "\" y2=\"" << Fmt(kHeight - kBottom) << "\" stroke=\"black\"/>\n";
  svg << "<line x1=\"" << Fmt(kLeft) << "\" y1=\"" << Fmt(kTop) << "\" x2=\"" << Fmt(kLeft)
      << "\" y2=\"" << Fmt(kHeight - kBottom) << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = kHeight - kBottom - (kHeight - kTop - kBottom) * i / 4.0;
    svg << "<text x=\"" << Fmt(kLeft - 6) << "\" y=\"" << Fmt(y + 4)
        << "\" text-anchor=\"end\" font-size=\"11\">" << Fmt(y_max * i / 4.0) << "</text>\n";
  }
  svg << "<text x=\"" << Fmt((kLeft + kWidth - kRight) / 2) << "\" y=\"" << Fmt(kHeight - 10)
      << "\" text-anchor=\"middle\" font-size=\"12\">" << Escape(x_label) << "</text>\n";
  svg << "<text transform=\"translate(16," << Fmt((kTop + kHeight - kBottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << Escape(y_label)
      << "</text>\n";
}

void Legend(std::ostream& svg, const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 16.0 * static_cast<double>(i);
    svg << "<rect x=\"" << Fmt(kWidth - kRight + 12) << "\" y=\"" << Fmt(y)
        << "\" width=\"10\" height=\"10\" fill=\"" << Colour(i) << "\"/>\n";
    svg << "<text x=\"" << Fmt(kWidth - kRight + 28) << "\" y=\"" << Fmt(y + 9)
        << "\" font-size=\"11\">" << Escape(names[i]) << "</text>\n";
  }
}

// Average JCT (hours) against input rate, one line per policy; saturated points left out.
void JctPlot(const std::string& cluster,
             const std::map<double, std::map<std::string, Cell>>& by_rate,
             const std::vector<std::string>& policies, std::ostream& html) {
  double x_max = 0.0, y_max = 0.0;
  for (const auto& [rate, by_policy] : by_rate) {
    if (rate <= 0.0) continue;
    x_max = std::max(x_max, rate);
    for (const auto& [policy, cell] : by_policy) {
      if (cell.finished > 0) y_max = std::max(y_max, cell.MeanJct() / 3600.0);
    }
  }
  if (y_max <= 0.0) y_max = 1.0;
  if (x_max <= 0.0) x_max = 1.0;
  const auto x_of = [&](double rate) { return kLeft + (kWidth - kLeft - kRight) * rate / x_max; };
  const auto y_of = [&](double v) {
    return kHeight - kBottom - (kHeight - kTop - kBottom) * v / y_max;
  };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Fmt(kWidth) << "\" height=\""
      << Fmt(kHeight) << "\" font-family=\"sans-serif\">\n";
  Axes(svg, "Average JCT vs input rate, cluster " + cluster, "input rate (jobs/hour)",
       "average JCT (hours)", y_max);
  for (const auto& [rate, by_policy] : by_rate) {
    if (rate <= 0.0) continue;
    svg << "<text x=\"" << Fmt(x_of(rate)) << "\" y=\"" << Fmt(kHeight - kBottom + 16)
        << "\" text-anchor=\"middle\" font-size=\"11\">" << FormatNumber(rate) << "</text>\n";
  }
  for (std::size_t i = 0; i < policies.size(); ++i) {
    std::string points;
    for (const auto& [rate, by_policy] : by_rate) {
      const auto it = by_policy.find(policies[i]);
      if (rate <= 0.0 || it == by_policy.end() || it->second.finished == 0) continue;
      const double x = x_of(rate), y = y_of(it->second.MeanJct() / 3600.0);
      points += Fmt(x) + "," + Fmt(y) + " ";
      svg << "<circle cx=\"" << Fmt(x) << "\" cy=\"" << Fmt(y) << "\" r=\"3\" fill=\"" << Colour(i)
          << "\"/>\n";
    }
    if (!points.empty()) {
      svg << "<polyline fill=\"none\" stroke=\"" << Colour(i) << "\" points=\"" << points
          << "\"/>\n";
    }
  }
  Legend(svg, policies);
  svg << "</svg>\n";
  html << svg.str();
}

// Mean makespan (hours) per policy for static runs (rate 0).
void MakespanPlot(const std::string& cluster, const std::map<std::string, Cell>& by_policy,
                  const std::vector<std::string>& policies, std::ostream& html) {
  double y_max = 0.0;
  for (const auto& [policy, cell] : by_policy)
    y_max = std::max(y_max, cell.MeanMakespan() / 3600.0);
  if (y_max <= 0.0) y_max = 1.0;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Fmt(kWidth) << "\" height=\""
      << Fmt(kHeight) << "\" font-family=\"sans-serif\">\n";
  Axes(svg, "Makespan of static runs, cluster " + cluster, "policy", "makespan (hours)", y_max);
  const double slot =
      (kWidth - kLeft - kRight) / static_cast<double>(std::max<std::size_t>(1, policies.size()));
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto it = by_policy.find(policies[i]);
    if (it == by_policy.end() || it->second.finished == 0) continue;
    const double h = (kHeight - kTop - kBottom) * it->second.MeanMakespan() / 3600.0 / y_max;
    svg << "<rect x=\"" << Fmt(kLeft + slot * static_cast<double>(i) + slot * 0.15) << "\" y=\""
        << Fmt(kHeight - kBottom - h) << "\" width=\"" << Fmt(slot * 0.7) << "\" height=\""
        << Fmt(h) << "\" fill=\"" << Colour(i) << "\"/>\n";
  }
  Legend(svg, policies);
  svg << "</svg>\n";
  html << svg.str();
}

// A point file's lines by name (missing file or line: empty).
std::map<std::string, std::vector<double>> ReadPointFile(const std::filesystem::path& path) {
  std::map<std::string, std::vector<double>> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::string name;
    std::string cell;
    std::getline(cells, name, ',');
    std::vector<double>& values = lines[name];
    while (std::getline(cells, cell, ',')) {
      try {
        values.push_back(std::stod(cell));
      } catch (const std::exception&) {
        values.clear();
        break;
      }
    }
  }
  return lines;
}

// One line per policy: the empirical CDF of `series[policy]` (hours on the x axis), or the
// series itself against time (utilisation, `bucket` seconds per value).
void SeriesPlot(const std::string& title, const std::string& x_label, const std::string& y_label,
                const std::vector<std::string>& policies,
                const std::map<std::string, std::vector<double>>& series, bool cdf,
                double bucket, std::ostream& html) {
  double x_max = 0.0;
  for (const auto& [policy, values] : series) {
    if (values.empty()) continue;
    x_max = std::max(x_max, cdf ? *std::max_element(values.begin(), values.end()) / 3600.0
                                : static_cast<double>(values.size()) * bucket / 3600.0);
  }
  if (x_max <= 0.0) x_max = 1.0;
  const double y_max = 1.0;
  const auto x_of = [&](double x) { return kLeft + (kWidth - kLeft - kRight) * x / x_max; };
  const auto y_of = [&](double y) {
    return kHeight - kBottom - (kHeight - kTop - kBottom) * std::min(y, y_max) / y_max;
  };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Fmt(kWidth) << "\" height=\""
      << Fmt(kHeight) << "\" font-family=\"sans-serif\">\n";
  Axes(svg, title, x_label, y_label, y_max);
  svg << "<text x=\"" << Fmt(kWidth - kRight) << "\" y=\"" << Fmt(kHeight - kBottom + 16)
      << "\" text-anchor=\"end\" font-size=\"11\">" << FormatNumber(x_max) << "</text>\n";
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto it = series.find(policies[i]);
    if (it == series.end() || it->second.empty()) continue;
    std::vector<double> values = it->second;
    std::string points;
    // At most ~400 vertices per line keeps the report small for 100,000-job windows.
    const std::size_t step = std::max<std::size_t>(1, values.size() / 400);
    if (cdf) {
      std::sort(values.begin(), values.end());
      const double n = static_cast<double>(values.size());
      for (std::size_t k = 0; k < values.size(); k += step) {
        points += Fmt(x_of(values[k] / 3600.0)) + "," + Fmt(y_of((static_cast<double>(k) + 1) / n)) + " ";
      }
      points += Fmt(x_of(values.back() / 3600.0)) + "," + Fmt(y_of(1.0)) + " ";
    } else {
      for (std::size_t k = 0; k < values.size(); k += step) {
        points += Fmt(x_of((static_cast<double>(k) + 0.5) * bucket / 3600.0)) + "," +
                  Fmt(y_of(values[k])) + " ";
      }
    }
    svg << "<polyline fill=\"none\" stroke=\"" << Colour(i) << "\" points=\"" << points
        << "\"/>\n";
  }
  Legend(svg, policies);
  svg << "</svg>\n";
  html << svg.str();
}

// Per cluster and rate: JCT and queueing-delay CDFs per policy (seeds pooled) and the
// utilisation over time of each policy's first seed, from the points' files.
void DistributionPlots(const std::filesystem::path& dir, const std::vector<CsvRow>& rows,
                       const std::string& cluster, double rate,
                       const std::vector<std::string>& policies, std::ostream& html) {
  std::map<std::string, std::vector<double>> jct, delay, utilization;
  double bucket = 3600.0;
  for (const CsvRow& row : rows) {
    if (row.cells.at("cluster") != cluster || row.jobs_per_hour != rate) continue;
    auto lines = ReadPointFile(PointFile(dir, RowKey(row.cells)));
    const std::string policy = PolicyLabel(row.cells.at("policy"), row.profiling_percentage,
                                           row.num_reference_models);
    jct[policy].insert(jct[policy].end(), lines["jct_seconds"].begin(), lines["jct_seconds"].end());
    delay[policy].insert(delay[policy].end(), lines["queueing_delay_seconds"].begin(),
                         lines["queueing_delay_seconds"].end());
    std::vector<double>& u = lines["utilization"];
    if (u.size() > 1 && !utilization.contains(policy)) {
      bucket = u.front();
      utilization[policy].assign(u.begin() + 1, u.end());
    }
  }
  const std::string where = ", cluster " + cluster + ", " +
                            (rate > 0.0 ? FormatNumber(rate) + " jobs/h" : std::string("static"));
  SeriesPlot("JCT CDF" + where, "JCT (hours)", "fraction of jobs", policies, jct, true, 0.0, html);
  SeriesPlot("Queueing delay CDF" + where, "queueing delay (hours)", "fraction of jobs", policies,
             delay, true, 0.0, html);
  SeriesPlot("Utilisation over time" + where, "simulated time (hours)", "busy GPUs / GPUs",
             policies, utilization, false, bucket, html);
}

Status WriteReport(const std::filesystem::path& path, const std::vector<CsvRow>& rows,
                   const Aggregate& a) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>Gavel sweep report</title>\n<style>body{font-family:sans-serif;margin:2em}"
       << "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
       << "text-align:right}</style>\n</head>\n<body>\n<h1>Gavel sweep report</h1>\n";
  for (const auto& [cluster, by_rate] : a.cells) {
    html << "<h2>Cluster " << Escape(cluster) << "</h2>\n";
    const bool has_dynamic = by_rate.upper_bound(0.0) != by_rate.end();
    if (has_dynamic) JctPlot(cluster, by_rate, a.policies, html);
    const auto static_runs = by_rate.find(0.0);
    if (static_runs != by_rate.end()) {
      MakespanPlot(cluster, static_runs->second, a.policies, html);
    }
    for (const auto& [rate, by_policy] : by_rate) {
      DistributionPlots(path.parent_path(), rows, cluster, rate, a.policies, html);
    }
  }
  html << "<h2>Comparison (means over seeds)</h2>\n<pre>";
  std::ostringstream table;
  PrintTable(a, table);
  html << Escape(table.str()) << "</pre>\n";
  std::ostringstream rankings;
  if (PrintRankings(rows, a.policies, rankings)) {
    html << "<h2>Rankings per metric</h2>\n<pre>" << Escape(rankings.str()) << "</pre>\n";
  }
  html << "<h2>Every point</h2>\n<table>\n<tr>";
  for (const std::string& column : CsvColumns()) html << "<th>" << Escape(column) << "</th>";
  html << "</tr>\n";
  for (const CsvRow& row : rows) {
    html << "<tr>";
    for (const std::string& column : CsvColumns()) {
      html << "<td>" << Escape(row.cells.at(column)) << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</table>\n</body>\n</html>\n";
  std::ofstream file(path, std::ios::trunc);
  file << html.str();
  if (!file.good()) return Status::IoError(path.string() + ": cannot write the report");
  return Status::Ok();
}

Result<std::vector<Point>> EnumeratePoints(const SweepOptions& o) {
  const std::vector<std::string> policies = Split(o.policies, ',');
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
  if (o.rates.empty()) {
    return Status::InvalidArgument("no input rate: give --rates or -a/-b/-n (0 = static)");
  }
  // Each point's own check (ToSimulationOptions), made before any work and before the CSV
  // exists rather than once per point; 0 is a static run, with no rate.
  for (const double rate : o.rates) {
    if (rate != 0.0) GAVEL_RETURN_IF_ERROR(CheckJobsPerHour(rate, "--rates"));
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
  // Slowest-first would balance better, but this order keeps the CSV easy to read.
  std::vector<Point> points;
  for (const std::string& cluster : o.clusters) {
    for (const double rate : o.rates) {
      for (const std::string& policy : policies) {
        for (const double p : o.profiling_percentages) {
          for (const int k : o.num_reference_models) {
            for (const std::uint64_t seed : seeds) {
              points.push_back({.cluster = cluster,
                                .policy = policy,
                                .seed = seed,
                                .jobs_per_hour = rate,
                                .profiling_percentage = p,
                                .num_reference_models = k});
            }
          }
        }
      }
    }
  }
  return points;
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

namespace {

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
  std::vector<std::string> cells;
  for (const std::string& column : CsvColumns()) cells.push_back(row.at(column));
  const std::string file =
      SweepRowFile(std::filesystem::absolute(dir / "slurm").string(), index);
  const std::string temporary = file + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << JoinRow(CsvColumns()) << "\n" << JoinRow(cells) << "\n";
    if (!out) return Status::IoError(temporary + ": cannot write");
  }
  std::error_code error;
  std::filesystem::rename(temporary, file, error);
  if (error) return Status::IoError(file + ": " + error.message());
  return Status::Ok();
}

}  // namespace

Status RunSweep(const SweepOptions& o, std::ostream& out, std::ostream& progress) {
  // Phase 1: the points, and which of them an earlier run already finished.
  GAVEL_ASSIGN_OR_RETURN(const std::vector<Point> points, EnumeratePoints(o));
  if (o.out_dir.empty()) return Status::InvalidArgument("--out: no directory given");
  const std::filesystem::path dir(o.out_dir);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::IoError(o.out_dir + ": " + error.message());
  const std::filesystem::path csv_path = dir / OutputName("sweep", ".csv", o);
  GAVEL_ASSIGN_OR_RETURN(const std::vector<CsvRow> earlier, LoadCsv(csv_path));
  std::set<std::vector<std::string>> done;
  for (const CsvRow& row : earlier) done.insert(RowKey(row.cells));
  if (!o.slurm_task_list.empty()) return RunSlurmTask(points, o, dir);
  if (!o.slurm && !o.slurm_partition.empty()) {
    return Status::InvalidArgument("--slurm-partition: only with --slurm");
  }
  std::vector<Point> todo;
  std::vector<std::size_t> todo_index;  // each one's place in `points`
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (done.count(points[i].Key(o)) == 0) {
      todo.push_back(points[i]);
      todo_index.push_back(i);
    }
  }

  // Phase 2: run the rest on a pool, appending each finished row.
  std::ofstream csv(csv_path, std::ios::app);
  if (!csv) return Status::IoError(csv_path.string() + ": cannot open for appending");
  if (earlier.empty() && std::filesystem::file_size(csv_path) == 0) {
    csv << JoinRow(CsvColumns()) << "\n" << std::flush;
  }
  Mutex mutex;  // guards csv, progress (bar) and failures
  std::vector<Status> failures;
  Progress bar(progress, o.progress_bar, points.size(), points.size() - todo.size());
  std::atomic<std::size_t> next{0};
  const auto worker = [&]() {
    for (std::size_t i = next++; i < todo.size(); i = next++) {
      const Result<Row> row = RunPoint(todo[i], o);
      const MutexLock lock(mutex);
      if (!row.ok()) {
        failures.push_back(row.status());
        bar.Finished(todo[i].Label() + ": FAILED");
        continue;
      }
      std::vector<std::string> cells;
      for (const std::string& column : CsvColumns()) cells.push_back(row->at(column));
      csv << JoinRow(cells) << "\n" << std::flush;
      bar.Finished(todo[i].Label() + (row->at("saturated") == "1" ? ": saturated" : ""));
    }
  };
  if (o.slurm && !todo.empty()) {
    // On Slurm: one array task per point, then the rows they wrote, in point order.
    const std::string slurm_dir = std::filesystem::absolute(dir / "slurm").string();
    GAVEL_ASSIGN_OR_RETURN(const SweepArrayResult array,
                           RunSweepArray({o.slurm_partition, slurm_dir, todo_index}, progress));
    for (std::size_t i = 0; i < todo.size(); ++i) {
      const std::string file = SweepRowFile(slurm_dir, todo_index[i]);
      std::ifstream in(file);
      std::string header, row;
      if (!std::getline(in, header) || !std::getline(in, row) ||
          header != JoinRow(CsvColumns())) {
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
      std::filesystem::remove(file, error);
    }
  } else {
    std::size_t threads = o.threads > 0 ? o.threads : std::thread::hardware_concurrency();
    threads = std::max<std::size_t>(1, std::min(threads, todo.size()));
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& thread : pool) thread.join();
  }
  bar.End();
  csv.close();
  if (!csv) return Status::IoError(csv_path.string() + ": write failed");

  // Phase 3: the table and the report, from every row of the CSV (earlier runs included).
  GAVEL_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, LoadCsv(csv_path));
  const Aggregate aggregate = AggregateRows(rows, Split(o.policies, ','));
  PrintTable(aggregate, out);
  PrintRankings(rows, aggregate.policies, out);
  const std::filesystem::path report_path = dir / OutputName("report", ".html", o);
  GAVEL_RETURN_IF_ERROR(WriteReport(report_path, rows, aggregate));
  out << "CSV: " << csv_path.string() << "\nReport: " << report_path.string() << "\n";
  if (!failures.empty()) {
    std::string message =
        std::to_string(failures.size()) + " point(s) failed; first: " + failures.front().message();
    return Status::Internal(message);
  }
  return Status::Ok();
}

CLI::App* AddSweepCommand(CLI::App& app, SweepCommandLine* line) {
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", "Simulate clusters x policies x seeds x input rates in parallel; CSV + HTML");
  sweep_cmd->add_option("-c,--cluster", line->options.clusters,
                        "GPU counts per type (v100:p100:k80); repeatable (default 36:36:36)");
  sweep_cmd->add_option("-p,--policies", line->options.policies, "Policy names, comma-separated")
      ->required();
  sweep_cmd->add_option("--seeds", line->options.seeds, "Seeds, comma-separated (default 0)");
  sweep_cmd
      ->add_option("--rates", line->options.rates, "Input rates in jobs/hour (0 = static)")
      ->delimiter(',')
      ->check(Bounded(0.0, bounds::kMaxJobsPerHour));
  sweep_cmd->add_option("-a,--throughput-lower-bound", line->a, "Lowest rate (jobs/hour)")
      ->check(Bounded(0.0, bounds::kMaxJobsPerHour));
  sweep_cmd->add_option("-b,--throughput-upper-bound", line->b, "Highest rate (jobs/hour)")
      ->check(Bounded(0.0, bounds::kMaxJobsPerHour));
  sweep_cmd->add_option("-n,--num-data-points", line->n, "Rates in linspace(a, b, n)")
      ->check(BoundedInteger(1, 10'000));
  sweep_cmd
      ->add_option("-s,--window-start", line->options.window_start,
                   "First job id of the measurement window (default 0)")
      ->check(BoundedInteger(0, bounds::kMaxJobs));
  sweep_cmd
      ->add_option("-e,--window-end", line->options.window_end,
                   "Job id after the measurement window (default 5000)")
      ->check(BoundedInteger(0, bounds::kMaxJobs));
  sweep_cmd->add_flag("-m,--generate-multi-gpu-jobs", line->options.multi_gpu,
                      "Generate multi-GPU jobs (1/2/4/8 GPUs)");
  sweep_cmd->add_option("--elastic-fraction", line->options.elastic_fraction,
                        "Fraction of generated jobs that are elastic, as gavel simulate's "
                        "(default 0)");
  sweep_cmd->add_option("--hpo-fraction", line->options.hpo_fraction,
                        "Fraction of generated jobs that are hyper-parameter searches, as gavel "
                        "simulate's (default 0)")
      ->check(Bounded(0.0, 1.0, ""));
  sweep_cmd->add_option("--hpo-trials", line->options.hpo_trials,
                        "Trials per hyper-parameter search (default 4)")
      ->check(BoundedInteger(2, 64));
  sweep_cmd->add_option("--utility", line->options.utility,
                        "Give generated jobs a utility of completion time: sigmoid|linear (the "
                        "CSV gains total_utility and jobs_rejected; rankings rank utility)");
  sweep_cmd->add_flag("--fairness", line->options.fairness,
                      "Also run `isolated` per point and report finish-time fairness (max_rho, "
                      "mean_rho; doubles the work)");
  sweep_cmd
      ->add_option("--workload", line->options.workload,
                   "Generated jobs: gavel (default) or philly (Philly-like; writes "
                   "sweep-philly.csv and report-philly.html)")
      ->check(CLI::IsMember({"gavel", "philly"}));
  sweep_cmd->add_option("--compat", line->options.compat,
                        "`gavel` reproduces the original implementation's quirks");
  sweep_cmd
      ->add_option("--profiling-percentage,--profiling-percentages",
                   line->options.profiling_percentages,
                   "Throughput estimation: profiling percentages, comma-separated (default 1)")
      ->delimiter(',');
  sweep_cmd
      ->add_option("--num-reference-models", line->options.num_reference_models,
                   "Throughput estimation: numbers of reference job types, comma-separated "
                   "(default 26)")
      ->delimiter(',');
  sweep_cmd->add_option("--saturation-factor", line->options.saturation_factor,
                        "Cut a run at factor x arrival span + 30 days of simulated time "
                        "(default 2)")
      ->check(Bounded(1e-3, 1e6));
  AddPhysicsFlags(sweep_cmd, &line->options.physics);
  sweep_cmd->add_option("-j,--jobs", line->options.threads, "Threads (default: all cores)")
      ->check(BoundedInteger(1, 4096));
  sweep_cmd->add_flag("--slurm", line->options.slurm,
                      "Run the points as a Slurm job array (SLURM_CONF's cluster; "
                      "docs/slurm.md)");
  sweep_cmd->add_option("--slurm-partition", line->options.slurm_partition,
                        "With --slurm: the partition of the array (default: Slurm's)");
  sweep_cmd->add_option("--slurm-task-list", line->options.slurm_task_list,
                        "Internal: set by --slurm for its array tasks")
      ->group("");
  sweep_cmd
      ->add_option("--out", line->options.out_dir,
                   "Directory for sweep.csv and report.html")
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
