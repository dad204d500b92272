// The sweep's statistics and outputs: the CSV's rows as the report part's observations
// (report/analysis.h), the table printed on stdout, and the files beside the CSV:
// summary.json, summary.csv (per cluster, rate, policy and metric: mean and 95% interval,
// rank and paired difference to the best) and report.html.
// Free functions; thread-compatible.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "gavel/cli/sweep_points.h"
#include "gavel/core/status.h"
#include "gavel/report/analysis.h"

namespace gavel::cli {

// The metrics a sweep reports, each in its meaningful direction. Restarts and wasted GPU time
// are ranked only with cluster physics on (without it every policy has zero); utilisation of
// a fixed workload is shown but never ranked (a slower schedule of the same work raises it):
// goodput is ranked instead.
std::vector<report::MetricSpec> SweepMetrics(bool physics);

// The analysis of `rows` (policies in the order given, then first-seen).
report::Analysis AnalyzeRows(const std::vector<CsvRow>& rows,
                             const std::vector<std::string>& policies, bool physics);

// Per cluster and rate: each policy's mean JCT and makespan with 95% intervals, seeds drained,
// the speed-up of each X_perf over X; then per metric the ranking (ties called) and the
// policies not ranked; then the capacities.
void PrintSweepTable(const report::Analysis& analysis, std::ostream& out);

struct SweepOutputs {
  std::filesystem::path report_html;
  std::filesystem::path summary_json;
  std::filesystem::path summary_csv;
};

// Writes the three files, reading each point's distributions from points/ under `dir`.
Status WriteSweepOutputs(const SweepOutputs& paths, const std::filesystem::path& dir,
                         const std::vector<CsvRow>& rows, const report::Analysis& analysis,
                         const std::vector<std::string>& setup);

}  // namespace gavel::cli
