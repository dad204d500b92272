#include "gavel/cli/logs_command.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>
#include <thread>
#include <tuple>
#include <vector>

#include "gavel/rpc/grpc_util.h"

namespace gavel::cli {
namespace {

constexpr std::string_view kBanner = "==== gavel: ";

// One launch's output in one file (or the part of a file before its first banner that the
// agent's size cap left).
struct Segment {
  std::int64_t round = -1;  // from the banner; -1 before any
  std::uint32_t rank = 0;
  bool is_stderr = false;
  std::string agent_id;
  std::string banner;  // the banner line without its newline ("" when cut)
  std::string text;    // what follows it
};

// The number after `key` in `line` ("round 12" → 12); -1 when absent.
std::int64_t NumberAfter(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return -1;
  std::int64_t value = -1;
  const char* begin = line.data() + at + key.size();
  std::from_chars(begin, line.data() + line.size(), value);
  return value;
}

std::string Tag(const Segment& s) {
  return "[rank " + std::to_string(s.rank) + (s.is_stderr ? " stderr" : " stdout") + " on " +
         s.agent_id + "]";
}

std::vector<Segment> Split(const wire::AgentLogChunk& agent_chunk) {
  const wire::LogChunk& chunk = agent_chunk.chunk();
  std::vector<Segment> segments;
  const std::string& data = chunk.data();
  std::size_t pos = 0;
  auto start_segment = [&](std::string banner) {
    Segment s;
    s.rank = chunk.rank();
    s.is_stderr = chunk.stream() == "stderr";
    s.agent_id = agent_chunk.agent_id();
    s.round = banner.empty() ? -1 : NumberAfter(banner, " round ");
    s.banner = std::move(banner);
    segments.push_back(std::move(s));
  };
  while (pos < data.size()) {
    const std::size_t line_end = data.find('\n', pos);
    const std::size_t next = line_end == std::string::npos ? data.size() : line_end + 1;
    const std::string_view line(data.data() + pos, next - pos);
    if (line.starts_with(kBanner)) {
      std::string banner(line);
      while (!banner.empty() && banner.back() == '\n') banner.pop_back();
      start_segment(std::move(banner));
    } else {
      if (segments.empty()) start_segment("");
      segments.back().text.append(line);
    }
    pos = next;
  }
  return segments;
}

}  // namespace

std::string MergeJobLogs(const wire::GetJobLogsResponse& response) {
  std::vector<Segment> segments;
  for (const wire::AgentLogChunk& chunk : response.chunks()) {
    std::vector<Segment> split = Split(chunk);
    if (chunk.chunk().offset() > 0 && !split.empty() && split.front().banner.empty()) {
      split.front().banner = "==== gavel: (" + std::to_string(chunk.chunk().offset()) +
                             " earlier bytes of " + chunk.chunk().file() + " not shown) ====";
    }
    for (Segment& s : split) segments.push_back(std::move(s));
  }
  // Rounds never repeat and grow with time, so round order is launch order across hosts.
  std::stable_sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) {
    return std::tie(a.round, a.rank, a.is_stderr, a.agent_id) <
           std::tie(b.round, b.rank, b.is_stderr, b.agent_id);
  });
  std::string out;
  for (const Segment& s : segments) {
    out += (s.banner.empty() ? std::string("==== gavel: (output before the first launch line) ====")
                             : s.banner) +
           " " + Tag(s) + "\n";
    out += s.text;
    if (!s.text.empty() && s.text.back() != '\n') out += "\n";
  }
  return out;
}

CLI::App* AddLogsCommand(CLI::App& app, LogsOptions* o) {
  o->cmd = app.add_subcommand(
      "logs", "Print a job's stdout and stderr from every host it ran on, launch by launch");
  o->cmd->add_option("--scheduler", o->client.scheduler,
                     "Scheduler address (default 127.0.0.1:50060)");
  o->cmd->add_option("--token-file", o->client.token_file, "File holding your token");
  o->cmd->add_option("job_id", o->job_id, "The job")->required();
  o->cmd->add_option("--rank", o->rank, "Only this rank of a multi-GPU job (default: all)")
      ->check(CLI::Range(0, 1 << 20));
  o->cmd->add_flag("-f,--follow", o->follow,
                   "Keep printing new output until the job has finished");
  return o->cmd;
}

Status RunLogs(const LogsOptions& o, std::ostream& out, std::ostream& err) {
  GAVEL_ASSIGN_OR_RETURN(Connection c, Connect(o.client));
  wire::GetJobLogsRequest request;
  request.set_job_id(o.job_id);
  request.set_rank(o.rank);
  auto fetch = [&]() -> Result<wire::GetJobLogsResponse> {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::GetJobLogsResponse response;
    GAVEL_RETURN_IF_ERROR(
        rpc::FromGrpc(c.stub->GetJobLogs(&context, request, &response), "logs"));
    return response;
  };
  auto finished = [&]() -> Result<bool> {
    grpc::ClientContext context;
    c.Prepare(&context);
    wire::ListJobsRequest list;
    list.add_job_ids(o.job_id);
    wire::ListJobsResponse response;
    GAVEL_RETURN_IF_ERROR(rpc::FromGrpc(c.stub->ListJobs(&context, list, &response), "logs"));
    return response.jobs_size() == 0 || (response.jobs(0).state() != wire::QUEUED &&
                                         response.jobs(0).state() != wire::RUNNING);
  };
  std::map<std::string, std::string> told_unreachable;
  auto tell_unreachable = [&](const wire::GetJobLogsResponse& response) {
    for (const std::string& line : response.unreachable()) {
      const std::string agent = line.substr(0, line.find(':'));
      if (told_unreachable[agent] == line) continue;
      told_unreachable[agent] = line;
      err << "gavel logs: not read: agent " << line << "\n";
    }
  };

  GAVEL_ASSIGN_OR_RETURN(wire::GetJobLogsResponse first, fetch());
  tell_unreachable(first);
  out << MergeJobLogs(first) << std::flush;
  if (!o.follow) return Status::Ok();

  // Following: ask each file from where we are, print what it gained.
  std::map<std::pair<std::string, std::string>, std::uint64_t> ends;
  auto advance = [&](const wire::GetJobLogsResponse& response) {
    for (const wire::AgentLogChunk& chunk : response.chunks()) {
      ends[{chunk.agent_id(), chunk.chunk().file()}] =
          chunk.chunk().offset() + chunk.chunk().data().size();
    }
  };
  advance(first);
  std::string last_source;
  while (true) {
    GAVEL_ASSIGN_OR_RETURN(const bool done, finished());  // before the fetch: nothing is missed
    request.clear_offsets();
    for (const auto& [key, offset] : ends) {
      wire::AgentLogOffset* at = request.add_offsets();
      at->set_agent_id(key.first);
      at->set_file(key.second);
      at->set_offset(offset);
    }
    GAVEL_ASSIGN_OR_RETURN(wire::GetJobLogsResponse more, fetch());
    tell_unreachable(more);
    for (const wire::AgentLogChunk& chunk : more.chunks()) {
      if (chunk.chunk().data().empty()) continue;
      const std::string source = "rank " + std::to_string(chunk.chunk().rank()) + " " +
                                 chunk.chunk().stream() + " on " + chunk.agent_id();
      if (source != last_source) out << "---- " << source << " ----\n";
      last_source = source;
      out << chunk.chunk().data();
      if (chunk.chunk().data().back() != '\n') last_source.clear();  // a partial line
    }
    out << std::flush;
    advance(more);
    if (done) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_seconds));
  }
}

std::optional<int> RunLogsCommand(const LogsOptions& o) {
  if (o.cmd == nullptr || !o.cmd->parsed()) return std::nullopt;
  const Status status = RunLogs(o, std::cout, std::cerr);
  if (!status.ok()) {
    std::cerr << "gavel logs: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gavel::cli
