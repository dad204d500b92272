// The sweep's point runner: one point (cluster × policy × estimation setting × seed × input
// rate) is one `gavel simulate` run, recorded as one row of the sweep CSV.
//
// Each point goes through ToSimulationOptions (simulate_command.h) with the sweep's shared
// SimulationFlags copied in whole, so a point's numbers are exactly those of a direct `gavel
// simulate` run with the same options. Simulations share no mutable state (sim/simulator.h),
// so RunPoints runs points on a pool of threads.
//
// The CSV (docs/formats.md, "Sweep CSV") is appended and flushed as each point finishes; its
// first kKeyColumns columns identify a point for resuming. Columns added by later versions go
// at the end, and LoadCsv upgrades a file written with fewer of them in place.
//
// Thread-safety: free functions; RunPoints owns its pool and joins it before returning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "gavel/cli/simulate_command.h"
#include "gavel/core/status.h"

namespace gavel::cli {

struct SweepOptions;

// The CSV's columns, key columns first.
const std::vector<std::string>& SweepCsvColumns();
inline constexpr std::size_t kSweepKeyColumns = 8;

// A canonical spelling of a number ("%.12g"), so a rate read back matches the one asked for.
std::string FormatNumber(double value);

// A policy as tables and plots show it: with its estimation settings unless they are the
// defaults (everything known).
std::string PolicyLabel(const std::string& policy, double profiling_percentage,
                        int num_reference_models);

struct Point {
  std::string cluster;
  std::string policy;
  std::uint64_t seed = 0;
  double jobs_per_hour = 0.0;  // the input rate (a trace: its mean rate × load_scale)
  double load_scale = 1.0;     // a trace's arrival-time compression; 1 for generated jobs
  double profiling_percentage = 1.0;
  int num_reference_models = 26;
  std::size_t window_start = 0;
  std::size_t window_end = 0;

  std::vector<std::string> Key() const;
  std::string Label() const;  // for progress lines and errors
};

using Row = std::map<std::string, std::string>;

// A row read back from the CSV, with the numbers the tables and the report use parsed once.
struct CsvRow {
  Row cells;
  double jobs_per_hour = 0.0;
  bool saturated = false;
  double profiling_percentage = 1.0;
  int num_reference_models = 26;
};

// Every row of `path` (none if it does not exist). A torn last line (a killed run) is dropped;
// a header that is an older version's (a prefix of SweepCsvColumns) is upgraded in place.
// Errors name the file, line and column.
Result<std::vector<CsvRow>> LoadCsv(const std::filesystem::path& path);

// points/<key>.csv under `dir`: the window jobs' JCTs and queueing delays and the utilisation
// timeline of one point, for the report's distributions.
std::filesystem::path PointFile(const std::filesystem::path& dir,
                                const std::vector<std::string>& key);
std::map<std::string, std::vector<double>> ReadPointFile(const std::filesystem::path& path);

// Runs one point; a run cut at the sweep's saturation bound is a row with saturated = 1.
Result<Row> RunPoint(const Point& point, const SweepOptions& options);

// Reports progress: a redrawn bar on a terminal, one plain line per point otherwise.
class Progress {
 public:
  Progress(std::ostream& out, bool bar);
  // A new batch of `total` points of which `skipped` were done before.
  void Start(std::size_t total, std::size_t skipped, const std::string& what);
  void Finished(const std::string& what);  // callers serialise calls
  void End();

 private:
  void Draw(const std::string& what);
  std::ostream& out_;
  bool bar_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  double start_seconds_ = 0.0;
};

// Runs `points` on the options' threads, appending each finished row to `csv` (flushed).
// Failures other than saturation are collected in `failures`; their rows are not written, so
// a rerun retries them.
void RunPoints(const std::vector<Point>& points, const SweepOptions& options, std::ostream& csv,
               Progress& progress, std::vector<Status>& failures);

// Opens `path` for appending, writing the header first when it is new or empty.
Status OpenCsvForAppend(const std::filesystem::path& path, std::ofstream& csv);

std::string JoinRow(const std::vector<std::string>& cells);
std::string RowLine(const Row& row);  // the row's cells in SweepCsvColumns order

}  // namespace gavel::cli
