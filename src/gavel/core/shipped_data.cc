// ShippedDataFile (shipped_data.h): environment, then beside the installed executable, then
// the source tree.
#include "gavel/core/shipped_data.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

namespace gavel {
namespace {

namespace fs = std::filesystem;

// `name` in <directory of the running executable>/../share/gavel, when it is there.
std::optional<std::string> Installed(std::string_view name) {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return std::nullopt;
  const fs::path installed = exe.parent_path().parent_path() / "share" / "gavel" / name;
  if (!fs::is_regular_file(installed, error)) return std::nullopt;
  return installed.string();
}

}  // namespace

std::string ShippedDataFile(std::string_view name) {
  if (const char* dir = std::getenv("GAVEL_DATA_DIR"); dir != nullptr && *dir != '\0') {
    return (fs::path(dir) / name).string();
  }
  return Installed(name).value_or(std::string(GAVEL_SOURCE_DIR) + "/data/" + std::string(name));
}

std::string ShippedProgramFile(std::string_view name) {
  return Installed(name).value_or(std::string(GAVEL_SOURCE_DIR) + "/python/" + std::string(name));
}

}  // namespace gavel
