#include "gavel/core/snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace gavel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

std::string ExamplePath() { return std::string(GAVEL_SOURCE_DIR) + "/examples/snapshot.json"; }

Result<ClusterSnapshot> ParseJson(const json& j, const std::string& base_dir = "") {
  return ParseSnapshot(j.dump(), "snap.json", base_dir);
}

json Minimal() {
  return json::parse(R"j({"cluster": {"v100": 2},
                         "jobs": [{"id": "3", "scale_factor": 1, "job_type": "A3C"}]})j");
}

TEST(SnapshotTest, TheShippedExampleParses) {
  const auto snapshot = LoadSnapshotFile(ExamplePath());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  ASSERT_EQ(snapshot->gpu_types.size(), 3u);
  const char* names[] = {"k80", "p100", "v100"};  // sorted, whatever the file's order
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(snapshot->gpu_types[t].name, names[t]);
    EXPECT_EQ(snapshot->gpu_types[t].count, 4);
    EXPECT_EQ(snapshot->gpu_types[t].gpus_per_server, 4);
  }
  EXPECT_EQ(snapshot->instance_costs,
            (std::map<std::string, double>{{"k80", 0.45}, {"p100", 1.46}, {"v100", 2.48}}));
  EXPECT_EQ(snapshot->entity_weights,
            (std::map<std::string, double>{{"team-a", 2.0}, {"team-b", 1.0}}));
  // "../data/simulation_throughputs.json" exists relative to examples/, so it resolves there.
  EXPECT_TRUE(fs::equivalent(snapshot->throughputs_file,
                             std::string(GAVEL_SOURCE_DIR) + "/data/simulation_throughputs.json"));
  ASSERT_EQ(snapshot->jobs.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(snapshot->jobs[i].id, JobId(i));
  const JobSpec& resnet = snapshot->jobs[0];
  EXPECT_EQ(resnet.job_type, "ResNet-50 (batch size 64)");
  EXPECT_EQ(resnet.scale_factor, 1);
  EXPECT_EQ(resnet.steps_remaining, 120000.0);
  EXPECT_EQ(resnet.time_since_start, Seconds(3600.0));
  EXPECT_EQ(resnet.entity, "team-a");
  EXPECT_EQ(resnet.priority_weight, 1.0);
  EXPECT_FALSE(resnet.slo_time_left.has_value());
  EXPECT_TRUE(resnet.throughputs.empty());
  EXPECT_EQ(snapshot->jobs[5].priority_weight, 2.0);
  EXPECT_EQ(snapshot->jobs[7].scale_factor, 4);
  EXPECT_EQ(snapshot->jobs[2].scale_factor, 2);
}

TEST(SnapshotTest, OptionalFieldsTakeTheOriginalsDefaults) {
  const auto snapshot = ParseJson(Minimal());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  ASSERT_EQ(snapshot->gpu_types.size(), 1u);
  EXPECT_EQ(snapshot->gpu_types[0].name, "v100");
  EXPECT_EQ(snapshot->gpu_types[0].count, 2);
  EXPECT_EQ(snapshot->gpu_types[0].gpus_per_server, 1);  // the original's 1:1:1
  EXPECT_TRUE(snapshot->instance_costs.empty());
  EXPECT_TRUE(snapshot->entity_weights.empty());
  EXPECT_TRUE(snapshot->throughputs_file.empty());  // = the shipped table
  ASSERT_EQ(snapshot->jobs.size(), 1u);
  const JobSpec& job = snapshot->jobs[0];
  EXPECT_EQ(job.id, JobId(3));
  EXPECT_EQ(job.priority_weight, 1.0);
  EXPECT_FALSE(job.steps_remaining.has_value());
  EXPECT_EQ(job.time_since_start, Seconds(0.0));
  EXPECT_FALSE(job.slo_time_left.has_value());
  EXPECT_EQ(job.entity, "");
  EXPECT_TRUE(job.throughputs.empty());
  EXPECT_FALSE(DefaultThroughputsFile().empty());
  EXPECT_TRUE(fs::exists(DefaultThroughputsFile()));
}

TEST(SnapshotTest, EveryFieldIsReadWithItsUnit) {
  json j = Minimal();
  j["jobs"][0] = json::parse(R"j({"id": 12, "job_type": "LM (batch size 20)", "scale_factor": 2,
      "priority_weight": 5.0, "steps_remaining": 1234.5, "time_since_start": 60.25,
      "slo": 7200.0, "entity": "team-a", "throughputs": {"v100": 10.5, "k80": 0},
      "total_steps": 5000, "command": "python3 main.py"})j");
  const auto snapshot = ParseJson(j);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  const JobSpec& job = snapshot->jobs.at(0);
  EXPECT_EQ(job.id, JobId(12));
  EXPECT_EQ(job.job_type, "LM (batch size 20)");
  EXPECT_EQ(job.scale_factor, 2);
  EXPECT_EQ(job.priority_weight, 5.0);
  EXPECT_EQ(job.steps_remaining, 1234.5);
  EXPECT_EQ(job.time_since_start, Seconds(60.25));
  EXPECT_EQ(job.slo_time_left, Seconds(7200.0));  // seconds until the deadline
  EXPECT_EQ(job.entity, "team-a");
  EXPECT_EQ(job.throughputs, (std::map<std::string, double>{{"k80", 0.0}, {"v100", 10.5}}));
}

TEST(SnapshotTest, NullMeansAbsentForOptionalJobFields) {
  json j = Minimal();
  j["jobs"][0]["slo"] = nullptr;
  j["jobs"][0]["steps_remaining"] = nullptr;
  j["jobs"][0]["entity"] = nullptr;
  j["jobs"][0]["throughputs"] = nullptr;
  j["throughputs_file"] = nullptr;
  const auto snapshot = ParseJson(j);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  EXPECT_FALSE(snapshot->jobs[0].slo_time_left.has_value());
  EXPECT_FALSE(snapshot->jobs[0].steps_remaining.has_value());
  EXPECT_TRUE(snapshot->throughputs_file.empty());
}

TEST(SnapshotTest, JobsAreSortedByNumericIdWhetherGivenAsStringsOrNumbers) {
  json j = Minimal();
  j["jobs"] = json::parse(R"j([{"id": "10", "scale_factor": 1, "job_type": "A3C"},
                             {"id": 9, "scale_factor": 1, "job_type": "A3C"},
                             {"id": "0", "scale_factor": 1, "job_type": "A3C"},
                             {"id": 100, "scale_factor": 1, "job_type": "A3C"}])j");
  const auto snapshot = ParseJson(j);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  std::vector<JobId> ids;
  for (const JobSpec& job : snapshot->jobs) ids.push_back(job.id);
  // Numeric, not lexicographic ("10" < "9" as text).
  EXPECT_EQ(ids, (std::vector<JobId>{JobId(0), JobId(9), JobId(10), JobId(100)}));
}

TEST(SnapshotTest, GpuTypesWithNoGpusAreDropped) {
  json j = Minimal();
  j["cluster"] = json::parse(R"j({"v100": 2, "k80": 0, "p100": 3})j");
  j["gpus_per_server"] = json::parse(R"j({"k80": 4, "p100": 3})j");
  const auto snapshot = ParseJson(j);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  ASSERT_EQ(snapshot->gpu_types.size(), 2u);
  EXPECT_EQ(snapshot->gpu_types[0].name, "p100");
  EXPECT_EQ(snapshot->gpu_types[0].count, 3);
  EXPECT_EQ(snapshot->gpu_types[0].gpus_per_server, 3);
  EXPECT_EQ(snapshot->gpu_types[1].name, "v100");
  EXPECT_EQ(snapshot->gpu_types[1].gpus_per_server, 1);
}

TEST(SnapshotTest, AnEmptyJobListIsAValidSnapshot) {
  json j = Minimal();
  j["jobs"] = json::array();
  const auto snapshot = ParseJson(j);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  EXPECT_TRUE(snapshot->jobs.empty());
}

// A unique scratch folder for the throughputs_file resolution tests, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    // Unique per process and test: ctest may run the tests of this binary in parallel.
    path_ = fs::temp_directory_path() /
            ("gavel_snapshot_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  void Write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << text;
  }

 private:
  fs::path path_;
};

TEST(SnapshotTest, RelativeThroughputsFileResolvesAgainstTheSnapshotFolderFirst) {
  ScratchDir dir;
  dir.Write("tables/mine.json", "{}");
  json j = Minimal();
  j["throughputs_file"] = "tables/mine.json";
  dir.Write("snap.json", j.dump());
  const auto snapshot = LoadSnapshotFile((dir.path() / "snap.json").string());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  EXPECT_TRUE(fs::equivalent(snapshot->throughputs_file, dir.path() / "tables/mine.json"));
}

TEST(SnapshotTest, RelativeThroughputsFileMissingBesideTheSnapshotIsLeftForTheWorkingDir) {
  ScratchDir dir;
  json j = Minimal();
  j["throughputs_file"] = "data/simulation_throughputs.json";
  dir.Write("snap.json", j.dump());
  const auto snapshot = LoadSnapshotFile((dir.path() / "snap.json").string());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  // Not in the snapshot's folder: kept relative, so it is opened from the working directory.
  EXPECT_EQ(snapshot->throughputs_file, "data/simulation_throughputs.json");
}

TEST(SnapshotTest, AbsoluteThroughputsFileIsKept) {
  json j = Minimal();
  j["throughputs_file"] = "/some/where/table.json";
  const auto snapshot = ParseJson(j, "/elsewhere");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  EXPECT_EQ(snapshot->throughputs_file, "/some/where/table.json");
}

TEST(SnapshotTest, AMissingSnapshotFileIsAnIoErrorNamingIt) {
  const auto snapshot = LoadSnapshotFile("/nonexistent/snap.json");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), StatusCode::kIoError);
  EXPECT_THAT(snapshot.status().message(), HasSubstr("/nonexistent/snap.json"));
}

struct BadCase {
  const char* what;
  std::string json_text;
  std::vector<const char*> named;  // substrings the message must contain besides the file
};

std::string WithJob(const char* job_fields) {
  return std::string(R"j({"cluster": {"v100": 2}, "jobs": [)j") + job_fields + "]}";
}
std::string WithCluster(const char* top_level_fields) {
  return std::string("{") + top_level_fields +
         R"j(, "jobs": [{"id": "3", "scale_factor": 1, "job_type": "A3C"}]})j";
}

TEST(SnapshotTest, EachBadInputNamesTheField) {
  const BadCase cases[] = {
      {"not JSON", "{\"cluster\": ", {"not valid JSON"}},
      {"not an object", "[]", {"object"}},
      {"no cluster", R"j({"jobs": []})j", {"cluster"}},
      {"no jobs", R"j({"cluster": {"v100": 2}})j", {"jobs"}},
      {"jobs not a list", R"j({"cluster": {"v100": 2}, "jobs": {}})j", {"jobs"}},
      {"cluster not an object", WithCluster(R"j("cluster": [2])j"), {"cluster"}},
      {"empty cluster", WithCluster(R"j("cluster": {})j"), {"cluster"}},
      {"negative GPU count", WithCluster(R"j("cluster": {"v100": -2})j"), {"cluster.v100"}},
      {"fractional GPU count", WithCluster(R"j("cluster": {"v100": 2.5})j"), {"cluster.v100"}},
      {"GPU count as text", WithCluster(R"j("cluster": {"v100": "2"})j"), {"cluster.v100"}},
      {"gpus_per_server for an unknown type",
       WithCluster(R"j("cluster": {"v100": 2}, "gpus_per_server": {"a100": 4})j"),
       {"gpus_per_server.a100"}},
      {"gpus_per_server zero",
       WithCluster(R"j("cluster": {"v100": 2}, "gpus_per_server": {"v100": 0})j"),
       {"gpus_per_server.v100"}},
      {"unknown top-level field",
       WithCluster(R"j("cluster": {"v100": 2}, "clutser": {})j"),
       {"clutser", "unknown field"}},
      {"zero instance cost",
       WithCluster(R"j("cluster": {"v100": 2}, "instance_costs": {"v100": 0})j"),
       {"instance_costs.v100"}},
      {"negative entity weight",
       WithCluster(R"j("cluster": {"v100": 2}, "entity_weights": {"team-a": -1})j"),
       {"entity_weights.team-a"}},
      {"throughputs_file not text",
       WithCluster(R"j("cluster": {"v100": 2}, "throughputs_file": 3)j"),
       {"throughputs_file"}},
      {"job not an object", WithJob("7"), {"jobs[0]"}},
      {"job without id", WithJob(R"j({"scale_factor": 1, "job_type": "A3C"})j"), {"jobs[0]", "id"}},
      {"duplicate id",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C"},
                  {"id": 7, "scale_factor": 1, "job_type": "A3C"})j"),
       {"jobs[1].id", "7", "twice"}},
      {"non-integer id",
       WithJob(R"j({"id": "seven", "scale_factor": 1, "job_type": "A3C"})j"),
       {"jobs[0].id", "seven"}},
      {"negative id",
       WithJob(R"j({"id": -1, "scale_factor": 1, "job_type": "A3C"})j"),
       {"jobs[0].id"}},
      {"negative id as text",
       WithJob(R"j({"id": "-1", "scale_factor": 1, "job_type": "A3C"})j"),
       {"jobs[0].id"}},
      {"fractional id",
       WithJob(R"j({"id": 1.5, "scale_factor": 1, "job_type": "A3C"})j"),
       {"jobs[0].id"}},
      {"id with trailing text",
       WithJob(R"j({"id": "7a", "scale_factor": 1, "job_type": "A3C"})j"),
       {"jobs[0].id", "7a"}},
      {"no scale_factor", WithJob(R"j({"id": "7", "job_type": "A3C"})j"), {"id 7", "scale_factor"}},
      {"scale_factor 0",
       WithJob(R"j({"id": "7", "scale_factor": 0, "job_type": "A3C"})j"),
       {"id 7", "scale_factor"}},
      {"fractional scale_factor",
       WithJob(R"j({"id": "7", "scale_factor": 1.5, "job_type": "A3C"})j"),
       {"id 7", "scale_factor"}},
      {"negative steps_remaining",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "steps_remaining": -5})j"),
       {"id 7", "steps_remaining"}},
      {"steps_remaining as text",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "steps_remaining": "5"})j"),
       {"id 7", "steps_remaining"}},
      {"negative time_since_start",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "time_since_start": -1})j"),
       {"id 7", "time_since_start"}},
      {"zero priority_weight",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "priority_weight": 0})j"),
       {"id 7", "priority_weight"}},
      {"deadline already passed",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "slo": -10})j"),
       {"id 7", "slo"}},
      {"unknown job field",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "priority": 2})j"),
       {"jobs[0].priority", "unknown field"}},
      {"job_type not text",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": 5})j"),
       {"id 7", "job_type"}},
      {"entity not text",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "entity": 1})j"),
       {"id 7", "entity"}},
      {"negative throughput",
       WithJob(R"j({"id": "7", "scale_factor": 1, "throughputs": {"v100": -3.0}})j"),
       {"id 7", "throughputs.v100"}},
      {"throughput as text",
       WithJob(R"j({"id": "7", "scale_factor": 1, "throughputs": {"v100": "fast"}})j"),
       {"id 7", "throughputs.v100"}},
      {"neither job_type nor throughputs",
       WithJob(R"j({"id": "7", "scale_factor": 1})j"),
       {"id 7", "job_type", "throughputs"}},
      // Bounds (docs/formats.md, "Bounds"). 1e999 once escaped as an uncaught out_of_range.
      {"number beyond a double",
       WithJob(R"j({"id": "7", "scale_factor": 1, "throughputs": {"v100": 1e999}})j"),
       {"not valid JSON", "1e999"}},
      {"throughput beyond the bound",
       WithJob(R"j({"id": "7", "scale_factor": 1, "throughputs": {"v100": 1e308}})j"),
       {"id 7", "throughputs.v100", "is outside [0.0001, 100000]"}},
      {"tiny positive throughput",
       WithJob(R"j({"id": "7", "scale_factor": 1, "throughputs": {"v100": 1e-300}})j"),
       {"id 7", "throughputs.v100", "is outside"}},
      {"steps_remaining beyond the bound",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "steps_remaining": 1e18})j"),
       {"id 7", "steps_remaining", "is outside [0, 1e+10]"}},
      {"time_since_start beyond the bound",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "time_since_start": 1e300})j"),
       {"id 7", "time_since_start", "is outside"}},
      {"slo beyond the bound",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "slo": 1e10})j"),
       {"id 7", "slo", "is outside"}},
      {"priority beyond the bound",
       WithJob(R"j({"id": "7", "scale_factor": 1, "job_type": "A3C", "priority_weight": 1e9})j"),
       {"id 7", "priority_weight", "is outside"}},
      {"scale_factor beyond the bound",
       WithJob(R"j({"id": "7", "scale_factor": 10000000, "job_type": "A3C"})j"),
       {"id 7", "scale_factor", "is outside"}},
      {"GPU count beyond the bound", WithCluster(R"j("cluster": {"v100": 1e12})j"),
       {"cluster.v100", "is outside"}},
      {"GPU count beyond uint64", WithCluster(R"j("cluster": {"v100": 1e300})j"),
       {"cluster.v100", "is outside"}},
      {"instance cost beyond the bound",
       WithCluster(R"j("cluster": {"v100": 2}, "instance_costs": {"v100": 1e300})j"),
       {"instance_costs.v100", "is outside"}},
      {"entity weight beyond the bound",
       WithCluster(R"j("cluster": {"v100": 2}, "entity_weights": {"team-a": 1e300})j"),
       {"entity_weights.team-a", "is outside"}},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    const auto snapshot = ParseSnapshot(c.json_text, "bad_snap.json");
    ASSERT_FALSE(snapshot.ok());
    EXPECT_EQ(snapshot.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(snapshot.status().message(), HasSubstr("bad_snap.json"));
    for (const char* part : c.named) EXPECT_THAT(snapshot.status().message(), HasSubstr(part));
  }
}

TEST(SnapshotTest, AClusterWithNoGpusAtAllIsRefused) {
  const auto snapshot =
      ParseSnapshot(WithCluster(R"j("cluster": {"v100": 0, "k80": 0})j"), "empty_cluster.json");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(snapshot.status().message(), HasSubstr("empty_cluster.json"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("cluster"));
}

}  // namespace
}  // namespace gavel
