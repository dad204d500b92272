// Runs the real `gavel` binary on snapshot files written to a scratch folder and checks the
// contract of `gavel allocate` (docs/formats.md): one JSON object on stdout, or a non-zero exit
// with a message on stderr and nothing on stdout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "gavel/policy/registry.h"

namespace gavel::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

const char* kDataFile = GAVEL_SOURCE_DIR "/data/simulation_throughputs.json";

class AllocateCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("gavel_allocate_test_" + std::to_string(::getpid()) + "_" + test->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  fs::path Write(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path;
  }

  // Runs `gavel <args>` in `cwd` (the scratch folder by default).
  Ran Gavel(const std::string& args, const fs::path& cwd = {}) const {
    const fs::path out = dir_ / "stdout.txt";
    const fs::path err = dir_ / "stderr.txt";
    const std::string command = "cd " + Quoted((cwd.empty() ? dir_ : cwd).string()) + " && " +
                                Quoted(GAVEL_BINARY) + " " + args + " >" + Quoted(out.string()) +
                                " 2>" + Quoted(err.string());
    const int status = std::system(command.c_str());
    Ran ran;
    ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    ran.out = ReadText(out);
    ran.err = ReadText(err);
    return ran;
  }

  Ran Allocate(const std::string& policy, const fs::path& snapshot,
               const std::string& extra = "") const {
    return Gavel("allocate --policy " + Quoted(policy) + " --snapshot " +
                 Quoted(snapshot.string()) + (extra.empty() ? "" : " " + extra));
  }

  // Expects success and returns the parsed stdout.
  static json ParsedOutput(const Ran& ran) {
    EXPECT_EQ(ran.exit_code, 0) << ran.err;
    EXPECT_EQ(ran.err, "");
    try {
      return json::parse(ran.out);
    } catch (const json::parse_error& e) {
      ADD_FAILURE() << "stdout is not JSON: " << e.what() << "\n" << ran.out;
      return json();
    }
  }

  static void ExpectFailure(const Ran& ran, const std::vector<std::string>& named) {
    EXPECT_NE(ran.exit_code, 0);
    EXPECT_EQ(ran.out, "") << "nothing on stdout when the input is bad";
    EXPECT_FALSE(ran.err.empty());
    for (const std::string& part : named) EXPECT_THAT(ran.err, HasSubstr(part));
  }

  fs::path dir_;
};

// The shape every successful output has (docs/formats.md).
void ExpectContractShape(const json& out, const std::string& policy,
                         const std::set<std::string>& job_ids,
                         const std::set<std::string>& gpu_types, bool packing) {
  ASSERT_TRUE(out.is_object());
  EXPECT_EQ(out.at("policy"), policy);
  ASSERT_TRUE(out.at("status").is_string());
  const std::string status = out.at("status");
  EXPECT_TRUE(status == "optimal" || status == "heuristic" || status == "fallback") << status;
  ASSERT_TRUE(out.at("solve_seconds").is_number());
  EXPECT_GE(out.at("solve_seconds").get<double>(), 0.0);
  ASSERT_TRUE(out.contains("objective"));
  EXPECT_TRUE(out.at("objective").is_number() || out.at("objective").is_null());
  if (status == "heuristic") {
    EXPECT_TRUE(out.at("objective").is_null());
  }
  const json& allocation = out.at("allocation");
  ASSERT_TRUE(allocation.is_object());
  std::set<std::string> seen_jobs;
  for (const auto& [id, row] : allocation.items()) {
    seen_jobs.insert(id);
    std::set<std::string> seen_types;
    for (const auto& [type, x] : row.items()) {
      seen_types.insert(type);
      ASSERT_TRUE(x.is_number()) << id << " " << type;
      EXPECT_GE(x.get<double>(), 0.0);
      EXPECT_LE(x.get<double>(), 1.0);
    }
    EXPECT_EQ(seen_types, gpu_types) << id;
  }
  EXPECT_EQ(seen_jobs, job_ids);
  EXPECT_EQ(out.contains("pairs"), packing);
  if (packing) {
    for (const auto& [key, row] : out.at("pairs").items()) {
      const auto plus = key.find('+');
      ASSERT_NE(plus, std::string::npos) << key;
      EXPECT_TRUE(job_ids.contains(key.substr(0, plus))) << key;
      EXPECT_TRUE(job_ids.contains(key.substr(plus + 1))) << key;
      EXPECT_FALSE(row.empty()) << "a pair listed with no time: " << key;
      for (const auto& [type, x] : row.items()) {
        EXPECT_TRUE(gpu_types.contains(type)) << key << " " << type;
        EXPECT_GT(x.get<double>(), 0.0) << "only non-zero entries: " << key << " " << type;
        EXPECT_LE(x.get<double>(), 1.0);
      }
    }
  }
  if (out.contains("note")) {
    EXPECT_TRUE(out.at("note").is_string());
  }
}

TEST_F(AllocateCommandTest, TheExampleSnapshotGivesTheContractsJson) {
  const std::string example = std::string(GAVEL_SOURCE_DIR) + "/examples/snapshot.json";
  const Ran ran = Allocate("max_min_fairness_perf", example);
  const json out = ParsedOutput(ran);
  ExpectContractShape(out, "max_min_fairness_perf", {"0", "1", "2", "3", "4", "5", "6", "7"},
                      {"k80", "p100", "v100"}, /*packing=*/false);
  EXPECT_EQ(out.at("status"), "optimal");
  EXPECT_TRUE(out.at("objective").is_number());
  ASSERT_FALSE(ran.out.empty());
  EXPECT_EQ(ran.out.back(), '\n');
  EXPECT_EQ(ran.out.find('\n'), ran.out.size() - 1) << "one JSON object on one line";
}

// Types k80 and v100, one GPU each; job 7 runs at 1 and 4 steps/s, job 9 at 2 and 1.
// prop_7 = 2.5, prop_9 = 1.5; job 9's normalised throughput (2 x_k80 + x_v100)/1.5 is at most
// 4/3, reached only with all of the k80; job 7 then needs x_v100 >= 5/6 to reach 4/3 too.
// So the optimum is 4/3 with job 9 on the k80 and job 7 only on the v100.
TEST_F(AllocateCommandTest, PerJobThroughputsNeedNoTableAndGiveTheHandWorkedOptimum) {
  const fs::path snapshot = Write("hand.json", R"j({
      "cluster": {"v100": 1, "k80": 1},
      "jobs": [{"id": "7", "scale_factor": 1, "throughputs": {"k80": 1.0, "v100": 4.0}},
               {"id": 9, "scale_factor": 1, "throughputs": {"k80": 2.0, "v100": 1.0}}]})j");
  const json out = ParsedOutput(Allocate("max_min_fairness_perf", snapshot));
  ExpectContractShape(out, "max_min_fairness_perf", {"7", "9"}, {"k80", "v100"}, false);
  EXPECT_NEAR(out.at("objective").get<double>(), 4.0 / 3.0, 1e-7);
  EXPECT_NEAR(out.at("allocation").at("9").at("k80").get<double>(), 1.0, 1e-7);
  EXPECT_NEAR(out.at("allocation").at("9").at("v100").get<double>(), 0.0, 1e-7);
  EXPECT_NEAR(out.at("allocation").at("7").at("k80").get<double>(), 0.0, 1e-7);
  EXPECT_GE(out.at("allocation").at("7").at("v100").get<double>(), 5.0 / 6.0 - 1e-7);
}

// A3C (job 0) and CycleGAN (job 1) on one v100, from the shipped table (read here directly).
// With one type prop = the job's throughput alone, so the normalised throughputs are
// N_0 = x_0 + a p and N_1 = x_1 + c p, a and c the fractions of their alone speed each keeps
// when sharing (a < c), with x_0 + x_1 + p <= 1. The optimum is x_1 = 0, p = 1/(1 − a + c),
// x_0 = (c − a)/(1 − a + c), level c/(1 − a + c): the dual y = (c, 1 − a)/(1 − a + c) on the
// two level rows and z = y_0 on capacity is feasible (y_1 <= z since 1 − a <= c) and has the
// same value.
TEST_F(AllocateCommandTest, PackedPoliciesListTheirPairs) {
  const fs::path snapshot = Write("packed.json", std::string(R"j({
      "cluster": {"v100": 1},
      "throughputs_file": ")j") + kDataFile + R"j(",
      "jobs": [{"id": 0, "job_type": "A3C", "scale_factor": 1},
               {"id": 1, "job_type": "CycleGAN", "scale_factor": 1}]})j");
  const json table = json::parse(ReadText(kDataFile));
  const json& a3c = table.at("v100").at("('A3C', 1)");
  const json& cyclegan = table.at("v100").at("('CycleGAN', 1)");
  const double a = a3c.at("('CycleGAN', 1)")[0].get<double>() / a3c.at("null").get<double>();
  const double c = a3c.at("('CycleGAN', 1)")[1].get<double>() / cyclegan.at("null").get<double>();
  ASSERT_LT(a, c);
  ASSERT_LE(1.0 - a, c);

  const json out = ParsedOutput(Allocate("max_min_fairness_packed", snapshot));
  ExpectContractShape(out, "max_min_fairness_packed", {"0", "1"}, {"v100"}, /*packing=*/true);
  EXPECT_NEAR(out.at("objective").get<double>(), c / (1.0 - a + c), 1e-6);
  ASSERT_TRUE(out.at("pairs").contains("0+1"));
  EXPECT_NEAR(out.at("pairs").at("0+1").at("v100").get<double>(), 1.0 / (1.0 - a + c), 1e-6);
  EXPECT_NEAR(out.at("allocation").at("0").at("v100").get<double>(), (c - a) / (1.0 - a + c), 1e-6);
  EXPECT_NEAR(out.at("allocation").at("1").at("v100").get<double>(), 0.0, 1e-6);

  // The same snapshot under a policy without space sharing has no `pairs` at all.
  const json unpacked = ParsedOutput(Allocate("max_min_fairness_perf", snapshot));
  ExpectContractShape(unpacked, "max_min_fairness_perf", {"0", "1"}, {"v100"}, false);
}

TEST_F(AllocateCommandTest, PairsWithNoTimeAreLeftOut) {
  // CycleGAN and ResNet-50 bs128 cannot share any GPU ([0, 0] everywhere in the table), and
  // with two v100s each job has one to itself: the unique optimum is level 1, no sharing.
  const fs::path snapshot = Write("no_pairs.json", R"j({
      "cluster": {"v100": 2},
      "jobs": [{"id": 0, "job_type": "CycleGAN", "scale_factor": 1},
               {"id": 1, "job_type": "ResNet-50 (batch size 128)", "scale_factor": 1}]})j");
  const json out = ParsedOutput(Allocate("max_min_fairness_packed", snapshot));
  ExpectContractShape(out, "max_min_fairness_packed", {"0", "1"}, {"v100"}, true);
  EXPECT_NEAR(out.at("objective").get<double>(), 1.0, 1e-7);
  EXPECT_TRUE(out.at("pairs").empty()) << out.dump();

  // --compat gavel offers the useless pair too (as the original does) and solves to a central
  // point, which may leave round-off on it; never real time.
  const json compat = ParsedOutput(Allocate("max_min_fairness_packed", snapshot, "--compat gavel"));
  ExpectContractShape(compat, "max_min_fairness_packed", {"0", "1"}, {"v100"}, true);
  EXPECT_NEAR(compat.at("objective").get<double>(), 1.0, 1e-6);
  for (const auto& [key, row] : compat.at("pairs").items()) {
    for (const auto& [type, x] : row.items()) EXPECT_LT(x.get<double>(), 1e-6) << key;
  }
}

// The shipped table cut down to the given job-type keys: the same numbers in a fraction of the
// size, so that each of the many runs below loads quickly.
json SubsetOfShippedTable(const std::set<std::string>& keys) {
  const json full = json::parse(ReadText(kDataFile));
  json subset = json::object();
  for (const char* type : {"k80", "p100", "v100"}) {
    for (const std::string& key : keys) {
      const json& entries = full.at(type).at(key);
      json kept = json::object();
      for (const auto& [partner, value] : entries.items()) {
        if (partner == "null" || keys.contains(partner)) kept[partner] = value;
      }
      subset[type][key] = kept;
    }
  }
  return subset;
}

TEST_F(AllocateCommandTest, EveryPolicyAnswersTheExampleInBothModes) {
  json example = json::parse(ReadText(std::string(GAVEL_SOURCE_DIR) + "/examples/snapshot.json"));
  std::set<std::string> keys;
  for (const json& job : example.at("jobs")) {
    keys.insert("('" + job.at("job_type").get<std::string>() + "', " +
                std::to_string(job.at("scale_factor").get<int>()) + ")");
  }
  Write("subset.json", SubsetOfShippedTable(keys).dump());
  example["throughputs_file"] = "subset.json";
  const fs::path snapshot = Write("example.json", example.dump());
  for (const policy::PolicyInfo& info : policy::AllPolicies()) {
    // AlloX takes single-GPU jobs only; the example has a 2- and a 4-GPU job.
    if (info.name == "allox") continue;
    for (const bool compat : {false, true}) {
      SCOPED_TRACE(std::string(info.name) + (compat ? " --compat gavel" : ""));
      const Ran ran = Allocate(std::string(info.name), snapshot, compat ? "--compat gavel" : "");
      if (compat && info.capabilities.packing && ran.exit_code != 0) {
        // The example mixes scale factors, where the original's packed per-job constraint
        // cannot be formed (docs/differences.md, P4); compat says so instead of answering.
        ExpectFailure(ran, {"compat"});
        continue;
      }
      ExpectContractShape(ParsedOutput(ran), std::string(info.name),
                          {"0", "1", "2", "3", "4", "5", "6", "7"}, {"k80", "p100", "v100"},
                          info.capabilities.packing);
    }
  }
}

TEST_F(AllocateCommandTest, AlloxRefusesMultiGpuJobsCleanly) {
  const std::string example = std::string(GAVEL_SOURCE_DIR) + "/examples/snapshot.json";
  ExpectFailure(Allocate("allox", example), {});
}

TEST_F(AllocateCommandTest, CompatMustBeGavel) {
  const fs::path snapshot = Write("s.json", R"j({"cluster": {"v100": 1},
      "jobs": [{"id": 0, "job_type": "A3C", "scale_factor": 1}]})j");
  const json out = ParsedOutput(Allocate("max_min_fairness", snapshot, "--compat gavel"));
  ExpectContractShape(out, "max_min_fairness", {"0"}, {"v100"}, false);
  ExpectFailure(Allocate("max_min_fairness", snapshot, "--compat python"), {"compat"});
}

// --solver clp forces the whole LP on Clp; the default takes the fast path. Both reach the
// same optimum, and the output says which was asked for.
TEST_F(AllocateCommandTest, SolverClpGivesTheSameOptimumAsTheFastPath) {
  const std::string example = std::string(GAVEL_SOURCE_DIR) + "/examples/snapshot.json";
  for (const std::string policy : {"max_min_fairness_perf", "finish_time_fairness_perf",
                                   "max_min_fairness_water_filling_perf",
                                   "min_total_duration_perf", "max_sum_throughput_perf"}) {
    SCOPED_TRACE(policy);
    const json fast = ParsedOutput(Allocate(policy, example));
    const json general = ParsedOutput(Allocate(policy, example, "--solver clp"));
    EXPECT_EQ(fast.at("solver"), "auto");
    EXPECT_EQ(general.at("solver"), "clp");
    EXPECT_FALSE(fast.contains("note")) << fast.at("note");
    const double optimum = general.at("objective").get<double>();
    EXPECT_NEAR(fast.at("objective").get<double>(), optimum, 1e-6 * std::max(1.0, optimum));
  }
  ExpectFailure(Allocate("max_min_fairness_perf", example, "--solver glpk"), {"solver"});
}

TEST_F(AllocateCommandTest, AnUnknownPolicyIsNamed) {
  const fs::path snapshot = Write("s.json", R"j({"cluster": {"v100": 1},
      "jobs": [{"id": 0, "job_type": "A3C", "scale_factor": 1}]})j");
  ExpectFailure(Allocate("max_min_fairness_prf", snapshot), {"max_min_fairness_prf"});
}

TEST_F(AllocateCommandTest, AnUnknownJobTypeIsNamedWithItsJob) {
  const fs::path snapshot = Write("s.json", R"j({"cluster": {"v100": 1},
      "jobs": [{"id": 0, "job_type": "A3C", "scale_factor": 1},
               {"id": 12, "job_type": "GPT-5 (batch size 1)", "scale_factor": 1}]})j");
  ExpectFailure(Allocate("max_min_fairness_perf", snapshot),
                {"GPT-5 (batch size 1)", "job 12", snapshot.string()});
}

TEST_F(AllocateCommandTest, MalformedSnapshotsNameTheFileAndProblem) {
  const fs::path broken = Write("broken.json", R"j({"cluster": {"v100": 1}, "jobs": [)j");
  ExpectFailure(Allocate("max_min_fairness_perf", broken), {broken.string(), "JSON"});
  const fs::path no_cluster = Write("no_cluster.json", R"j({"jobs": []})j");
  ExpectFailure(Allocate("max_min_fairness_perf", no_cluster), {no_cluster.string(), "cluster"});
  const fs::path bad_sf = Write("bad_sf.json", R"j({"cluster": {"v100": 1},
      "jobs": [{"id": 3, "job_type": "A3C", "scale_factor": 0}]})j");
  ExpectFailure(Allocate("max_min_fairness_perf", bad_sf), {bad_sf.string(), "scale_factor"});
  ExpectFailure(Allocate("max_min_fairness_perf", dir_ / "missing.json"),
                {(dir_ / "missing.json").string()});
}

TEST_F(AllocateCommandTest, APolicysMissingInputIsNamed) {
  const fs::path snapshot = Write("s.json", R"j({"cluster": {"v100": 1},
      "jobs": [{"id": 4, "job_type": "A3C", "scale_factor": 1}]})j");
  ExpectFailure(Allocate("min_total_duration_perf", snapshot), {"job 4", "steps_remaining"});
  ExpectFailure(Allocate("max_sum_throughput_normalized_by_cost_perf", snapshot),
                {"instance_costs"});
}

TEST_F(AllocateCommandTest, ARelativeThroughputsFileIsFoundBesideTheSnapshotFirst) {
  // A one-job table whose only model is unknown to the shipped table.
  const std::string table = R"j({"v100": {"('Mine', 1)": {"null": 3.0}}})j";
  const std::string snapshot_text = R"j({"cluster": {"v100": 1},
      "throughputs_file": "mine.json",
      "jobs": [{"id": 0, "job_type": "Mine", "scale_factor": 1}]})j";
  Write("snapshots/mine.json", table);
  const fs::path snapshot = Write("snapshots/s.json", snapshot_text);
  fs::create_directories(dir_ / "elsewhere");
  const Ran beside =
      Gavel("allocate --policy max_min_fairness_perf --snapshot " + Quoted(snapshot.string()),
            dir_ / "elsewhere");
  ExpectContractShape(ParsedOutput(beside), "max_min_fairness_perf", {"0"}, {"v100"}, false);

  // Not beside the snapshot: the working directory's.
  const fs::path lone = Write("lone/s.json", snapshot_text);
  Write("cwd/mine.json", table);
  const Ran from_cwd = Gavel(
      "allocate --policy max_min_fairness_perf --snapshot " + Quoted(lone.string()), dir_ / "cwd");
  ExpectContractShape(ParsedOutput(from_cwd), "max_min_fairness_perf", {"0"}, {"v100"}, false);

  // In neither: an error naming the file.
  const Ran nowhere =
      Gavel("allocate --policy max_min_fairness_perf --snapshot " + Quoted(lone.string()),
            dir_ / "elsewhere");
  ExpectFailure(nowhere, {"mine.json"});
}

TEST_F(AllocateCommandTest, WithoutAThroughputsFileTheShippedSimulationTableIsUsed) {
  // The A3C + CycleGAN case above, whose optimum c/(1 − a + c) depends on the jobs' speeds
  // alone, which differ between the two shipped tables.
  const auto expected_level = [](const std::string& table_path) {
    const json table = json::parse(ReadText(table_path));
    const json& a3c = table.at("v100").at("('A3C', 1)");
    const json& cyclegan = table.at("v100").at("('CycleGAN', 1)");
    const double a = a3c.at("('CycleGAN', 1)")[0].get<double>() / a3c.at("null").get<double>();
    const double c = a3c.at("('CycleGAN', 1)")[1].get<double>() / cyclegan.at("null").get<double>();
    return c / (1.0 - a + c);
  };
  const std::string physical =
      std::string(GAVEL_SOURCE_DIR) + "/data/physical_cluster_throughputs.json";
  ASSERT_GT(std::abs(expected_level(kDataFile) - expected_level(physical)), 1e-3);
  const std::string jobs = R"j("jobs": [{"id": 0, "job_type": "A3C", "scale_factor": 1},
                                         {"id": 1, "job_type": "CycleGAN", "scale_factor": 1}]})j";

  const fs::path implicit = Write("implicit.json", R"j({"cluster": {"v100": 1}, )j" + jobs);
  const json out = ParsedOutput(Allocate("max_min_fairness_packed", implicit));
  EXPECT_NEAR(out.at("objective").get<double>(), expected_level(kDataFile), 1e-6);

  const fs::path explicit_physical =
      Write("physical.json",
            R"j({"cluster": {"v100": 1}, "throughputs_file": ")j" + physical + "\", " + jobs);
  const json physical_out = ParsedOutput(Allocate("max_min_fairness_packed", explicit_physical));
  EXPECT_NEAR(physical_out.at("objective").get<double>(), expected_level(physical), 1e-6);
}

TEST_F(AllocateCommandTest, PoliciesListsEveryRegistryName) {
  const Ran ran = Gavel("policies");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  std::set<std::string> listed;
  std::istringstream lines(ran.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    listed.insert(line.substr(0, line.find(' ')));
  }
  std::set<std::string> registered;
  for (const policy::PolicyInfo& info : policy::AllPolicies()) {
    registered.insert(std::string(info.name));
  }
  EXPECT_EQ(listed, registered);
}

TEST_F(AllocateCommandTest, MissingArgumentsAreUsageErrors) {
  EXPECT_NE(Gavel("allocate --policy max_min_fairness").exit_code, 0);
  EXPECT_NE(Gavel("").exit_code, 0);
}

}  // namespace
}  // namespace gavel::cli
