#include "gavel/cli/sweep_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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
    s.json_path = "-";
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
    s.json_path = "-";
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

TEST_F(SweepTest, RankingsOrderEveryMetricByTheSeedMeansOfTheCsv) {
  SweepOptions o = Small();
  o.policies = "fifo,max_min_fairness_perf,themis";
  o.fairness = true;
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  // The expected order, recomputed here from the CSV's cells.
  // Saturated points (here the `isolated` reference run of seed 0 passes the time limit) are
  // left out of the means, as the rankings leave them out.
  std::map<std::string, std::map<std::string, double>> means;  // column -> policy -> mean
  std::map<std::string, int> finished;
  for (const auto& row : Rows()) {
    if (row.at("saturated") == "1") continue;
    ASSERT_FALSE(row.at("max_rho").empty());  // --fairness fills the rho columns
    ++finished[row.at("policy")];
    for (const char* column : {"average_jct_seconds", "max_rho", "utilization"}) {
      means[column][row.at("policy")] += std::stod(row.at(column));
    }
  }
  ASSERT_EQ(finished.size(), 3u);
  for (auto& [column, by_policy] : means) {
    for (auto& [policy, sum] : by_policy) sum /= finished[policy];
  }
  const auto order = [&](const char* column, bool higher_is_better) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const std::string policy : {"fifo", "max_min_fairness_perf", "themis"}) {
      ranked.emplace_back(means[column][policy], policy);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
      return higher_is_better ? a.first > b.first : a.first < b.first;
    });
    return ranked;
  };
  const std::string text = out.str();
  ASSERT_NE(text.find("Rankings, cluster 4:4:4, 1 jobs/h"), std::string::npos) << text;
  for (const auto& [column, label, higher] :
       {std::tuple{"average_jct_seconds", "average JCT", false},
        std::tuple{"max_rho", "max rho", false}, std::tuple{"utilization", "utilisation", true}}) {
    const std::size_t line_start = text.find(std::string("  ") + label + " ");
    ASSERT_NE(line_start, std::string::npos) << label;
    const std::string line = text.substr(line_start, text.find('\n', line_start) - line_start);
    const auto ranked = order(column, higher);
    // "1. first (...) > 2. second (...) > 3. third (...)", in that order.
    std::size_t at = 0;
    for (std::size_t k = 0; k < ranked.size(); ++k) {
      const std::string item = std::to_string(k + 1) + ". " + ranked[k].second + " (";
      const std::size_t found = line.find(item, at);
      ASSERT_NE(found, std::string::npos) << line << " lacks " << item;
      at = found;
    }
  }
  EXPECT_NE(text.find("  wins:"), std::string::npos);
  EXPECT_NE(Read(dir_ / "report.html").find("Rankings per metric"), std::string::npos);
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

TEST_F(SweepTest, ReportIsSelfContainedWithOneSvgPerPlot) {
  SweepOptions o = Small();
  o.seeds = "0";
  o.rates = {0.0, 1.0};  // a static run (makespan bars) and a dynamic one (JCT curve)
  std::ostringstream out, progress;
  ASSERT_TRUE(RunSweep(o, out, progress).ok()) << progress.str();
  const std::string html = Read(dir_ / "report.html");
  EXPECT_TRUE(WellFormed(html));
  std::size_t svgs = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++svgs;
  // JCT curve + makespan bars, and per rate: JCT CDF, queueing-delay CDF, utilisation.
  EXPECT_EQ(svgs, 2u + 2u * 3u);
  EXPECT_NE(html.find("JCT CDF"), std::string::npos);
  EXPECT_NE(html.find("Queueing delay CDF"), std::string::npos);
  EXPECT_NE(html.find("Utilisation over time"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("Makespan of static runs"), std::string::npos);
  EXPECT_NE(html.find("Average JCT vs input rate"), std::string::npos);
}

}  // namespace
}  // namespace gavel::cli
