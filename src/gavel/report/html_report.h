// The sweep report: one self-contained HTML page that first decides (per objective the best
// policy, its margin over the runner-up and whether it is significant; each policy's
// sustainable load) and then shows the evidence: JCT against load with confidence bands, a
// Pareto view of JCT against fairness (or tail JCT), static makespans, sustainable loads,
// JCT distributions, utilisation timelines as small multiples, per-point rankings as HTML
// tables and every simulated point.
//
// Rendering only: the numbers come from an Analysis (analysis.h) and the caller's
// distributions; nothing here reads files or runs simulations. Thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gavel/report/analysis.h"

namespace gavel::report {

// The per-job distributions of one (cluster, rate), per policy (seeds pooled) and the
// utilisation timeline of each policy's first seed.
struct PointDistributions {
  std::map<std::string, std::vector<double>> jct_seconds;
  std::map<std::string, std::vector<double>> queueing_delay_seconds;
  std::map<std::string, std::vector<double>> utilization;
  double utilization_bucket_seconds = 3600.0;
};

struct ReportInput {
  std::string title = "Gavel sweep report";
  std::vector<std::string> setup;  // lines describing the workload, cluster and physics
  const Analysis* analysis = nullptr;
  std::map<std::pair<std::string, double>, PointDistributions> distributions;  // (cluster, rate)
  std::vector<std::string> raw_columns;  // every simulated point, as the CSV has it
  std::vector<std::vector<std::string>> raw_rows;
};

std::string RenderHtmlReport(const ReportInput& input);

// "1.5 jobs/h" or "static".
std::string RateLabel(double rate);

}  // namespace gavel::report
