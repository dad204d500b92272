// `gavel profile --device cpu` on real PyTorch models (few steps, small batches), and its rows
// used beside the shipped table by `gavel allocate` and `gavel simulate`. Skipped when no
// python3 here imports torch (Debian's python3-torch and python3-torchvision).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"

namespace gavel {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::pair<int, std::string> RunShell(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen((command + " 2>&1").c_str(), "r"), ::pclose);
  std::string output;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) output += buffer.data();
  const int status = ::pclose(pipe.release());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool TorchHere() {
  return RunShell("python3 -c 'import torch, torchvision'").first == 0 ||
         RunShell("/usr/bin/python3 -c 'import torch, torchvision'").first == 0;
}

class ProfileCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TorchHere()) GTEST_SKIP() << "no python3 here imports torch and torchvision";
    dir_ = fs::temp_directory_path() / ("gavel_profile_cpu_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

const JobTypeKey kResNet18{"ResNet-18 (batch size 64)", 1};
const JobTypeKey kResNet50{"ResNet-50 (batch size 64)", 1};

TEST_F(ProfileCpuTest, TwoModelsMeasuredAloneGiveAUsableTable) {
  const std::string rows = (dir_ / "cpu.json").string();
  const auto [code, out] = RunShell(std::string(GAVEL_BINARY) +
                               " profile --device cpu --gpu-type cpu_test --steps 2 --warmup 1 "
                               "--max-batch 2 --models 'ResNet-18 (batch size 64)' "
                               "--models 'ResNet-50 (batch size 64)' --out " + rows);
  ASSERT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("2 job types measured alone, 24 derived"));
  const auto table = ThroughputTable::LoadFiles(DefaultThroughputsFile(), {rows});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const double r18 = *table->Isolated("cpu_test", kResNet18);
  const double r50 = *table->Isolated("cpu_test", kResNet50);
  std::printf("cpu_test: ResNet-18 %.5f, ResNet-50 %.5f steps/s at batch 64\n", r18, r50);
  EXPECT_GT(r50, 0.0);
  // ResNet-50 does about 2.3x the arithmetic of ResNet-18 per image (4.1 vs 1.8 GFLOPs).
  EXPECT_GT(r18, 1.3 * r50);
  // A CPU is far slower than any GPU of the table: each rate below the K80's.
  EXPECT_LT(r18, *table->Isolated("k80", kResNet18));
  // Every key of the shipped table has a row for the new type (measured, derived or scaled).
  for (const JobTypeKey& key : table->job_types()) {
    if (table->Isolated("v100", key)) {
      EXPECT_TRUE(table->Isolated("cpu_test", key).has_value()) << key.ToString();
    }
  }

  // The rows beside the shipped table in `gavel allocate`: a job that only the new type has.
  const std::string snapshot = (dir_ / "snapshot.json").string();
  std::ofstream(snapshot) << R"j({"cluster": {"cpu_test": 1}, "jobs": [
      {"id": 0, "job_type": "ResNet-18 (batch size 64)", "scale_factor": 1}]})j";
  const auto [alloc_code, alloc] = RunShell(std::string(GAVEL_BINARY) +
                                       " allocate -p max_min_fairness --snapshot " + snapshot +
                                       " --throughputs-extra " + rows);
  ASSERT_EQ(alloc_code, 0) << alloc;
  const auto allocation = nlohmann::json::parse(alloc);
  EXPECT_NEAR(allocation["allocation"]["0"]["cpu_test"].get<double>(), 1.0, 1e-6);
  // Without the rows the table knows no rate there: the job gets no time on the type.
  const auto [plain_code, plain] = RunShell(std::string(GAVEL_BINARY) +
                                            " allocate -p max_min_fairness --snapshot " + snapshot);
  ASSERT_EQ(plain_code, 0) << plain;
  EXPECT_EQ(nlohmann::json::parse(plain)["allocation"]["0"]["cpu_test"].get<double>(), 0.0);
}

TEST_F(ProfileCpuTest, APairIsMeasuredSharingTheDevice) {
  const std::string rows = (dir_ / "pair.json").string();
  const auto [code, out] = RunShell(std::string(GAVEL_BINARY) +
                               " profile --device cpu --gpu-type cpu_pair --steps 2 --warmup 1 "
                               "--max-batch 1 --pairs --models 'ResNet-18 (batch size 16)' --out " +
                               rows);
  ASSERT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("1 pairs measured"));
  const auto table = ThroughputTable::LoadFiles(DefaultThroughputsFile(), {rows});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const JobTypeKey key{"ResNet-18 (batch size 16)", 1};
  const double alone = *table->Isolated("cpu_pair", key);
  const auto together = *table->Colocated("cpu_pair", key, key);
  std::printf("cpu_pair: alone %.4f, together %.4f + %.4f steps/s\n", alone, together[0],
              together[1]);
  EXPECT_GT(together[0], 0.0);
  EXPECT_GT(together[1], 0.0);
  // Two copies on one device share it: together they do not run each twice as fast as alone.
  EXPECT_LT(together[0] + together[1], 2.0 * alone * 1.5);
}

}  // namespace
}  // namespace gavel
