#include "gavel/agent/job_logs.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>
#include <vector>

namespace gavel::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kDefaultMaxBytes = 1u << 20;

// A job log's name, taken apart: job-<id>[.rank-<r>].(out|err).
struct LogName {
  std::uint64_t job_id = 0;
  std::uint32_t rank = 0;
  bool stdout_stream = true;
};

bool ParseNumber(std::string_view text, std::uint64_t* value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::optional<LogName> ParseLogName(std::string_view name) {
  LogName parsed;
  if (!name.starts_with("job-")) return std::nullopt;
  name.remove_prefix(4);
  if (name.ends_with(".out")) {
    parsed.stdout_stream = true;
  } else if (name.ends_with(".err")) {
    parsed.stdout_stream = false;
  } else {
    return std::nullopt;
  }
  name.remove_suffix(4);
  const std::size_t dot = name.find(".rank-");
  std::uint64_t rank = 0;
  if (dot != std::string_view::npos) {
    if (!ParseNumber(name.substr(dot + 6), &rank) || rank > UINT32_MAX) return std::nullopt;
    name = name.substr(0, dot);
  }
  if (!ParseNumber(name, &parsed.job_id)) return std::nullopt;
  parsed.rank = static_cast<std::uint32_t>(rank);
  return parsed;
}

}  // namespace

Result<wire::ReadLogsResponse> ReadJobLogs(const std::string& log_dir,
                                           const wire::ReadLogsRequest& request) {
  if (request.rank() < -1) {
    return Status::InvalidArgument("rank: " + std::to_string(request.rank()) +
                                   " is not a rank (>= 0, or -1 for all)");
  }
  const std::uint64_t max_bytes = request.max_bytes() == 0 ? kDefaultMaxBytes : request.max_bytes();
  wire::ReadLogsResponse response;
  std::error_code ec;
  std::vector<std::pair<std::string, LogName>> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(log_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::optional<LogName> parsed = ParseLogName(name);
    if (!parsed || parsed->job_id != request.job_id()) continue;
    if (request.rank() >= 0 && parsed->rank != static_cast<std::uint32_t>(request.rank())) continue;
    files.emplace_back(name, *parsed);
  }
  // Rank order, stdout before stderr: the order `gavel logs` prints them in.
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second.rank, !a.second.stdout_stream) <
           std::pair(b.second.rank, !b.second.stdout_stream);
  });
  for (const auto& [name, parsed] : files) {
    std::ifstream in(fs::path(log_dir) / name, std::ios::binary);
    if (!in) continue;  // pruned meanwhile
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, in.tellg()));
    std::uint64_t from = 0;
    if (const auto it = request.offsets().find(name); it != request.offsets().end()) {
      from = it->second <= size ? it->second : 0;
    }
    if (size - from > max_bytes) from = size - max_bytes;
    wire::LogChunk* chunk = response.add_chunks();
    chunk->set_file(name);
    chunk->set_rank(parsed.rank);
    chunk->set_stream(parsed.stdout_stream ? "stdout" : "stderr");
    chunk->set_offset(from);
    chunk->set_size(size);
    std::string data(static_cast<std::size_t>(size - from), '\0');
    in.seekg(static_cast<std::streamoff>(from));
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    data.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
    chunk->set_data(std::move(data));
  }
  return response;
}

int PruneJobLogs(const std::string& log_dir, Seconds retention, double now_unix_s,
                 const std::set<std::uint64_t>& keep) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(log_dir, ec)) {
    const std::optional<LogName> parsed = ParseLogName(entry.path().filename().string());
    if (!parsed || keep.contains(parsed->job_id)) continue;
    std::error_code time_ec;
    const fs::file_time_type written = entry.last_write_time(time_ec);
    if (time_ec) continue;
    // file_time_type's clock is the system clock on Linux (libstdc++).
    const double written_unix_s =
        std::chrono::duration<double>(
            std::chrono::file_clock::to_sys(written).time_since_epoch())
            .count();
    if (now_unix_s - written_unix_s <= retention.value()) continue;
    std::error_code remove_ec;
    if (fs::remove(entry.path(), remove_ec)) ++removed;
  }
  return removed;
}

}  // namespace gavel::agent
