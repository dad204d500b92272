// ShippedDataFile (shipped_data.h): environment, then beside the installed executable, then
// the source tree.
#include "gavel/core/shipped_data.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace gavel {

std::string ShippedDataFile(std::string_view name) {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("GAVEL_DATA_DIR"); dir != nullptr && *dir != '\0') {
    return (fs::path(dir) / name).string();
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "gavel" / name;
    if (fs::is_regular_file(installed, error)) return installed.string();
  }
  return std::string(GAVEL_SOURCE_DIR) + "/data/" + std::string(name);
}

}  // namespace gavel
