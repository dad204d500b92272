// `gavel profile`'s choices that need no PyTorch: which job types --models names, the default
// type name, and the errors the command gives before measuring anything.
#include "gavel/cli/profile_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <sys/wait.h>
#include <tuple>
#include <memory>

namespace gavel::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kTypes = {"A3C", "ResNet-18 (batch size 16)",
                                         "ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)"};

TEST(ProfileCommandTest, ModelsNameJobTypesOrWholeFamilies) {
  EXPECT_EQ(*SelectJobTypes(kTypes, {}), kTypes);
  EXPECT_THAT(*SelectJobTypes(kTypes, {"ResNet-18"}),
              ElementsAre("ResNet-18 (batch size 16)", "ResNet-18 (batch size 64)"));
  // A family does not take another whose name it begins ("ResNet-1" is no family).
  EXPECT_THAT(*SelectJobTypes(kTypes, {"ResNet-50 (batch size 64)", "A3C", "A3C"}),
              ElementsAre("ResNet-50 (batch size 64)", "A3C"));
  const auto bad = SelectJobTypes(kTypes, {"ResNet-1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"ResNet-1\" is no single-GPU job type"));
  EXPECT_THAT(bad.status().message(), HasSubstr("families: A3C, ResNet-18, ResNet-50"));
}

TEST(ProfileCommandTest, TheDefaultTypeNameComesFromTheDevice) {
  EXPECT_EQ(DefaultGpuTypeName("cuda", "NVIDIA H200"), "h200");
  EXPECT_EQ(DefaultGpuTypeName("cuda:1", "NVIDIA A100-SXM4-80GB"), "a100sxm480gb");
  EXPECT_EQ(DefaultGpuTypeName("cpu", "x86_64"), "cpu");
}

std::pair<int, std::string> RunGavel(const std::string& args) {
  const std::string command = std::string(GAVEL_BINARY) + " profile " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::string output;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) output += buffer.data();
  const int status = ::pclose(pipe.release());
  return {WEXITSTATUS(status), output};
}

TEST(ProfileCommandTest, BadOptionsAreRefusedBeforeMeasuring) {
  auto [code, out] = RunGavel("--models GPT --out /tmp/never.json");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(out, HasSubstr("gavel profile: --models: \"GPT\" is no single-GPU job type"));
  std::tie(code, out) = RunGavel("--gpu-type v100 --models A3C --out /tmp/never.json");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(out, HasSubstr("\"v100\" is already a GPU type"));
  std::tie(code, out) = RunGavel("--steps 0 --out /tmp/never.json");
  EXPECT_NE(code, 0);
  EXPECT_THAT(out, HasSubstr("--steps"));
}

}  // namespace
}  // namespace gavel::cli
