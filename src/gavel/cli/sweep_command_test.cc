#include "gavel/cli/sweep_command.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gavel/cli/simulate_command.h"

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at the end of the test.
class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gavel_sweep_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Small and quick: 12 GPUs, 6 window jobs.
  SweepOptions Small() const {
    SweepOptions o;
    o.clusters = {"4:4:4"};
    o.policies = "fifo,max_min_fairness_perf";
    o.seeds = "0,1";
    o.rates = {1.0};
    o.window_start = 2;
    o.window_end = 8;
    o.threads = 2;
    o.out_dir = dir_.string();
    return o;
  }

  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The CSV as maps from column to cell, in file order.
  std::vector<std::map<std::string, std::string>> Rows() const {
    std::istringstream in(Read(dir_ / "sweep.csv"));
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header;
    {
      std::istringstream cells(line);
      std::string cell;
      while (std::getline(cells, cell, ',')) header.push_back(cell);
    }
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
      std::istringstream cells(line);
      std::string cell;
      std::map<std::string, std::string> row;
      for (std::size_t i = 0; std::getline(cells, cell, ','); ++i) row[header.at(i)] = cell;
      rows.push_back(row);
    }
    return rows;
  }

  fs::path dir_;
};

TEST(RateLinspaceTest, DropsZeroLikeTheOriginal) {
  EXPECT_EQ(RateLinspace(0.0, 4.0, 5), (std::vector<double>{1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(RateLinspace(2.0, 2.0, 1), (std::vector<double>{2.0}));
}

TEST(SaturationLimitTest, IsTheStretchedArrivalSpanPlusSlack) {
  // 10 jobs at 2 jobs/hour arrive over 5 hours = 18000 s.
  EXPECT_DOUBLE_EQ(SaturationLimitSeconds(2.0, 10, 2.0, 100.0), 2.0 * 18000.0 + 100.0);
  EXPECT_DOUBLE_EQ(SaturationLimitSeconds(0.0, 10, 2.0, 100.0), 0.0);  // static: no limit
}

TEST_F(SweepTest, EachPointEqualsADirectSimulateRun) {
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(Small(), out, progress).ok()) << progress.str();
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    SimulateOptions s;
    s.cluster = "4:4:4";
    s.policy = row.at("policy");
    s.seed = std::stoull(row.at("seed"));
    s.jobs_per_hour = 1.0;
    s.window_start = 2;
    s.window_end = 8;
    s.json_path = std::string(1, '-');  // GCC 12 -Wrestrict misfires on = "-" here
    std::ostringstream json;
    ASSERT_TRUE(RunSimulate(s, json).ok());
    const nlohmann::json direct = nlohmann::json::parse(json.str());
    EXPECT_EQ(row.at("saturated"), "0");
    // The CSV keeps 12 significant digits.
    const double jct = direct["average_jct_seconds"].get<double>();
    const double makespan = direct["makespan_seconds"].get<double>();
    EXPECT_NEAR(std::stod(row.at("average_jct_seconds")), jct, 1e-10 * jct);
    EXPECT_NEAR(std::stod(row.at("makespan_seconds")), makespan, 1e-10 * makespan);
    EXPECT_EQ(std::stod(row.at("rounds")), direct["rounds"].get<double>());
    EXPECT_EQ(row.at("window_jobs_completed"), "6");
  }
  // Plain progress lines (no terminal): one per point, no carriage returns.
  EXPECT_EQ(progress.str().find('\r'), std::string::npos);
  EXPECT_NE(progress.str().find("[4/4]"), std::string::npos);
  EXPECT_NE(out.str().find("max_min_fairness"), std::string::npos);
}

// --utility and --elastic-fraction reach every point as `gavel simulate` takes them, and the
// CSV carries the run's total utility and rejections (oasis admits; fifo rejects nobody).
TEST_F(SweepTest, UtilityAndElasticJobsReachEveryPointLikeSimulate) {
  SweepOptions o = Small();
  o.policies = "oasis,fifo";
  o.seeds = "0";
  o.utility = "sigmoid";
  o.elastic_fraction = 0.5;
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    SimulateOptions s;
    s.cluster = "4:4:4";
    s.policy = row.at("policy");
    s.seed = 0;
    s.jobs_per_hour = 1.0;
    s.window_start = 2;
    s.window_end = 8;
    s.utility = "sigmoid";
    s.elastic_fraction = 0.5;
    s.json_path = std::string(1, '-');  // GCC 12 -Wrestrict misfires on = "-" here
    std::ostringstream json;
    ASSERT_TRUE(RunSimulate(s, json).ok());
    const nlohmann::json direct = nlohmann::json::parse(json.str());
    ASSERT_TRUE(direct.contains("total_utility")) << json.str();
    const double utility = direct["total_utility"].get<double>();
    EXPECT_NEAR(std::stod(row.at("total_utility")), utility, 1e-10 * std::max(1.0, utility));
    EXPECT_EQ(std::stod(row.at("jobs_rejected")), direct["jobs_rejected"].get<double>());
    if (row.at("policy") == "fifo") {
      EXPECT_EQ(row.at("jobs_rejected"), "0");
    }
  }
  EXPECT_NE(out.str().find("total utility"), std::string::npos) << out.str();
}

TEST_F(SweepTest, RankingsOrderEveryMetricByThePairedMeansOfTheCsv) {
  SweepOptions o = Small();
  o.policies = "fifo,max_min_fairness_perf,themis";
  o.fairness = true;
  // Static: at 1 job/h the `isolated` reference run of --fairness passes the saturation bound
  // on seed 0 and so takes every policy out of the ranking there.
  o.rates = {0.0};
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  // The expected order, recomputed here from the CSV's cells: only policies that drained
  // every seed are ranked, on their means over those seeds.
  std::map<std::string, std::map<std::string, double>> means;  // column -> policy -> mean
  std::map<std::string, int> drained, ran;
  for (const auto& row : Rows()) {
    ++ran[row.at("policy")];
    if (row.at("saturated") == "1") continue;
    ASSERT_FALSE(row.at("max_rho").empty());  // --fairness fills the rho columns
    ++drained[row.at("policy")];
    for (const char* column : {"average_jct_seconds", "max_rho", "goodput_jobs_per_hour"}) {
      means[column][row.at("policy")] += std::stod(row.at(column));
    }
  }
  std::vector<std::string> ranked_policies;
  for (const std::string policy : {"fifo", "max_min_fairness_perf", "themis"}) {
    if (drained[policy] == ran[policy]) ranked_policies.push_back(policy);
  }
  ASSERT_GE(ranked_policies.size(), 2u) << out.str();
  const auto order = [&](const char* column, bool higher_is_better) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const std::string& policy : ranked_policies) {
      ranked.emplace_back(means[column][policy] / drained[policy], policy);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
      return higher_is_better ? a.first > b.first : a.first < b.first;
    });
    return ranked;
  };
  const std::string text = out.str();
  ASSERT_NE(text.find("Rankings, cluster 4:4:4, static"), std::string::npos) << text;
  for (const auto& [column, label, higher] :
       {std::tuple{"average_jct_seconds", "average JCT", false},
        std::tuple{"max_rho", "max rho", false},
        std::tuple{"goodput_jobs_per_hour", "goodput", true}}) {
    const std::size_t line_start = text.find(std::string("  ") + label + " ");
    ASSERT_NE(line_start, std::string::npos) << label;
    const std::string line = text.substr(line_start, text.find('\n', line_start) - line_start);
    const auto ranked = order(column, higher);
    // "1. first (...) = 1. second (...) > 3. third (...)": names in mean order.
    std::size_t at = 0;
    for (std::size_t k = 0; k < ranked.size(); ++k) {
      const std::size_t found = line.find(". " + ranked[k].second + " (", at);
      ASSERT_NE(found, std::string::npos) << line << " lacks " << ranked[k].second;
      at = found;
    }
  }
  // Utilisation of a fixed workload is no goal: shown, never ranked.
  EXPECT_EQ(text.find("  utilisation "), std::string::npos) << text;
  const std::string html = Read(dir_ / "report.html");
  EXPECT_NE(html.find("<table class=\"ranking\">"), std::string::npos);
  EXPECT_EQ(html.find("<pre>"), std::string::npos);  // rankings are tables, not preformatted
}

// One policy drains seed 0 but not seed 1 (its row says saturated): it is reported so at that
// rate and left out of every ranking, however good its one finished seed looks.
TEST_F(SweepTest, APolicyThatDrainsOneSeedButNotTheOtherIsNotRanked) {
  SweepOptions o = Small();
  o.policies = "fifo,max_min_fairness_perf,gandiva";
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  // Mark gandiva's seed-1 row saturated, as a run cut at the bound writes it, and give its
  // seed-0 row the best JCT of all: unpaired means would rank it first.
  std::string csv = Read(dir_ / "sweep.csv");
  std::istringstream in(csv);
  std::string line, rewritten;
  std::getline(in, line);
  rewritten = line + "\n";
  std::vector<std::string> header;
  {
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) header.push_back(cell);
  }
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
    cells.resize(header.size());
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < header.size(); ++i) at[header[i]] = i;
    if (cells[at["policy"]] == "gandiva" && cells[at["seed"]] == "1") {
      for (std::size_t i = 9; i < cells.size(); ++i) cells[i] = "";
      cells[at["saturated"]] = "1";
      cells[at["outcome"]] = "saturated";
      cells[at["load_scale"]] = "1";
    }
    if (cells[at["policy"]] == "gandiva" && cells[at["seed"]] == "0") {
      cells[at["average_jct_seconds"]] = "1";
    }
    std::string joined;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) joined += ',';
      joined += cells[i];
    }
    rewritten += joined + "\n";
  }
  std::ofstream(dir_ / "sweep.csv", std::ios::trunc) << rewritten;
  std::ostringstream out2, progress2;
  ASSERT_TRUE(RunSweep(o, out2, progress2).ok()) << progress2.str();
  const std::string text = out2.str();
  EXPECT_NE(text.find("not ranked: gandiva (saturated, 1/2 seeds drained)"), std::string::npos)
      << text;
  const std::size_t jct_line = text.find("  average JCT ");
  ASSERT_NE(jct_line, std::string::npos) << text;
  EXPECT_EQ(text.substr(jct_line, text.find('\n', jct_line) - jct_line).find("gandiva"),
            std::string::npos);
  const nlohmann::json summary = nlohmann::json::parse(Read(dir_ / "summary.json"));
  bool found = false;
  for (const auto& policy : summary["clusters"][0]["rates"][0]["policies"]) {
    if (policy["policy"] != "gandiva") continue;
    found = true;
    EXPECT_EQ(policy["outcome"], "saturated");
    EXPECT_EQ(policy["seeds"], nlohmann::json({0, 1}));
    EXPECT_EQ(policy["drained_seeds"], nlohmann::json::array({0}));
    EXPECT_FALSE(policy["metrics"]["average_jct_seconds"].contains("rank"));
  }
  EXPECT_TRUE(found);
  EXPECT_NE(Read(dir_ / "report.html").find("gandiva: saturated (1/2 seeds drained)"),
            std::string::npos);
}

// summary.json's intervals, recomputed by hand from the CSV: mean and Student-t half-width
// with the tabled t_{0.975,2} = 4.303 for three seeds.
TEST_F(SweepTest, SummaryJsonCarriesSeedMeansAndStudentTIntervals) {
  SweepOptions o = Small();
  o.policies = "max_min_fairness_perf";
  o.seeds = "0,1,2";
  o.rates = {0.0};
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  std::vector<double> jct;
  for (const auto& row : Rows()) jct.push_back(std::stod(row.at("average_jct_seconds")));
  ASSERT_EQ(jct.size(), 3u);
  const double mean = (jct[0] + jct[1] + jct[2]) / 3.0;
  double squares = 0.0;
  for (const double v : jct) squares += (v - mean) * (v - mean);
  const double half = 4.303 * std::sqrt(squares / 2.0) / std::sqrt(3.0);
  const nlohmann::json summary = nlohmann::json::parse(Read(dir_ / "summary.json"));
  const auto& policy = summary["clusters"][0]["rates"][0]["policies"][0];
  EXPECT_EQ(policy["seeds"], nlohmann::json({0, 1, 2}));
  EXPECT_EQ(policy["drained_seeds"], nlohmann::json({0, 1, 2}));
  const auto& metric = policy["metrics"]["average_jct_seconds"];
  EXPECT_EQ(metric["n"], 3);
  EXPECT_NEAR(metric["mean"].get<double>(), mean, 1e-9 * mean);
  EXPECT_NEAR(metric["ci95"].get<double>(), half, 1e-3 * half);
  // The same numbers in summary.csv.
  const std::string csv = Read(dir_ / "summary.csv");
  EXPECT_NE(csv.find("4:4:4,0,max_min_fairness_perf,3,3,drained,average_jct_seconds,3,"),
            std::string::npos)
      << csv;
}

TEST_F(SweepTest, RerunSkipsFinishedPoints) {
  SweepOptions first = Small();
  first.seeds = "0";
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(first, out, progress).ok());
  // Mark the finished rows; a rerun that recomputed them would not keep the mark.
  std::string csv = Read(dir_ / "sweep.csv");
  ASSERT_EQ(Rows().size(), 2u);
  const std::string marked = Rows()[0].at("wall_seconds");
  {
    const std::size_t at = csv.rfind("," + marked);
    ASSERT_NE(at, std::string::npos);
    csv.replace(at, marked.size() + 1, ",424242");
    std::ofstream(dir_ / "sweep.csv", std::ios::trunc) << csv;
  }
  std::ostringstream progress2;
  ASSERT_TRUE(RunSweep(Small(), out, progress2).ok());
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 4u);  // two old, two new (seed 1); nothing duplicated
  int marks = 0;
  for (const auto& row : rows) marks += row.at("wall_seconds") == "424242" ? 1 : 0;
  EXPECT_EQ(marks, 1);
  EXPECT_NE(progress2.str().find("2 of 4 points already done"), std::string::npos);
}

// A CSV written before the columns after jobs_rejected existed is upgraded in place and
// resumed: its points are not run again, and its rows gain the new cells.
TEST_F(SweepTest, AnOlderVersionsCsvIsUpgradedAndResumed) {
  SweepOptions o = Small();
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  // Cut every line after its 30th cell, as the previous version wrote it.
  std::istringstream in(Read(dir_ / "sweep.csv"));
  std::string old_csv;
  for (std::string line; std::getline(in, line);) {
    std::size_t at = 0;
    for (int cells = 0; cells < 30 && at != std::string::npos; ++cells) {
      at = line.find(',', at == 0 ? 0 : at + 1);
    }
    old_csv += line.substr(0, at) + "\n";
  }
  ASSERT_EQ(old_csv.substr(0, old_csv.find('\n')).substr(old_csv.find("jobs_rejected")),
            "jobs_rejected");
  std::ofstream(dir_ / "sweep.csv", std::ios::trunc) << old_csv;
  std::ostringstream out2, progress2;
  ASSERT_TRUE(RunSweep(o, out2, progress2).ok()) << progress2.str();
  EXPECT_NE(progress2.str().find("4 of 4 points already done"), std::string::npos)
      << progress2.str();
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.count("outcome"), 1u);
    EXPECT_EQ(row.at("outcome"), row.at("saturated") == "1" ? "saturated" : "drained");
    EXPECT_EQ(row.at("load_scale"), "1");
  }
}

TEST_F(SweepTest, OverloadedPointIsCutAndMarkedSaturated) {
  SweepOptions o = Small();
  o.policies = "fifo";
  o.seeds = "0";
  // The limit becomes 0.01 × 8 h = 288 s: before the first round (360 s) ends.
  o.saturation_factor = 0.01;
  o.saturation_slack_seconds = 0.0;
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("saturated"), "1");
  EXPECT_EQ(rows[0].at("average_jct_seconds"), "");
  EXPECT_NE(out.str().find("saturated"), std::string::npos);
}

TEST_F(SweepTest, UnknownPolicyFailsBeforeAnyWork) {
  SweepOptions o = Small();
  o.policies = "fifo,no_such_policy";
  std::ostringstream out, progress;
  const Status status = RunSweep(o, out, progress);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no_such_policy"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "sweep.csv"));
}

TEST_F(SweepTest, SeedsAndRatesOutsideTheirBoundsFailBeforeAnyWork) {
  // Regression: stoull took "-1" and wrapped it to 2^64-1.
  const std::vector<std::pair<std::string, std::string>> seeds = {
      {"-1", "--seeds"}, {"4294967296", "--seeds"}, {"0,x", "--seeds"}, {"", "--seeds"}};
  for (const auto& [text, flag] : seeds) {
    SweepOptions o = Small();
    o.seeds = text;
    std::ostringstream out, progress;
    const Status status = RunSweep(o, out, progress);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find(flag), std::string::npos) << status.message();
  }
  SweepOptions o = Small();
  o.rates = {2e6};
  std::ostringstream out, progress;
  const Status status = RunSweep(o, out, progress);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--rates"), std::string::npos) << status.message();
  EXPECT_FALSE(fs::exists(dir_ / "sweep.csv"));
}

TEST_F(SweepTest, ADamagedResumeFileIsAnErrorNamingTheLineNotACrash) {
  SweepOptions o = Small();
  o.policies = "fifo";
  o.seeds = "0";
  o.rates = {0.0};
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const std::string original = Read(dir_ / "sweep.csv");
  // Rewrites the one row with each column in `changes` set to its value, runs the sweep again
  // (it reads the file back to resume and to build the report), and returns what it said.
  const auto resume_with = [&](const std::map<std::string, std::string>& changes) {
    std::istringstream in(original);
    std::string header, row;
    std::getline(in, header);
    std::getline(in, row);
    const auto columns = static_cast<std::size_t>(std::count(header.begin(), header.end(), ','));
    std::vector<std::string> cells;
    std::istringstream row_in(row);
    for (std::string cell; std::getline(row_in, cell, ',');) cells.push_back(cell);
    cells.resize(columns + 1);
    std::size_t changed = 0;
    std::istringstream names(header);
    std::size_t index = 0;
    for (std::string name; std::getline(names, name, ','); ++index) {
      if (const auto it = changes.find(name); it != changes.end()) {
        cells[index] = it->second;
        ++changed;
      }
    }
    EXPECT_EQ(changed, changes.size());
    std::string damaged;
    for (std::size_t i = 0; i < cells.size(); ++i) damaged += (i ? "," : "") + cells[i];
    std::ofstream(dir_ / "sweep.csv") << header << "\n" << damaged << "\n";
    return RunSweep(o, out, progress);
  };
  // std::stod threw on each of these.
  Status status = resume_with({{"jobs_per_hour", "abc"}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("sweep.csv:2: jobs_per_hour"), std::string::npos)
      << status.message();
  // Empty is allowed only on a saturated row; this one finished (saturated = 0).
  status = resume_with({{"average_jct_seconds", ""}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("sweep.csv:2: average_jct_seconds: `` is not a number"),
            std::string::npos)
      << status.message();
  status = resume_with({{"makespan_seconds", ""}});
  EXPECT_NE(status.message().find("sweep.csv:2: makespan_seconds"), std::string::npos)
      << status.message();
  // A saturated row may leave both empty (and the table then says so).
  out.str("");
  status = resume_with({{"saturated", "1"}, {"average_jct_seconds", ""}, {"makespan_seconds", ""}});
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_NE(out.str().find("saturated"), std::string::npos) << out.str();
}

TEST_F(SweepTest, TerminalProgressRedrawsOneBarLine) {
  SweepOptions o = Small();
  o.policies = "fifo";
  o.progress_bar = true;
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok());
  const std::string text = progress.str();
  EXPECT_NE(text.find("\r"), std::string::npos);
  EXPECT_NE(text.find("2/2"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');  // the shell prompt starts on a clean line
  EXPECT_EQ(text.find("sweep: ["), std::string::npos);
}

// Every opened tag is closed in order (void and self-closing tags aside).
bool WellFormed(const std::string& html) {
  std::vector<std::string> stack;
  for (std::size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at + 1)) {
    const std::size_t end = html.find('>', at);
    if (end == std::string::npos) return false;
    const std::string tag = html.substr(at + 1, end - at - 1);
    if (tag.empty() || tag[0] == '!' || tag.back() == '/') continue;
    const bool closing = tag[0] == '/';
    const std::string name =
        tag.substr(closing ? 1 : 0, tag.find_first_of(" >") - (closing ? 1 : 0));
    if (name == "meta") continue;
    if (!closing) {
      stack.push_back(name);
    } else {
      if (stack.empty() || stack.back() != name) return false;
      stack.pop_back();
    }
  }
  return stack.empty();
}

TEST_F(SweepTest, ReportDecidesFirstThenShowsTheEvidence) {
  SweepOptions o = Small();
  o.seeds = "0";
  o.rates = {0.0, 1.0};  // a static run (makespans) and a dynamic one (JCT against load)
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const std::string html = Read(dir_ / "report.html");
  EXPECT_TRUE(WellFormed(html));
  const std::size_t decision = html.find(": decision</h2>");
  const std::size_t evidence = html.find(": evidence</h2>");
  ASSERT_NE(decision, std::string::npos);
  ASSERT_NE(evidence, std::string::npos);
  EXPECT_LT(decision, evidence);
  EXPECT_LT(decision, html.find("<svg"));
  for (const char* part : {"Average JCT against load", "Makespan of the static runs",
                           "JCT distribution", "Queueing delay distribution",
                           "Busy GPUs over time"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  // Small multiples: one utilisation panel per policy and rate, each its own chart.
  std::size_t panels = 0;
  for (std::size_t at = html.find("<h4>Busy GPUs"); at != std::string::npos;
       at = html.find("<h4>Busy GPUs", at + 1)) {
    ++panels;
  }
  EXPECT_EQ(panels, 2u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

// Every policy of a chart gets its own style, and every tick label is a round number.
TEST_F(SweepTest, ReportSeriesStylesMatchThePoliciesAndTicksAreRound) {
  SweepOptions o = Small();
  o.policies = "fifo,max_min_fairness_perf,gandiva,tetris,finish_time_fairness,allox";
  o.seeds = "0";
  o.rates = {0.5, 1.0};
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const std::string html = Read(dir_ / "report.html");
  // The JCT-against-load chart: its legend names each policy once, each in a style of its own.
  const std::size_t chart = html.find("Average JCT against load");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  std::set<std::string> styles;
  std::size_t legends = 0;
  for (std::size_t at = svg.find("class=\"legend\" data-style=\""); at != std::string::npos;
       at = svg.find("class=\"legend\" data-style=\"", at + 1)) {
    const std::size_t begin = at + std::string("class=\"legend\" data-style=\"").size();
    styles.insert(svg.substr(begin, svg.find('"', begin) - begin));
    ++legends;
  }
  EXPECT_EQ(legends, 6u);
  EXPECT_EQ(styles.size(), 6u);
  // Tick labels: short, and multiples of a 1, 2 or 5 step (no "798.012163122").
  std::size_t ticks = 0;
  for (std::size_t at = html.find("class=\"tick\""); at != std::string::npos;
       at = html.find("class=\"tick\"", at + 1)) {
    const std::size_t begin = html.find('>', at) + 1;
    const std::string label = html.substr(begin, html.find('<', begin) - begin);
    ++ticks;
    EXPECT_LE(label.size(), 6u) << label;
    const std::size_t dot = label.find('.');
    EXPECT_LE(dot == std::string::npos ? 0 : label.size() - dot - 1, 3u) << label;
  }
  EXPECT_GT(ticks, 20u);
}

// A trace in a public format (Helios), swept over load: seeds draw the job types the trace
// leaves open, and each load scale's rate is the trace's mean rate times the scale.
TEST_F(SweepTest, APublicTraceIsSweptOverLoadWithSeedsDrawingJobTypes) {
  const fs::path trace = dir_.parent_path() / "gavel_sweep_test_helios.csv";
  {
    std::ofstream file(trace);
    file << "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
            "duration,queue\n";
    for (int i = 0; i < 10; ++i) {
      const int minute = 30 * i;  // one job every 30 minutes: 2 jobs/h over 4.5 hours
      char submit[32];
      std::snprintf(submit, sizeof submit, "2020-06-09 %02d:%02d:00", 8 + minute / 60,
                    minute % 60);
      file << 1000 + i << ",u" << i << ",vc,1,4,1,COMPLETED," << submit << "," << submit
           << "," << submit << "," << 1800 + 600 * (i % 4) << ",0\n";
    }
  }
  SweepOptions o = Small();
  o.policies = "fifo,max_min_fairness_perf";
  o.seeds = "0,1,2";
  o.rates.clear();
  o.window_start = 0;
  o.window_end.reset();
  o.trace_file = trace.string();
  o.trace_format = "helios";
  o.load_scales = {1.0, 2.0};
  std::ostringstream out, progress;
  const Status status = RunSweep(o, out, progress);
  fs::remove(trace);
  ASSERT_TRUE(status.ok()) << status.message() << progress.str();
  const std::string name = "sweep-trace-gavel_sweep_test_helios.csv";
  ASSERT_TRUE(fs::exists(dir_ / name));
  fs::rename(dir_ / name, dir_ / "sweep.csv");
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 2u * 3u * 2u);
  std::set<std::string> jct_by_seed;
  std::map<std::pair<std::string, double>, double> makespan;  // (policy + seed, scale) -> s
  for (const auto& row : rows) {
    makespan[{row.at("policy") + row.at("seed"), std::stod(row.at("load_scale"))}] =
        std::stod(row.at("makespan_seconds"));
    const double scale = std::stod(row.at("load_scale"));
    EXPECT_NEAR(std::stod(row.at("jobs_per_hour")), 2.0 * scale, 1e-9) << row.at("load_scale");
    EXPECT_EQ(row.at("window_end"), "10");
    if (row.at("policy") == "fifo" && scale == 1.0) jct_by_seed.insert(row.at("average_jct_seconds"));
  }
  EXPECT_GT(jct_by_seed.size(), 1u);  // the seeds drew different job types
  // Twice the load: the same jobs arrive in half the time (4.5 h -> 2.25 h), so they finish
  // sooner.
  for (const auto& [key, seconds] : makespan) {
    if (key.second == 2.0) {
      EXPECT_LT(seconds, makespan.at({key.first, 1.0})) << key.first;
    }
  }
  EXPECT_NE(out.str().find("Rankings, cluster 4:4:4, 4 jobs/h"), std::string::npos) << out.str();
}

// --find-capacity's bisection against a brute-force scan of the same points: every scanned
// rate at or below the reported capacity drains on every seed, every one at or above the
// failing rate does not, and the two are within the stated precision.
TEST_F(SweepTest, FindCapacityAgreesWithABruteForceScan) {
  SweepOptions o = Small();
  o.policies = "fifo";
  o.seeds = "0,1";
  o.rates.clear();
  o.window_start = 0;
  o.window_end = 6;
  // No slack: a run saturates once it takes twice its arrival span, so capacity is finite.
  o.saturation_slack_seconds = 0.0;
  o.find_capacity = true;
  o.capacity_precision = 0.05;
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const nlohmann::json summary = nlohmann::json::parse(Read(dir_ / "summary.json"));
  const auto& capacity = summary["clusters"][0]["capacity"][0];
  ASSERT_TRUE(capacity["sustainable_jobs_per_hour"].is_number()) << summary.dump(2);
  ASSERT_TRUE(capacity["failing_jobs_per_hour"].is_number()) << summary.dump(2);
  const double sustainable = capacity["sustainable_jobs_per_hour"].get<double>();
  const double failing = capacity["failing_jobs_per_hour"].get<double>();
  EXPECT_LE(failing, 1.05 * sustainable * (1 + 1e-6));
  EXPECT_NE(out.str().find("Sustainable load, cluster 4:4:4"), std::string::npos);
  // The scan: 16 rates from sustainable / 4 to failing × 4, geometric, in a second directory.
  SweepOptions scan = o;
  scan.find_capacity = false;
  scan.out_dir = (dir_ / "scan").string();
  for (int k = 0; k < 16; ++k) scan.rates.push_back(sustainable / 4.0 * std::pow(16.0 * failing / sustainable, k / 15.0));
  std::ostringstream scan_out, scan_progress;
  ASSERT_TRUE(RunSweep(scan, scan_out, scan_progress).ok()) << scan_progress.str();
  std::map<double, bool> drains;  // rate -> drained on every seed
  std::istringstream in(Read(dir_ / "scan" / "sweep.csv"));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
    const double rate = std::stod(cells.at(5));
    const bool drained = cells.at(8) == "0";
    drains[rate] = drains.contains(rate) ? drains[rate] && drained : drained;
  }
  ASSERT_EQ(drains.size(), 16u);
  for (const auto& [rate, drained] : drains) {
    if (rate <= sustainable) {
      EXPECT_TRUE(drained) << rate;
    }
    if (rate >= failing) {
      EXPECT_FALSE(drained) << rate;
    }
  }
}

// A policy that cannot run the workload at all (AlloX and multi-GPU jobs) ends its capacity
// search with the reason; the other policies' searches still finish.
TEST_F(SweepTest, FindCapacityReportsAPolicyThatCannotRunTheWorkload) {
  SweepOptions o = Small();
  o.clusters = {"8:8:8"};  // room for the 8-GPU jobs of -m
  o.policies = "fifo,allox";
  o.seeds = "0";
  o.rates.clear();
  o.multi_gpu = true;
  o.saturation_slack_seconds = 0.0;
  o.find_capacity = true;
  o.capacity_precision = 0.2;
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const nlohmann::json summary = nlohmann::json::parse(Read(dir_ / "summary.json"));
  const auto& capacity = summary["clusters"][0]["capacity"];
  ASSERT_EQ(capacity.size(), 2u);
  EXPECT_TRUE(capacity[0]["sustainable_jobs_per_hour"].is_number()) << capacity.dump(2);
  EXPECT_TRUE(capacity[1]["sustainable_jobs_per_hour"].is_null());
  EXPECT_NE(capacity[1]["note"].get<std::string>().find("allox"), std::string::npos)
      << capacity.dump(2);
}

// Every option of `simulate` that shapes the cluster, the workload or the physics is one of
// sweep's too, with the same names: all but the run-control and output options below.
TEST(SweepCommandLineTest, TakesEverySimulateOptionThatShapesTheRun) {
  CLI::App app;
  SimulateOptions simulate;
  SweepCommandLine sweep;
  CLI::App* simulate_cmd = AddSimulateCommand(app, &simulate);
  CLI::App* sweep_cmd = AddSweepCommand(app, &sweep);
  // One run's arrival rate (sweep: --rates), its limits, and where its results go.
  const std::set<std::string> run_only = {"--lam", "--jobs-per-hour", "--time-limit",
                                          "--saturation-limit", "--progress", "--json",
                                          "--jobs-csv", "--help"};
  std::size_t shared = 0;
  for (const CLI::Option* option : simulate_cmd->get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (run_only.contains("--" + name)) continue;
      EXPECT_NE(sweep_cmd->get_option_no_throw("--" + name), nullptr) << "--" << name;
      ++shared;
    }
  }
  EXPECT_GE(shared, 35u);
  // And they mean the same: parsed into the same fields.
  app.parse(std::string("sweep --out /tmp/x -p fifo --num-gpus-per-server 4:4:4 --realistic -m"),
            false);
  EXPECT_EQ(sweep.options.gpus_per_server, "4:4:4");
  EXPECT_TRUE(sweep.options.physics.realistic);
  EXPECT_TRUE(sweep.options.multi_gpu);
}

}  // namespace
}  // namespace gavel::cli
