#include "gavel/slurm/gres.h"

#include <cctype>

#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"

namespace gavel::slurm {
namespace {

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

Result<std::vector<GpuGres>> ParseGpuGres(std::string_view gres) {
  std::vector<GpuGres> out;
  if (gres.empty() || gres == "(null)") return out;
  // Entries are separated by commas, but a socket list "(S:0,1)" may hold commas too: cut at
  // commas outside parentheses.
  std::vector<std::string_view> entries;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= gres.size(); ++i) {
    if (i < gres.size() && gres[i] == '(') ++depth;
    if (i < gres.size() && gres[i] == ')') --depth;
    if (i == gres.size() || (gres[i] == ',' && depth == 0)) {
      entries.push_back(gres.substr(start, i - start));
      start = i + 1;
    }
  }
  for (std::string_view entry : entries) {
    const std::string where = "GRES entry \"" + std::string(entry) + "\"";
    std::string_view bare = entry.substr(0, entry.find('('));
    const std::vector<std::string_view> fields = Split(bare, ':');
    if (fields[0] != "gpu") continue;  // mps, shard, nic...: not GPUs
    if (fields.size() != 3 || fields[1].empty()) {
      return Status::InvalidArgument(where +
                                     ": expected gpu:TYPE:COUNT (an untyped GPU has no "
                                     "throughput to schedule by)");
    }
    const std::optional<int> count = ParseInteger<int>(fields[2]);
    if (!count || *count < 0 || *count > bounds::kMaxGpus) {
      return Status::InvalidArgument(where + ": count must be an integer in [0, " +
                                     std::to_string(bounds::kMaxGpus) + "]");
    }
    std::string type(fields[1]);
    for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool merged = false;
    for (GpuGres& known : out) {
      if (known.type == type) {
        known.count += *count;
        merged = true;
      }
    }
    if (!merged && *count > 0) out.push_back({type, *count});
  }
  return out;
}

}  // namespace gavel::slurm
