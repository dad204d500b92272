#include "gavel/cli/sweep_report.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "gavel/cli/display_text.h"
#include "gavel/core/parse_number.h"
#include "gavel/report/html_report.h"

namespace gavel::cli {
namespace {

using report::Direction;

Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  if (!file.good()) return Status::IoError(path.string() + ": cannot write");
  return Status::Ok();
}

std::string Cell(const std::optional<double>& value) {
  return value ? FormatNumber(*value) : std::string();
}

// summary.csv: one row per cluster, rate, policy and metric.
std::string SummaryCsv(const report::Analysis& a) {
  std::ostringstream csv;
  csv << "cluster,jobs_per_hour,policy,seeds,drained_seeds,outcome,metric,n,mean,ci95,rank,"
         "tied_with_best,difference_to_best,difference_ci95\n";
  for (const report::PointAnalysis& p : a.points) {
    for (const std::string& policy : a.policies) {
      const auto it = p.policies.find(policy);
      if (it == p.policies.end()) continue;
      const report::PolicyAtPoint& cell = it->second;
      for (const report::MetricSpec& metric : a.metrics) {
        const auto m = cell.metrics.find(metric.column);
        if (m == cell.metrics.end()) continue;
        csv << p.cluster << "," << FormatNumber(p.rate) << "," << policy << ","
            << cell.seeds.size() << "," << cell.drained_seeds.size() << ","
            << report::OutcomeName(cell.outcome) << "," << metric.column << "," << m->second.n
            << "," << FormatNumber(m->second.mean) << "," << Cell(m->second.half_width);
        const report::RankEntry* ranked = nullptr;
        if (const report::Ranking* ranking = p.RankingOf(metric.column)) {
          for (const report::RankEntry& e : ranking->entries) {
            if (e.policy == policy) ranked = &e;
          }
        }
        if (ranked != nullptr) {
          csv << "," << ranked->rank << "," << (ranked->tied_with_best ? 1 : 0) << ","
              << FormatNumber(ranked->versus_best.mean) << ","
              << Cell(ranked->versus_best.half_width) << "\n";
        } else {
          csv << ",,,,\n";
        }
      }
    }
  }
  return csv.str();
}

std::string WithInterval(const report::Interval& interval, const report::MetricSpec& metric) {
  std::string text = report::FormatValue(interval.mean, metric);
  if (interval.half_width) text += " ± " + report::FormatValue(*interval.half_width, metric);
  return text;
}

// A UTF-8 "±" takes two bytes but one column: pad by what the eye sees.
std::string PadRight(const std::string& text, std::size_t width) {
  std::size_t columns = 0;
  for (const char c : text) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return text + std::string(columns < width ? width - columns : 1, ' ');
}

}  // namespace

std::vector<report::MetricSpec> SweepMetrics(bool physics) {
  const Direction physics_direction = physics ? Direction::kLowerIsBetter : Direction::kNotRanked;
  return {
      {"average_jct_seconds", "average JCT", Direction::kLowerIsBetter, 3600.0, "h"},
      {"jct_p99_seconds", "p99 JCT", Direction::kLowerIsBetter, 3600.0, "h"},
      {"makespan_seconds", "makespan", Direction::kLowerIsBetter, 3600.0, "h"},
      {"max_rho", "max rho", Direction::kLowerIsBetter, 1.0, ""},
      {"mean_rho", "mean rho", Direction::kLowerIsBetter, 1.0, ""},
      {"total_utility", "total utility", Direction::kHigherIsBetter, 1.0, ""},
      {"goodput_jobs_per_hour", "goodput", Direction::kHigherIsBetter, 1.0, "jobs/h"},
      {"queueing_delay_p50_seconds", "queueing delay p50", Direction::kLowerIsBetter, 3600.0, "h"},
      {"queueing_delay_p90_seconds", "queueing delay p90", Direction::kLowerIsBetter, 3600.0, "h"},
      {"restarts", "restarts", physics_direction, 1.0, ""},
      {"wasted_gpu_seconds", "wasted GPU time", physics_direction, 3600.0, "GPU-h"},
      {"utilization", "utilisation", Direction::kNotRanked, 1.0, ""},
      {"jct_p50_seconds", "median JCT", Direction::kNotRanked, 3600.0, "h"},
  };
}

report::Analysis AnalyzeRows(const std::vector<CsvRow>& rows,
                             const std::vector<std::string>& policies, bool physics) {
  const std::vector<report::MetricSpec> metrics = SweepMetrics(physics);
  std::vector<report::Observation> observations;
  for (const CsvRow& row : rows) {
    report::Observation o;
    o.cluster = row.cells.at("cluster");
    o.policy = PolicyLabel(row.cells.at("policy"), row.profiling_percentage,
                           row.num_reference_models);
    o.rate = row.jobs_per_hour;
    o.seed = ParseUint64(row.cells.at("seed")).value_or(0);
    const std::string& outcome = row.cells.at("outcome");
    o.outcome = outcome == "starved"     ? report::Outcome::kStarved
                : outcome == "saturated" ? report::Outcome::kSaturated
                                         : report::Outcome::kDrained;
    if (row.saturated) o.outcome = report::Outcome::kSaturated;
    for (const report::MetricSpec& metric : metrics) {
      if (const std::optional<double> value = ParseFiniteDouble(row.cells.at(metric.column))) {
        o.metrics[metric.column] = *value;
      }
    }
    observations.push_back(std::move(o));
  }
  return report::Analyze(observations, policies, metrics);
}

void PrintSweepTable(const report::Analysis& a, std::ostream& out) {
  const std::vector<report::MetricSpec>& metrics = a.metrics;
  const report::MetricSpec& jct = metrics[0];
  const report::MetricSpec& makespan = metrics[2];
  out << std::left << std::setw(12) << "cluster" << std::setw(10) << "jobs/h" << std::setw(34)
      << "policy" << std::setw(18) << "JCT (h, 95% CI)" << std::setw(18) << "makespan (h)"
      << std::setw(8) << "seeds" << "speed-up\n";
  for (const report::PointAnalysis& p : a.points) {
    for (const std::string& policy : a.policies) {
      const auto it = p.policies.find(policy);
      if (it == p.policies.end()) continue;
      const report::PolicyAtPoint& cell = it->second;
      out << std::left << std::setw(12) << EscapeForDisplay(p.cluster) << std::setw(10)
          << (p.rate > 0.0 ? FormatNumber(p.rate) : std::string("static")) << std::setw(34)
          << policy;
      if (cell.outcome == report::Outcome::kDrained && cell.metrics.contains(jct.column)) {
        out << PadRight(WithInterval(cell.metrics.at(jct.column), jct), 18)
            << PadRight(WithInterval(cell.metrics.at(makespan.column), makespan), 18);
      } else {
        out << std::setw(18) << report::OutcomeName(cell.outcome) << std::setw(18) << "-";
      }
      out << std::setw(8)
          << (std::to_string(cell.drained_seeds.size()) + "/" + std::to_string(cell.seeds.size()));
      // The heterogeneity-aware speed-up: JCT of the agnostic policy / JCT of its _perf twin.
      const std::string suffix = "_perf";
      if (policy.size() > suffix.size() &&
          policy.compare(policy.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const auto base = p.policies.find(policy.substr(0, policy.size() - suffix.size()));
        if (base != p.policies.end() && base->second.outcome == report::Outcome::kDrained &&
            cell.outcome == report::Outcome::kDrained && cell.metrics.contains(jct.column) &&
            base->second.metrics.contains(jct.column)) {
          std::ostringstream s;
          s << std::fixed << std::setprecision(2)
            << base->second.metrics.at(jct.column).mean / cell.metrics.at(jct.column).mean << "x";
          out << s.str();
        }
      }
      out << "\n";
    }
  }
  for (const report::PointAnalysis& p : a.points) {
    if (p.rankings.empty()) continue;
    std::string seeds;
    for (const std::uint64_t seed : p.rankings.front().seeds) {
      if (!seeds.empty()) seeds += ',';
      seeds += std::to_string(seed);
    }
    out << "Rankings, cluster " << EscapeForDisplay(p.cluster) << ", "
        << report::RateLabel(p.rate) << " (best first; paired on seeds " << seeds
        << "; rank = 1 + policies significantly better; '=' same rank):\n";
    std::map<std::string, std::vector<std::string>> wins;
    for (const report::MetricSpec& metric : metrics) {
      const report::Ranking* ranking = p.RankingOf(metric.column);
      if (ranking == nullptr) continue;
      out << "  " << std::left << std::setw(20) << metric.label;
      for (std::size_t k = 0; k < ranking->entries.size(); ++k) {
        const report::RankEntry& e = ranking->entries[k];
        out << (k == 0 ? "" : e.rank == ranking->entries[k - 1].rank ? " = " : " > ") << e.rank
            << ". " << e.policy
            << " (" << report::FormatValue(e.mean, metric)
            << (metric.unit.empty() ? "" : " " + metric.unit);
        if (k > 0) {
          out << "; " << (e.versus_best.mean >= 0.0 ? "+" : "")
              << report::FormatValue(e.versus_best.mean, metric);
          if (e.versus_best.half_width) {
            out << " ± " << report::FormatValue(*e.versus_best.half_width, metric);
          }
        }
        out << ")";
      }
      // A metric is won only where someone is significantly behind the best.
      if (!ranking->entries.back().tied_with_best) {
        for (const report::RankEntry& e : ranking->entries) {
          if (e.tied_with_best) wins[e.policy].push_back(metric.label);
        }
      }
      out << "\n";
    }
    std::string unranked;
    for (const std::string& policy : a.policies) {
      const auto it = p.policies.find(policy);
      if (it == p.policies.end() || it->second.outcome == report::Outcome::kDrained) continue;
      unranked += " " + policy + " (" + report::OutcomeName(it->second.outcome) + ", " +
                  std::to_string(it->second.drained_seeds.size()) + "/" +
                  std::to_string(it->second.seeds.size()) + " seeds drained)";
    }
    if (!unranked.empty()) out << "  not ranked:" << unranked << "\n";
    out << "  wins (best or tied with it, ahead of someone significantly):";
    for (const std::string& policy : a.policies) {
      const auto w = wins.find(policy);
      if (w == wins.end()) continue;
      out << " " << policy << " (";
      for (std::size_t k = 0; k < w->second.size(); ++k) out << (k ? ", " : "") << w->second[k];
      out << ")";
    }
    out << "\n";
  }
  for (const std::string& cluster : a.clusters()) {
    bool header = false;
    for (const report::Capacity& c : a.capacities) {
      if (c.cluster != cluster) continue;
      if (!header) {
        out << "Sustainable load, cluster " << EscapeForDisplay(cluster)
            << " (highest rate drained on every seed):\n";
        header = true;
      }
      out << "  " << std::left << std::setw(34) << c.policy
          << (c.sustainable ? FormatNumber(*c.sustainable) + " jobs/h" : std::string("-"));
      if (c.failing) out << " (fails at " << FormatNumber(*c.failing) << ")";
      if (!c.note.empty()) out << " [" << c.note << "]";
      out << "\n";
    }
  }
}

Status WriteSweepOutputs(const SweepOutputs& paths, const std::filesystem::path& dir,
                         const std::vector<CsvRow>& rows, const report::Analysis& analysis,
                         const std::vector<std::string>& setup) {
  report::ReportInput input;
  input.setup = setup;
  input.analysis = &analysis;
  for (const CsvRow& row : rows) {
    std::vector<std::string> key;
    for (std::size_t i = 0; i < kSweepKeyColumns; ++i) key.push_back(row.cells.at(SweepCsvColumns()[i]));
    auto lines = ReadPointFile(PointFile(dir, key));
    const std::string policy = PolicyLabel(row.cells.at("policy"), row.profiling_percentage,
                                           row.num_reference_models);
    report::PointDistributions& d = input.distributions[{row.cells.at("cluster"), row.jobs_per_hour}];
    std::vector<double>& jct = d.jct_seconds[policy];
    jct.insert(jct.end(), lines["jct_seconds"].begin(), lines["jct_seconds"].end());
    std::vector<double>& delay = d.queueing_delay_seconds[policy];
    delay.insert(delay.end(), lines["queueing_delay_seconds"].begin(),
                 lines["queueing_delay_seconds"].end());
    const std::vector<double>& u = lines["utilization"];
    if (u.size() > 1 && !d.utilization.contains(policy)) {
      d.utilization_bucket_seconds = u.front();
      d.utilization[policy].assign(u.begin() + 1, u.end());
    }
  }
  input.raw_columns = SweepCsvColumns();
  for (const CsvRow& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& column : SweepCsvColumns()) cells.push_back(row.cells.at(column));
    input.raw_rows.push_back(std::move(cells));
  }
  GAVEL_RETURN_IF_ERROR(WriteFile(paths.report_html, report::RenderHtmlReport(input)));
  GAVEL_RETURN_IF_ERROR(WriteFile(paths.summary_json, report::SummaryJson(analysis)));
  return WriteFile(paths.summary_csv, SummaryCsv(analysis));
}

}  // namespace gavel::cli
