// ShippedDataFile's order: GAVEL_DATA_DIR, then beside an installed executable (covered by
// tests/install_test.sh, which installs one), then the source tree.
#include "gavel/core/shipped_data.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

namespace gavel {
namespace {

// Sets (or with nullopt unsets) GAVEL_DATA_DIR for one test, restoring it after.
class DataDirEnv {
 public:
  explicit DataDirEnv(const std::optional<std::string>& value) {
    if (const char* old = ::getenv("GAVEL_DATA_DIR")) old_ = old;
    if (value) {
      ::setenv("GAVEL_DATA_DIR", value->c_str(), 1);
    } else {
      ::unsetenv("GAVEL_DATA_DIR");
    }
  }
  ~DataDirEnv() {
    if (old_) {
      ::setenv("GAVEL_DATA_DIR", old_->c_str(), 1);
    } else {
      ::unsetenv("GAVEL_DATA_DIR");
    }
  }
  DataDirEnv(const DataDirEnv&) = delete;
  DataDirEnv& operator=(const DataDirEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST(ShippedDataFileTest, TheEnvironmentNamesTheDirectoryWithoutFallback) {
  DataDirEnv env(std::string("/nonexistent/gavel-data"));
  EXPECT_EQ(ShippedDataFile("restart_overhead.csv"), "/nonexistent/gavel-data/restart_overhead.csv");
}

TEST(ShippedDataFileTest, WithoutItABuildTreeBinaryReadsTheSourceTree) {
  for (const std::optional<std::string>& value : {std::optional<std::string>(),
                                                  std::optional<std::string>("")}) {
    DataDirEnv env(value);
    const std::string path = ShippedDataFile("simulation_throughputs.json");
    EXPECT_EQ(path, std::string(GAVEL_SOURCE_DIR) + "/data/simulation_throughputs.json");
    EXPECT_TRUE(std::filesystem::is_regular_file(path));
  }
}

}  // namespace
}  // namespace gavel
