#include "gavel/cli/sweep_points.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <thread>

#include "gavel/cli/sweep_command.h"
#include "gavel/core/mutex.h"
#include "gavel/core/parse_number.h"

namespace gavel::cli {
namespace {

constexpr char kSaturationMarker[] = "simulated time passed the limit";
constexpr double kPhillySlackSeconds = 365.0 * 24.0 * 3600.0;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Window jobs finished per hour from the first window arrival to the last window finish: the
// rate at which the cluster turned the window's work into finished jobs (higher is better,
// unlike utilisation, which a slower schedule of the same work raises).
double Goodput(const sim::SimulationResult& r) {
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0.0;
  std::size_t finished = 0;
  for (const sim::JobResult& job : r.jobs) {
    if (!job.in_window) continue;
    first_arrival = std::min(first_arrival, job.arrival.value());
    if (job.finish && job.jct) {
      last_finish = std::max(last_finish, job.finish->value());
      ++finished;
    }
  }
  if (finished == 0 || !(last_finish > first_arrival)) return 0.0;
  return static_cast<double>(finished) * 3600.0 / (last_finish - first_arrival);
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
    if (job.in_window && job.queueing_delay) {
      file << "," << FormatNumber(job.queueing_delay->value());
    }
  }
  file << "\nutilization," << FormatNumber(r.timeline_bucket_seconds);
  for (double u : r.utilization_timeline) file << "," << FormatNumber(u);
  file << "\n";
  if (!file.good()) return Status::IoError(path.string() + ": cannot write");
  return Status::Ok();
}

// The simulate options of one point: the sweep's shared flags unchanged, then the point's own.
SimulateOptions PointOptions(const Point& p, const SweepOptions& o) {
  SimulateOptions s;
  static_cast<SimulationFlags&>(s) = o;
  s.saturation_limit = "none";  // the sweep's own bound (time_limit) applies
  s.progress = "never";
  s.cluster = p.cluster;
  s.policy = p.policy;
  s.seed = p.seed;
  s.window_start = p.window_start;
  s.window_end = p.window_end;
  // The original's sweep forwards both (its single-run driver ignores K; RunSimulate's rule).
  s.profiling_percentage = p.profiling_percentage;
  s.num_reference_models = p.num_reference_models;
  if (!o.trace_file.empty()) {
    s.load_scale = p.load_scale;
    s.saturation_limit = "auto";  // from the trace's own arrival span; made a time limit below
  } else if (p.jobs_per_hour > 0.0) {
    s.jobs_per_hour = p.jobs_per_hour;
    const double slack = o.workload == "philly"
                             ? std::max(o.saturation_slack_seconds, kPhillySlackSeconds)
                             : o.saturation_slack_seconds;
    s.time_limit =
        SaturationLimitSeconds(p.jobs_per_hour, p.window_end, o.saturation_factor, slack);
  } else {
    s.lam = 0.0;
  }
  return s;
}

}  // namespace

const std::vector<std::string>& SweepCsvColumns() {
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
                                                   "jobs_rejected",
                                                   "load_scale",
                                                   "goodput_jobs_per_hour",
                                                   "outcome",
                                                   "starved_jobs",
                                                   "oldest_unfinished_age_seconds"};
  return columns;
}

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

std::string RowLine(const Row& row) {
  std::vector<std::string> cells;
  for (const std::string& column : SweepCsvColumns()) {
    const auto it = row.find(column);
    cells.push_back(it == row.end() ? std::string() : it->second);
  }
  return JoinRow(cells);
}

std::string PolicyLabel(const std::string& policy, double profiling_percentage,
                        int num_reference_models) {
  if (profiling_percentage >= 1.0 && num_reference_models >= 26) return policy;
  return policy + " P" + FormatNumber(profiling_percentage) + " K" +
         std::to_string(num_reference_models);
}

std::vector<std::string> Point::Key() const {
  return {cluster,
          policy,
          FormatNumber(profiling_percentage),
          std::to_string(num_reference_models),
          std::to_string(seed),
          FormatNumber(jobs_per_hour),
          std::to_string(window_start),
          std::to_string(window_end)};
}

std::string Point::Label() const {
  std::string rate =
      jobs_per_hour > 0.0 ? FormatNumber(jobs_per_hour) + "/h" : std::string("static");
  if (load_scale != 1.0) rate += " (load x" + FormatNumber(load_scale) + ")";
  return cluster + " " + PolicyLabel(policy, profiling_percentage, num_reference_models) +
         " seed " + std::to_string(seed) + " rate " + rate;
}

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
  bool rewrite = false;
  if (!text.empty() && text.back() != '\n') {  // a row torn by a killed run
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    rewrite = true;
  }
  const std::vector<std::string>& columns = SweepCsvColumns();
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return rows;
  std::size_t written_columns = columns.size();
  if (line != JoinRow(columns)) {
    // An older version's file has a prefix of today's columns: its rows get empty new cells.
    std::vector<std::string> header;
    std::istringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) header.push_back(cell);
    if (header.size() >= columns.size() || header.size() <= kSweepKeyColumns ||
        !std::equal(header.begin(), header.end(), columns.begin())) {
      return Status::InvalidArgument(path.string() +
                                     ": header differs from this version's sweep columns; "
                                     "use another --out directory");
    }
    written_columns = header.size();
    rewrite = true;
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
    if (cells.size() != written_columns) {
      return Status::InvalidArgument(path.string() + ":" + std::to_string(line_number) +
                                     ": expected " + std::to_string(written_columns) + " cells");
    }
    CsvRow row;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      row.cells[columns[i]] = i < cells.size() ? cells[i] : std::string();
    }
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
      GAVEL_RETURN_IF_ERROR(number("average_jct_seconds").status());
      GAVEL_RETURN_IF_ERROR(number("makespan_seconds").status());
    }
    if (row.cells["outcome"].empty()) row.cells["outcome"] = row.saturated ? "saturated" : "drained";
    if (row.cells["load_scale"].empty()) row.cells["load_scale"] = "1";
    rows.push_back(std::move(row));
  }
  if (rewrite) {
    std::string upgraded = JoinRow(columns) + "\n";
    for (const CsvRow& row : rows) upgraded += RowLine(row.cells) + "\n";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << upgraded;
    if (!out.good()) return Status::IoError(path.string() + ": cannot rewrite");
  }
  return rows;
}

std::filesystem::path PointFile(const std::filesystem::path& dir,
                                const std::vector<std::string>& key) {
  std::string name;
  for (const std::string& cell : key) {
    if (!name.empty()) name += "_";
    for (const char c : cell) {
      name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
    }
  }
  return dir / "points" / (name + ".csv");
}

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
      const std::optional<double> value = ParseFiniteDouble(cell);
      if (!value) {  // a damaged file: no distribution rather than a wrong one
        values.clear();
        break;
      }
      values.push_back(*value);
    }
  }
  return lines;
}

Result<Row> RunPoint(const Point& p, const SweepOptions& o) {
  const std::vector<std::string> key = p.Key();
  Row row;
  for (std::size_t i = 0; i < kSweepKeyColumns; ++i) row[SweepCsvColumns()[i]] = key[i];
  row["load_scale"] = FormatNumber(p.load_scale);

  const auto start = std::chrono::steady_clock::now();
  Result<sim::SimulationOptions> options = ToSimulationOptions(PointOptions(p, o));
  if (!options.ok()) return options.status().WithContext(p.Label());
  if (options->saturation_limit) {  // a trace: the bound simulate would use, as a hard stop
    options->time_limit = options->saturation_limit;
    options->saturation_limit.reset();
  }
  const Result<sim::SimulationResult> result = sim::Simulate(*options);
  if (!result.ok()) {
    const Status& status = result.status();
    if (status.code() == StatusCode::kFailedPrecondition &&
        status.message().find(kSaturationMarker) != std::string::npos) {
      row["saturated"] = "1";
      row["outcome"] = "saturated";
      row["wall_seconds"] = FormatNumber(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      return row;
    }
    return status.WithContext(p.Label());
  }
  const sim::SimulationResult& r = *result;
  row["saturated"] = "0";
  row["outcome"] = "drained";
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
  row["goodput_jobs_per_hour"] = FormatNumber(Goodput(r));
  // Starvation, where the simulator reports it (simulate's JSON, docs/formats.md): a run
  // that left window jobs starved did not serve its load, whatever its averages say.
  const nlohmann::json json = nlohmann::json::parse(sim::ResultToJson(r));
  if (const auto starved = json.find("starved_jobs");
      starved != json.end() && starved->is_number()) {
    row["starved_jobs"] = FormatNumber(starved->get<double>());
    if (starved->get<double>() > 0.0) row["outcome"] = "starved";
  }
  for (const auto& [name, value] : json.items()) {
    if (name.rfind("oldest_unfinished", 0) == 0 && value.is_number()) {
      row["oldest_unfinished_age_seconds"] = FormatNumber(value.get<double>());
    }
  }
  GAVEL_RETURN_IF_ERROR(WritePointFile(PointFile(o.out_dir, key), r));
  return row;
}

Progress::Progress(std::ostream& out, bool bar) : out_(out), bar_(bar), start_seconds_(Now()) {}

void Progress::Start(std::size_t total, std::size_t skipped, const std::string& what) {
  total_ = total;
  done_ = skipped;
  if (skipped > 0) {
    out_ << "sweep: " << what << skipped << " of " << total << " points already done\n";
  }
  if (bar_) Draw("");
}

void Progress::Finished(const std::string& what) {
  ++done_;
  if (bar_) {
    Draw(what);
  } else {
    out_ << "sweep: [" << done_ << "/" << total_ << "] " << what << "\n" << std::flush;
  }
}

void Progress::End() {
  if (bar_) out_ << "\n" << std::flush;
}

void Progress::Draw(const std::string& what) {
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = total_ == 0 ? kWidth : kWidth * done_ / total_;
  out_ << "\r\033[K[" << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "] "
       << done_ << "/" << total_ << "  " << std::fixed << std::setprecision(0)
       << Now() - start_seconds_ << " s  " << what << std::flush;
  out_.unsetf(std::ios::fixed);
}

Status OpenCsvForAppend(const std::filesystem::path& path, std::ofstream& csv) {
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  csv.open(path, std::ios::app);
  if (!csv) return Status::IoError(path.string() + ": cannot open for appending");
  if (fresh) csv << JoinRow(SweepCsvColumns()) << "\n" << std::flush;
  return Status::Ok();
}

void RunPoints(const std::vector<Point>& points, const SweepOptions& o, std::ostream& csv,
               Progress& progress, std::vector<Status>& failures) {
  Mutex mutex;  // guards csv, progress and failures
  std::atomic<std::size_t> next{0};
  const auto worker = [&]() {
    for (std::size_t i = next++; i < points.size(); i = next++) {
      const Result<Row> row = RunPoint(points[i], o);
      const MutexLock lock(mutex);
      if (!row.ok()) {
        failures.push_back(row.status());
        progress.Finished(points[i].Label() + ": FAILED");
        continue;
      }
      csv << RowLine(*row) << "\n" << std::flush;
      const std::string& outcome = row->at("outcome");
      progress.Finished(points[i].Label() + (outcome == "drained" ? "" : ": " + outcome));
    }
  };
  std::size_t threads = o.threads > 0 ? o.threads : std::thread::hardware_concurrency();
  threads = std::max<std::size_t>(1, std::min(threads, points.size()));
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& thread : pool) thread.join();
}

}  // namespace gavel::cli
