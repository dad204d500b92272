#include "gavel/core/throughput_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace gavel {
namespace {

using ::testing::HasSubstr;

std::string ShippedFile(const std::string& name) {
  return std::string(GAVEL_SOURCE_DIR) + "/data/" + name;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

const JobTypeKey kA3c{"A3C", 1};
const JobTypeKey kCycleGan{"CycleGAN", 1};

TEST(JobTypeKeyTest, ParsesAndPrintsThePythonTupleRepr) {
  const auto key = JobTypeKey::Parse("('ResNet-18 (batch size 64)', 2)");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->model, "ResNet-18 (batch size 64)");
  EXPECT_EQ(key->scale_factor, 2);
  EXPECT_EQ(key->ToString(), "('ResNet-18 (batch size 64)', 2)");
}

TEST(JobTypeKeyTest, RejectsMalformedText) {
  for (const char* text : {"", "A3C", "('A3C', )", "('A3C', 0)", "('A3C', -1)", "('A3C', 1",
                           "('A3C' 1)", "('', 1)", "('A3C', x)", "(A3C, 1)", "('A3C', 1.5)"}) {
    SCOPED_TRACE(text);
    const auto key = JobTypeKey::Parse(text);
    ASSERT_FALSE(key.ok());
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(key.status().message(), HasSubstr(std::string("\"") + text + "\""));
  }
}

TEST(ThroughputTableTest, ShippedTablesLoadWith83KeysOnEveryMainType) {
  for (const char* name : {"simulation_throughputs.json", "physical_cluster_throughputs.json"}) {
    SCOPED_TRACE(name);
    const auto table = ThroughputTable::LoadFile(ShippedFile(name));
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->gpu_types(),
              (std::vector<std::string>{"k80", "k80_unconsolidated", "p100", "p100_unconsolidated",
                                        "v100", "v100_unconsolidated"}));
    // 26 models at scale factor 1 plus 19 distributed models at 2, 4 and 8.
    EXPECT_EQ(table->job_types().size(), 83u);
    EXPECT_TRUE(std::is_sorted(table->job_types().begin(), table->job_types().end()));
    int per_scale_factor[9] = {};
    for (const JobTypeKey& key : table->job_types()) {
      ASSERT_TRUE(key.scale_factor == 1 || key.scale_factor == 2 || key.scale_factor == 4 ||
                  key.scale_factor == 8);
      ++per_scale_factor[key.scale_factor];
      for (const char* type : {"k80", "p100", "v100"}) {
        EXPECT_TRUE(table->Isolated(type, key).has_value()) << type << " " << key.ToString();
      }
    }
    EXPECT_EQ(per_scale_factor[1], 26);
    EXPECT_EQ(per_scale_factor[2], 19);
    EXPECT_EQ(per_scale_factor[4], 19);
    EXPECT_EQ(per_scale_factor[8], 19);
    // k80_unconsolidated lacks the six multi-GPU ResNet-50 bs 64/128 keys.
    int missing_unconsolidated = 0;
    for (const JobTypeKey& key : table->job_types()) {
      if (!table->Isolated("k80_unconsolidated", key)) {
        ++missing_unconsolidated;
        EXPECT_EQ(key.model.rfind("ResNet-50 (batch size", 0), 0u) << key.ToString();
        EXPECT_GT(key.scale_factor, 1);
      }
    }
    EXPECT_EQ(missing_unconsolidated, 6);
  }
}

TEST(ThroughputTableTest, SpotValuesMatchTheSpecTable) {
  const auto table = ThroughputTable::LoadFile(ShippedFile("simulation_throughputs.json"));
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  struct Spot {
    const char* type;
    JobTypeKey key;
    double steps_per_second;  // spot values of the shipped JSON, to 2-4 significant digits
  };
  const Spot spots[] = {
      {"k80", kA3c, 3.439},
      {"p100", kA3c, 5.681},
      {"v100", kA3c, 7.176},
      {"k80", kCycleGan, 0.505},
      {"v100", kCycleGan, 4.426},
      {"v100", {"LM (batch size 5)", 1}, 109.17},
      {"p100", {"LM (batch size 80)", 1}, 21.16},
      {"p100", {"Recommendation (batch size 512)", 1}, 48.88},
      {"v100", {"Recommendation (batch size 512)", 1}, 23.32},
      {"k80", {"Recommendation (batch size 8192)", 1}, 2.70},
      {"v100", {"ResNet-18 (batch size 64)", 1}, 24.09},
      {"p100", {"ResNet-18 (batch size 16)", 1}, 35.87},
      {"k80", {"ResNet-50 (batch size 128)", 1}, 0.35},
      {"v100", {"ResNet-50 (batch size 16)", 1}, 11.40},
      {"p100", {"Transformer (batch size 32)", 1}, 7.87},
      {"v100", {"Transformer (batch size 256)", 1}, 1.60},
  };
  for (const Spot& spot : spots) {
    SCOPED_TRACE(std::string(spot.type) + " " + spot.key.ToString());
    const auto value = table->Isolated(spot.type, spot.key);
    ASSERT_TRUE(value.has_value());
    EXPECT_NEAR(*value, spot.steps_per_second, 0.006);
  }
  // "Cannot run" is a zero, not a missing entry (k80 ResNet-50 bs128 on 2/4/8 GPUs).
  for (int sf : {2, 4, 8}) {
    EXPECT_EQ(table->Isolated("k80", {"ResNet-50 (batch size 128)", sf}), 0.0) << sf;
  }
  // The other file re-measured Recommendation: v100 bs512 is 253.6 there.
  const auto physical = ThroughputTable::LoadFile(ShippedFile("physical_cluster_throughputs.json"));
  ASSERT_TRUE(physical.ok()) << physical.status().ToString();
  EXPECT_NEAR(*physical->Isolated("v100", {"Recommendation (batch size 512)", 1}), 253.63, 0.01);
  EXPECT_EQ(physical->Isolated("k80", {"ResNet-50 (batch size 128)", 1}), 0.0);
}

TEST(ThroughputTableTest, UnknownTypesAndKeysAreAbsentNotZero) {
  const auto table = ThroughputTable::LoadFile(ShippedFile("simulation_throughputs.json"));
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_FALSE(table->Isolated("a100", kA3c).has_value());
  EXPECT_FALSE(table->Isolated("v100", JobTypeKey{"A3C", 2}).has_value());
  EXPECT_FALSE(table->HasJobType(JobTypeKey{"A3C", 2}));
  EXPECT_TRUE(table->HasJobType(kA3c));
  EXPECT_FALSE(table->HasGpuType("a100"));
  EXPECT_FALSE(table->Colocated("v100", kA3c, JobTypeKey{"ResNet-50 (batch size 64)", 2}));
  EXPECT_FALSE(table->KeyIndex(JobTypeKey{"Nope", 1}).has_value());
  EXPECT_FALSE(table->GpuTypeIndex("").has_value());
}

// Every value the table returns equals the one read straight from the JSON, and each pair
// entry is the mirror image of its partner's, for both shipped files.
TEST(ThroughputTableTest, AgreesWithTheRawJsonAndIsSymmetric) {
  for (const char* name : {"simulation_throughputs.json", "physical_cluster_throughputs.json"}) {
    SCOPED_TRACE(name);
    const auto table = ThroughputTable::LoadFile(ShippedFile(name));
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    const nlohmann::json raw = ReadJson(ShippedFile(name));
    int pair_entries = 0;
    int zero_pair_entries = 0;
    for (const auto& [type, keys] : raw.items()) {
      for (const auto& [key_text, entries] : keys.items()) {
        const JobTypeKey key = *JobTypeKey::Parse(key_text);
        for (const auto& [partner_text, value] : entries.items()) {
          if (partner_text == "null") {
            ASSERT_EQ(table->Isolated(type, key), value.get<double>()) << type << key_text;
            continue;
          }
          const JobTypeKey partner = *JobTypeKey::Parse(partner_text);
          EXPECT_EQ(partner.scale_factor, key.scale_factor);
          const auto co = table->Colocated(type, key, partner);
          ASSERT_TRUE(co.has_value()) << type << key_text << partner_text;
          ASSERT_EQ((*co)[0], value[0].get<double>());
          ASSERT_EQ((*co)[1], value[1].get<double>());
          const auto mirror = table->Colocated(type, partner, key);
          ASSERT_TRUE(mirror.has_value());
          EXPECT_EQ((*mirror)[0], (*co)[1]);
          EXPECT_EQ((*mirror)[1], (*co)[0]);
          if (type == "k80" || type == "p100" || type == "v100") {
            ++pair_entries;
            if ((*co)[0] == 0.0 && (*co)[1] == 0.0) ++zero_pair_entries;
          }
        }
      }
    }
    // 3 types × (26 × 26 + 3 × 19 × 19) = 5277 entries, 3396 of them zero.
    EXPECT_EQ(pair_entries, 5277);
    if (std::string(name) == "simulation_throughputs.json") {
      EXPECT_EQ(zero_pair_entries, 3396);
    }
  }
}

TEST(ThroughputTableTest, APairListedUnderOnePartnerOnlyIsReadFromEitherSide) {
  const auto table = ThroughputTable::Parse(R"j({"v100": {
      "('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [4.5, 3.0]},
      "('CycleGAN', 1)": {"null": 4.0}}})j",
                                            "one_sided.json");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->Colocated("v100", kA3c, kCycleGan), (std::array<double, 2>{4.5, 3.0}));
  EXPECT_EQ(table->Colocated("v100", kCycleGan, kA3c), (std::array<double, 2>{3.0, 4.5}));
  EXPECT_FALSE(table->Colocated("v100", kA3c, kA3c).has_value());
}

// Each malformed table is refused with an error that names the file and the JSON key at fault.
struct MalformedCase {
  const char* what;
  const char* json;
  std::vector<const char*> named;  // substrings the message must contain besides the file
};

TEST(ThroughputTableTest, MalformedTablesNameTheFileAndKey) {
  const MalformedCase cases[] = {
      {"bad JSON", R"j({"v100": {"('A3C', 1)": {"null": 7.0,}}})j", {"not valid JSON"}},
      {"truncated JSON", R"j({"v100": )j", {"not valid JSON"}},
      {"top level not an object", R"j([1, 2])j", {}},
      {"empty top level", R"j({})j", {}},
      {"GPU type not an object", R"j({"v100": 3})j", {"\"v100\""}},
      {"bad key text", R"j({"v100": {"A3C": {"null": 7.0}}})j", {"\"v100\"", "\"A3C\""}},
      {"zero scale factor in key",
       R"j({"v100": {"('A3C', 0)": {"null": 7.0}}})j",
       {"\"v100\"", "('A3C', 0)"}},
      {"key value not an object", R"j({"v100": {"('A3C', 1)": 7.0}})j", {"\"v100\"", "('A3C', 1)"}},
      // Numbers beyond a double threw an uncaught out_of_range from the JSON library.
      {"number beyond a double", R"j({"v100": {"('A3C', 1)": {"null": 1e999}}})j",
       {"not valid JSON", "1e999"}},
      {"throughput beyond the bound", R"j({"v100": {"('A3C', 1)": {"null": 1e308}}})j",
       {"\"v100\"", "('A3C', 1)", "null", "is outside [0.0001, 100000]"}},
      {"throughput below the bound", R"j({"v100": {"('A3C', 1)": {"null": 1e-300}}})j",
       {"\"v100\"", "('A3C', 1)", "null", "is outside"}},
      {"pair throughput beyond the bound",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('A3C', 1)": [1e6, 1.0]}}})j",
       {"\"v100\"", "('A3C', 1)", "[0]", "is outside"}},
      {"scale factor beyond the bound",
       R"j({"v100": {"('A3C', 2000000)": {"null": 7.0}}})j", {"\"v100\"", "2000000"}},
      {"negative throughput",
       R"j({"v100": {"('A3C', 1)": {"null": -1.0}}})j",
       {"\"v100\"", "('A3C', 1)", "null", "-1"}},
      {"non-numeric throughput",
       R"j({"v100": {"('A3C', 1)": {"null": "fast"}}})j",
       {"\"v100\"", "('A3C', 1)", "null"}},
      {"boolean throughput",
       R"j({"v100": {"('A3C', 1)": {"null": true}}})j",
       {"\"v100\"", "('A3C', 1)", "null"}},
      {"missing null",
       R"j({"v100": {"('A3C', 1)": {"('A3C', 1)": [1.0, 1.0]}}})j",
       {"\"v100\"", "('A3C', 1)", "null"}},
      {"pair entry of length 1",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [1.0]},
                    "('CycleGAN', 1)": {"null": 4.0}}})j",
       {"\"v100\"", "('A3C', 1)", "('CycleGAN', 1)"}},
      {"pair entry of length 3",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [1.0, 2.0, 3.0]},
                    "('CycleGAN', 1)": {"null": 4.0}}})j",
       {"\"v100\"", "('A3C', 1)", "('CycleGAN', 1)"}},
      {"pair entry not a list",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": 1.0},
                    "('CycleGAN', 1)": {"null": 4.0}}})j",
       {"\"v100\"", "('A3C', 1)", "('CycleGAN', 1)"}},
      {"negative pair throughput",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [1.0, -2.0]},
                    "('CycleGAN', 1)": {"null": 4.0}}})j",
       {"\"v100\"", "('A3C', 1)", "('CycleGAN', 1)"}},
      {"pair across scale factors",
       R"j({"v100": {"('LM (batch size 5)', 1)": {"null": 7.0, "('LM (batch size 5)', 2)": [1, 1]},
                    "('LM (batch size 5)', 2)": {"null": 9.0}}})j",
       {"\"v100\"", "('LM (batch size 5)', 1)", "('LM (batch size 5)', 2)", "scale factor"}},
      {"malformed partner key",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "CycleGAN": [1.0, 1.0]}}})j",
       {"\"v100\"", "('A3C', 1)", "CycleGAN"}},
      {"partner that is no job type of the file",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('Pong', 1)": [1.0, 1.0]}}})j",
       {"\"v100\"", "('A3C', 1)", "('Pong', 1)"}},
      {"mirror disagreement",
       R"j({"v100": {"('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [4.5, 3.0]},
                    "('CycleGAN', 1)": {"null": 4.0, "('A3C', 1)": [3.0, 4.0]}}})j",
       {"\"v100\"", "('A3C', 1)", "('CycleGAN', 1)", "mirror"}},
  };
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.what);
    const auto table = ThroughputTable::Parse(c.json, "bad_table.json");
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(table.status().message(), HasSubstr("bad_table.json"));
    for (const char* part : c.named) EXPECT_THAT(table.status().message(), HasSubstr(part));
  }
}

TEST(ThroughputTableTest, AMissingFileIsAnIoErrorNamingIt) {
  const auto table = ThroughputTable::LoadFile("/nonexistent/throughputs.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kIoError);
  EXPECT_THAT(table.status().message(), HasSubstr("/nonexistent/throughputs.json"));
}

TEST(ThroughputTableTest, MirrorEntriesThatAgreeToRoundOffAreAccepted) {
  // The shipped files hold pair measurements written twice; a last-digit difference is the
  // same measurement, a real difference is not (previous test).
  const auto table = ThroughputTable::Parse(R"j({"v100": {
      "('A3C', 1)": {"null": 7.0, "('CycleGAN', 1)": [4.5, 3.0]},
      "('CycleGAN', 1)": {"null": 4.0, "('A3C', 1)": [3.0000000000000004, 4.5]}}})j",
                                            "round_off.json");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(table->job_types(), ::testing::ElementsAre(kA3c, kCycleGan));
}

// Writes `text` to a fresh file under the test's temporary directory.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ThroughputTableTest, ExtraFilesAddGpuTypesBesideTheBaseTable) {
  const std::string extra = WriteTemp("h100_rows.json", R"j({"h100": {
      "('A3C', 1)": {"null": 20.0, "('CycleGAN', 1)": [15.0, 9.0]},
      "('CycleGAN', 1)": {"null": 12.0}}})j");
  const auto table = ThroughputTable::LoadFiles(ShippedFile("simulation_throughputs.json"), {extra});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const auto base = ThroughputTable::LoadFile(ShippedFile("simulation_throughputs.json"));
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(table->gpu_types().size(), base->gpu_types().size() + 1);
  EXPECT_EQ(table->job_types(), base->job_types());  // the extra's keys are all shipped ones
  EXPECT_EQ(table->Isolated("h100", kA3c), 20.0);
  EXPECT_EQ(table->Colocated("h100", kCycleGan, kA3c), (std::array<double, 2>{9.0, 15.0}));
  // The shipped types are read unchanged, and the extra lacks keys it did not measure.
  EXPECT_EQ(table->Isolated("v100", kA3c), base->Isolated("v100", kA3c));
  EXPECT_EQ(table->Colocated("v100", kA3c, kCycleGan), base->Colocated("v100", kA3c, kCycleGan));
  EXPECT_FALSE(table->Isolated("h100", JobTypeKey{"ResNet-18 (batch size 64)", 1}).has_value());
}

TEST(ThroughputTableTest, AnExtraFileThatRedefinesATypeOrIsMalformedIsNamed) {
  const std::string shipped = ShippedFile("simulation_throughputs.json");
  const std::string again = WriteTemp("v100_again.json", R"j({"v100": {"('A3C', 1)": {"null": 1.0}}})j");
  const auto twice = ThroughputTable::LoadFiles(shipped, {again});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("v100_again.json: \"v100\": GPU type already in"));
  EXPECT_THAT(twice.status().message(), HasSubstr(shipped));

  const std::string bad = WriteTemp("bad_rows.json", R"j({"h100": {"('A3C', 1)": {"null": -1}}})j");
  const auto malformed = ThroughputTable::LoadFiles(shipped, {bad});
  ASSERT_FALSE(malformed.ok());
  EXPECT_THAT(malformed.status().message(), HasSubstr("bad_rows.json: \"h100\""));

  const auto missing = ThroughputTable::LoadFiles(shipped, {"/nonexistent/h100.json"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace gavel
