#include "gavel/workload/trace_importers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <utility>

#include "gavel/core/bounds.h"
#include "gavel/workload/job_table.h"

namespace gavel::workload {
namespace {

using json = nlohmann::json;

// Documented bounds (docs/formats.md): anything outside is a bad row.
constexpr int kMaxGpus = 100000;
constexpr double kMaxSeconds = 1e10;      // ~300 years: times and run times
constexpr double kMaxPaiPercent = 1e7;    // plan_gpu (% of a GPU) per instance
constexpr double kMaxPaiInstances = 1e6;  // inst_num
constexpr int kScaleFactors[] = {1, 2, 4, 8};

// A job as a trace records it, before the mapping to our job types.
struct ObservedJob {
  std::string id;
  double submit = 0.0;       // seconds, the trace's own epoch
  double run_seconds = 0.0;  // > 0
  int gpus = 0;              // >= 1
  OutcomeKind kind = OutcomeKind::kCompleted;
};

// Collects jobs and counts; turns a bad row into an error or a skip.
class Collector {
 public:
  explicit Collector(bool skip_bad) : skip_bad_(skip_bad) {}
  // Returns the error to propagate (non-OK only when bad rows are not skipped).
  Status Bad(const std::string& message) {
    if (!skip_bad_) return Status::InvalidArgument(message);
    if (report.skipped_bad++ == 0) report.first_bad = message;
    return Status::Ok();
  }
  // Whether the next bad row's message is used (skipping keeps only the first one's), so
  // that costly messages are only built when needed.
  bool WantsMessage() const { return !skip_bad_ || report.skipped_bad == 0; }
  void Add(ObservedJob job) {
    // A job that never ran has no GPUs recorded either: count it as "no run".
    if (!(job.run_seconds > 0.0)) {
      ++report.skipped_no_run;
    } else if (job.gpus <= 0) {
      ++report.skipped_no_gpu;
    } else {
      jobs.push_back(std::move(job));
    }
  }
  std::vector<ObservedJob> jobs;
  ImportReport report;

 private:
  bool skip_bad_;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// A finite number in [low, high], the whole text consumed.
std::optional<double> ParseBounded(std::string_view text, double low, double high) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(value) || value < low || value > high) return std::nullopt;
  return value;
}

// Splits one CSV line; fields may be double-quoted ("" inside for a quote).
std::vector<std::string> SplitCsv(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// Calls `row(line_number, fields)` for each non-blank line.
template <class RowFn>
Status ForEachCsvLine(std::string_view text, RowFn row) {
  std::size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line_number;
    const std::string_view line = Trim(text.substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    GAVEL_RETURN_IF_ERROR(row(line_number, SplitCsv(line)));
  }
  return Status::Ok();
}

// 'text', built piecewise (GCC 12's -Wrestrict misfires on "'" + std::string).
std::string Quoted(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted += '\'';
  quoted.append(text);
  quoted += '\'';
  return quoted;
}

std::string Where(const std::string& source, int line, const std::string& field) {
  return source + ":" + std::to_string(line) + ": " + field + ": ";
}

// ---- Philly cluster_job_log ---------------------------------------------------------------

// The line of the job's "jobid" value in the file, for error messages; 0 when not found.
int LineOfJobId(std::string_view text, const std::string& jobid) {
  if (jobid.empty()) return 0;
  std::string quoted;  // built piecewise: GCC 12's -Wrestrict misfires on "\"" + jobid
  quoted.reserve(jobid.size() + 2);
  quoted += '"';
  quoted += jobid;
  quoted += '"';
  const std::size_t at = text.find(quoted);
  if (at == std::string_view::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// A Philly time field: a date string, or null / "None" (missing, per the trace's README).
Result<std::optional<double>> PhillyTime(const json& job, const char* key) {
  if (!job.contains(key) || job.at(key).is_null()) return std::optional<double>();
  const json& value = job.at(key);
  if (!value.is_string()) return Status::InvalidArgument("expected a date string");
  const std::string text = value.get<std::string>();
  if (text == "None" || text.empty()) return std::optional<double>();
  GAVEL_ASSIGN_OR_RETURN(const double seconds, ParseTraceDateTime(text));
  return std::optional<double>(seconds);
}

// Reads one job; InvalidArgument "<field>: <what>" when malformed.
Result<ObservedJob> ReadPhillyJob(const json& job) {
  if (!job.is_object()) return Status::InvalidArgument("job: expected an object");
  ObservedJob out;
  if (!job.contains("jobid") || !job.at("jobid").is_string()) {
    return Status::InvalidArgument("jobid: expected a string");
  }
  out.id = job.at("jobid").get<std::string>();
  if (!job.contains("status") || !job.at("status").is_string()) {
    return Status::InvalidArgument("status: expected a string");
  }
  const std::string status = job.at("status").get<std::string>();
  if (status == "Pass") {
    out.kind = OutcomeKind::kCompleted;
  } else if (status == "Killed") {
    out.kind = OutcomeKind::kKilled;
  } else if (status == "Failed") {
    out.kind = OutcomeKind::kUserError;
  } else {
    return Status::InvalidArgument("status: '" + status + "' is not Pass, Killed or Failed");
  }
  {
    Result<std::optional<double>> submitted = PhillyTime(job, "submitted_time");
    if (!submitted.ok()) return submitted.status().WithContext("submitted_time");
    if (!submitted->has_value()) return Status::InvalidArgument("submitted_time: missing");
    out.submit = **submitted;
  }
  if (!job.contains("attempts") || !job.at("attempts").is_array()) {
    return Status::InvalidArgument("attempts: expected an array");
  }
  const json& attempts = job.at("attempts");
  bool unfinished = false;
  for (std::size_t a = 0; a < attempts.size(); ++a) {
    const std::string field = "attempts[" + std::to_string(a) + "]";
    const json& attempt = attempts[a];
    if (!attempt.is_object()) return Status::InvalidArgument(field + ": expected an object");
    Result<std::optional<double>> start = PhillyTime(attempt, "start_time");
    if (!start.ok()) return start.status().WithContext(field + ".start_time");
    Result<std::optional<double>> end = PhillyTime(attempt, "end_time");
    if (!end.ok()) return end.status().WithContext(field + ".end_time");
    if (start->has_value() && end->has_value()) {
      if (**end < **start) {
        return Status::InvalidArgument(field + ".end_time: before its start_time");
      }
      out.run_seconds += **end - **start;
    }
    // The README: a None end_time on the last attempt means the job was still running.
    if (a + 1 == attempts.size() && !end->has_value()) unfinished = true;
    if (!attempt.contains("detail")) continue;
    const json& detail = attempt.at("detail");
    if (!detail.is_array()) return Status::InvalidArgument(field + ".detail: expected an array");
    int gpus = 0;
    for (const json& server : detail) {
      if (!server.is_object() || !server.contains("gpus") || !server.at("gpus").is_array()) {
        return Status::InvalidArgument(field + ".detail: expected objects with a gpus array");
      }
      gpus += static_cast<int>(std::min<std::size_t>(server.at("gpus").size(), kMaxGpus));
    }
    if (gpus > kMaxGpus) {
      return Status::InvalidArgument(field + ".detail: more than " + std::to_string(kMaxGpus) +
                                     " GPUs");
    }
    out.gpus = std::max(out.gpus, gpus);
  }
  if (out.run_seconds > kMaxSeconds) return Status::InvalidArgument("attempts: run time too long");
  if (unfinished) out.run_seconds = 0.0;
  return out;
}

Status ReadPhilly(std::string_view text, const std::string& source, Collector& collector) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    return Status::InvalidArgument(source + ": not valid JSON: " + e.what());
  }
  if (!root.is_array()) return Status::InvalidArgument(source + ": expected a JSON array of jobs");
  for (std::size_t i = 0; i < root.size(); ++i) {
    ++collector.report.records;
    Result<ObservedJob> job = ReadPhillyJob(root[i]);
    if (job.ok()) {
      collector.Add(std::move(job).value());
      continue;
    }
    if (!collector.WantsMessage()) {
      GAVEL_RETURN_IF_ERROR(collector.Bad(std::string()));
      continue;
    }
    // Finding the job's line scans the text: done for the one message that is kept.
    std::string jobid;
    if (root[i].is_object() && root[i].contains("jobid") && root[i].at("jobid").is_string()) {
      jobid = root[i].at("jobid").get<std::string>();
    }
    const int line = LineOfJobId(text, jobid);
    const std::string where = source + ":" + (line > 0 ? std::to_string(line) + ": " : "") +
                              "job " + std::to_string(i) +
                              (jobid.empty() ? "" : " (" + jobid + ")") + ": ";
    GAVEL_RETURN_IF_ERROR(collector.Bad(where + job.status().message()));
  }
  return Status::Ok();
}

// ---- Helios cluster_log.csv ---------------------------------------------------------------

Result<OutcomeKind> HeliosState(std::string_view state) {
  if (state == "COMPLETED") return OutcomeKind::kCompleted;
  // sacct writes "CANCELLED by <uid>".
  if (state.starts_with("CANCELLED")) return OutcomeKind::kKilled;
  if (state == "TIMEOUT") return OutcomeKind::kKilled;
  if (state == "FAILED") return OutcomeKind::kUserError;
  if (state == "NODE_FAIL") return OutcomeKind::kInfrastructureFailure;
  return Status::InvalidArgument(Quoted(state) +
                                 " is not COMPLETED, CANCELLED, FAILED, TIMEOUT or NODE_FAIL");
}

Status ReadHelios(std::string_view text, const std::string& source, Collector& collector) {
  std::map<std::string, std::size_t> column;
  static const char* const kRequired[] = {"job_id",      "gpu_num",    "state",
                                          "submit_time", "start_time", "end_time"};
  bool saw_header = false;
  GAVEL_RETURN_IF_ERROR(ForEachCsvLine(text, [&](int line, const std::vector<std::string>& f) {
    if (!saw_header) {
      saw_header = true;
      for (std::size_t i = 0; i < f.size(); ++i) {
        // A name given twice would leave fewer names than fields (found by trace_helios_fuzz).
        if (!column.emplace(std::string(Trim(f[i])), i).second) {
          return Status::InvalidArgument(Where(source, line, std::string(Trim(f[i])).c_str()) +
                                         "appears twice in the header line");
        }
      }
      for (const char* name : kRequired) {
        if (!column.contains(name)) {
          return Status::InvalidArgument(Where(source, line, name) +
                                         "missing from the header line");
        }
      }
      return Status::Ok();
    }
    ++collector.report.records;
    if (f.size() != column.size()) {
      return collector.Bad(Where(source, line, "row") + "expected " +
                           std::to_string(column.size()) + " fields, found " +
                           std::to_string(f.size()));
    }
    auto field = [&](const char* name) { return Trim(f[column.at(name)]); };
    ObservedJob job;
    job.id = std::string(field("job_id"));
    if (job.id.empty()) return collector.Bad(Where(source, line, "job_id") + "empty");
    const std::optional<double> gpus = ParseBounded(field("gpu_num"), 0.0, kMaxGpus);
    if (!gpus || *gpus != std::floor(*gpus)) {
      return collector.Bad(Where(source, line, "gpu_num") + Quoted(field("gpu_num")) +
                           " is not an integer in 0.." + std::to_string(kMaxGpus));
    }
    job.gpus = static_cast<int>(*gpus);
    const Result<OutcomeKind> kind = HeliosState(field("state"));
    if (!kind.ok()) return collector.Bad(Where(source, line, "state") + kind.status().message());
    job.kind = *kind;
    const Result<double> submit = ParseTraceDateTime(field("submit_time"));
    if (!submit.ok()) {
      return collector.Bad(Where(source, line, "submit_time") + submit.status().message());
    }
    job.submit = *submit;
    // A job cancelled before it started has no start time: no run.
    if (field("start_time").empty() || field("end_time").empty()) {
      collector.Add(std::move(job));
      return Status::Ok();
    }
    const Result<double> start = ParseTraceDateTime(field("start_time"));
    if (!start.ok()) {
      return collector.Bad(Where(source, line, "start_time") + start.status().message());
    }
    const Result<double> end = ParseTraceDateTime(field("end_time"));
    if (!end.ok()) return collector.Bad(Where(source, line, "end_time") + end.status().message());
    if (*end < *start) return collector.Bad(Where(source, line, "end_time") + "before start_time");
    job.run_seconds = *end - *start;
    if (column.contains("duration")) {
      const std::optional<double> duration = ParseBounded(field("duration"), 0.0, kMaxSeconds);
      if (!duration) {
        return collector.Bad(Where(source, line, "duration") + Quoted(field("duration")) +
                             " is not a number of seconds in 0.." + "1e10");
      }
      job.run_seconds = *duration;
    }
    collector.Add(std::move(job));
    return Status::Ok();
  }));
  if (!saw_header) return Status::InvalidArgument(source + ": empty file, expected a header line");
  return Status::Ok();
}

// ---- Alibaba PAI 2020 ---------------------------------------------------------------------

constexpr char kPaiJobHeader[] = "job_name,inst_id,user,status,start_time,end_time";
constexpr char kPaiTaskHeader[] =
    "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type";

// A PAI time: empty = missing; otherwise seconds in [0, 1e10].
std::optional<std::optional<double>> PaiTime(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::optional<double>();
  const std::optional<double> value = ParseBounded(text, 0.0, kMaxSeconds);
  if (!value) return std::nullopt;
  return value;
}

struct PaiTasks {
  double gpu_percent = 0.0;  // sum over tasks of inst_num × plan_gpu
  std::optional<double> first_start;
  std::optional<double> last_end;
  bool any_unfinished = false;
};

Status ReadPaiTasks(std::string_view text, const std::string& source, Collector& collector,
                    std::map<std::string, PaiTasks>& tasks) {
  return ForEachCsvLine(text, [&](int line, const std::vector<std::string>& f) {
    if (line == 1 && Trim(f.empty() ? std::string() : f[0]) == "job_name") return Status::Ok();
    if (f.size() != 10) {
      return collector.Bad(Where(source, line, "row") + "expected 10 fields (" + kPaiTaskHeader +
                           "), found " + std::to_string(f.size()));
    }
    const std::string name(Trim(f[0]));
    if (name.empty()) return collector.Bad(Where(source, line, "job_name") + "empty");
    const std::string_view inst_text = Trim(f[2]);
    const std::optional<double> inst = inst_text.empty()
                                           ? std::optional<double>(0.0)
                                           : ParseBounded(inst_text, 0.0, kMaxPaiInstances);
    if (!inst) {
      return collector.Bad(Where(source, line, "inst_num") + Quoted(inst_text) +
                           " is not a number in 0..1e6");
    }
    const std::string_view gpu_text = Trim(f[8]);
    const std::optional<double> gpu =
        gpu_text.empty() ? std::optional<double>(0.0) : ParseBounded(gpu_text, 0.0, kMaxPaiPercent);
    if (!gpu) {
      return collector.Bad(Where(source, line, "plan_gpu") + Quoted(gpu_text) +
                           " is not a percentage in 0..1e7");
    }
    const auto start = PaiTime(f[4]);
    if (!start) return collector.Bad(Where(source, line, "start_time") + "not a number of seconds");
    const auto end = PaiTime(f[5]);
    if (!end) return collector.Bad(Where(source, line, "end_time") + "not a number of seconds");
    if (start->has_value() && end->has_value() && **end < **start) {
      return collector.Bad(Where(source, line, "end_time") + "before start_time");
    }
    PaiTasks& t = tasks[name];
    t.gpu_percent += *inst * *gpu;
    if (start->has_value() && end->has_value()) {
      t.first_start = std::min(t.first_start.value_or(**start), **start);
      t.last_end = std::max(t.last_end.value_or(**end), **end);
    } else {
      t.any_unfinished = true;
    }
    return Status::Ok();
  });
}

Status ReadPai(std::string_view jobs_text, const std::string& source, std::string_view tasks_text,
               const std::string& tasks_source, Collector& collector) {
  std::map<std::string, PaiTasks> tasks;
  GAVEL_RETURN_IF_ERROR(ReadPaiTasks(tasks_text, tasks_source, collector, tasks));
  return ForEachCsvLine(jobs_text, [&](int line, const std::vector<std::string>& f) {
    if (line == 1 && Trim(f.empty() ? std::string() : f[0]) == "job_name") return Status::Ok();
    ++collector.report.records;
    if (f.size() != 6) {
      return collector.Bad(Where(source, line, "row") + "expected 6 fields (" + kPaiJobHeader +
                           "), found " + std::to_string(f.size()));
    }
    ObservedJob job;
    job.id = std::string(Trim(f[0]));
    if (job.id.empty()) return collector.Bad(Where(source, line, "job_name") + "empty");
    const std::string_view status = Trim(f[3]);
    bool finished = true;
    if (status == "Terminated") {
      job.kind = OutcomeKind::kCompleted;
    } else if (status == "Failed") {
      job.kind = OutcomeKind::kUserError;
    } else if (status == "Running" || status == "Waiting") {
      finished = false;
    } else {
      return collector.Bad(Where(source, line, "status") + Quoted(status) +
                           " is not Terminated, Failed, Running or Waiting");
    }
    const auto submit = PaiTime(f[4]);
    if (!submit || !submit->has_value()) {
      return collector.Bad(Where(source, line, "start_time") +
                           "not a number of seconds (the submission time)");
    }
    job.submit = **submit;
    const auto it = tasks.find(job.id);
    if (it != tasks.end()) {
      const PaiTasks& t = it->second;
      // Fractional GPU requests round up: a job holding half a GPU still needs one.
      const double gpus = std::ceil(t.gpu_percent / 100.0 - 1e-9);
      job.gpus = static_cast<int>(std::min<double>(gpus, kMaxGpus));
      if (finished && !t.any_unfinished && t.first_start && t.last_end) {
        job.run_seconds = *t.last_end - *t.first_start;
      }
    }
    collector.Add(std::move(job));
    return Status::Ok();
  });
}

// ---- Mapping to our job types -------------------------------------------------------------

std::uint64_t HashJobId(std::uint64_t seed, std::string_view id) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a
  for (const char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  // splitmix64 finaliser over (hash + seed): small changes spread over all bits.
  std::uint64_t z = h + seed * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int ScaleFactorFor(int gpus) {
  for (const int sf : kScaleFactors) {
    if (sf >= gpus) return sf;
  }
  return kScaleFactors[std::size(kScaleFactors) - 1];
}

Result<std::vector<TraceJob>> MapJobs(std::vector<ObservedJob> observed,
                                      const ImportOptions& options,
                                      const ThroughputTable& throughputs,
                                      const std::string& source) {
  const std::string& ref = options.reference_gpu_type;
  if (!throughputs.HasGpuType(ref)) {
    return Status::InvalidArgument(source + ": reference GPU type '" + ref +
                                   "' is not in the throughput table");
  }
  std::stable_sort(observed.begin(), observed.end(),
                   [](const ObservedJob& a, const ObservedJob& b) { return a.submit < b.submit; });
  const std::span<const JobTemplate> table = JobTable();
  std::vector<TraceJob> jobs;
  jobs.reserve(observed.size());
  const double origin = observed.empty() ? 0.0 : observed.front().submit;
  for (const ObservedJob& o : observed) {
    const int sf = ScaleFactorFor(o.gpus);
    std::vector<const JobTemplate*> candidates;
    for (const JobTemplate& t : table) {
      if (sf == 1 || t.distributed) candidates.push_back(&t);
    }
    const JobTemplate& t = *candidates[HashJobId(options.seed, o.id) % candidates.size()];
    TraceJob job = TraceJobFromTemplate(t, sf);
    const std::optional<double> tput = throughputs.Isolated(ref, job.key());
    if (!tput.has_value() || !(*tput > 0.0)) {
      return Status::InvalidArgument(source + ": job type " + job.key().ToString() +
                                     " has no positive throughput on the reference GPU type '" +
                                     ref + "'");
    }
    const double duration = o.run_seconds * o.gpus / sf;  // GPU time conserved
    job.total_steps = std::max(1.0, std::ceil(duration * *tput));
    job.duration = Seconds(duration);
    job.arrival_time = Seconds(o.submit - origin);
    // Held to the bounds every trace is held to (core/bounds.h), so that an imported trace
    // can be written and read back (found by trace_philly_fuzz: dates centuries apart).
    const std::string where = source + ": job " + Quoted(o.id) + ": ";
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(job.total_steps, 1.0, bounds::kMaxSteps,
                                             where + "total_steps (run time x throughput)"));
    GAVEL_RETURN_IF_ERROR(
        bounds::CheckRange(duration, 0.0, bounds::kMaxSeconds, where + "run time", " s"));
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(job.arrival_time.value(), 0.0, bounds::kMaxSeconds,
                                             where + "arrival since the first submission",
                                             " s"));
    job.outcome = JobOutcome{o.kind, 1.0};
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  return buffer.str();
}

}  // namespace

const char* PublicTraceFormatName(PublicTraceFormat format) {
  switch (format) {
    case PublicTraceFormat::kPhilly:
      return "philly";
    case PublicTraceFormat::kPai:
      return "pai";
    case PublicTraceFormat::kHelios:
      return "helios";
  }
  return "philly";
}

Result<PublicTraceFormat> ParsePublicTraceFormat(std::string_view name) {
  for (PublicTraceFormat f :
       {PublicTraceFormat::kPhilly, PublicTraceFormat::kPai, PublicTraceFormat::kHelios}) {
    if (name == PublicTraceFormatName(f)) return f;
  }
  return Status::InvalidArgument("unknown public trace format '" + std::string(name) +
                                 "' (philly, pai, helios)");
}

std::string ImportReport::Summary(const std::string& source_name) const {
  std::string s = source_name + ": imported " + std::to_string(imported) + " of " +
                  std::to_string(records) + " jobs";
  if (skipped_no_gpu > 0) s += "; skipped " + std::to_string(skipped_no_gpu) + " without GPUs";
  if (skipped_no_run > 0) {
    s += "; skipped " + std::to_string(skipped_no_run) + " with no completed run";
  }
  if (skipped_bad > 0) {
    s += "; skipped " + std::to_string(skipped_bad) + " unreadable (first: " + first_bad + ")";
  }
  return s;
}

Result<double> ParseTraceDateTime(std::string_view text) {
  text = Trim(text);
  // YYYY-MM-DD HH:MM:SS, digits exactly where expected.
  const auto bad = [&] {
    return Status::InvalidArgument(Quoted(text) + " is not a date 'YYYY-MM-DD HH:MM:SS'");
  };
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != ' ' || text[13] != ':' ||
      text[16] != ':') {
    return bad();
  }
  const auto number = [&](std::size_t at, std::size_t width) -> std::optional<int> {
    int value = 0;
    for (std::size_t i = at; i < at + width; ++i) {
      if (text[i] < '0' || text[i] > '9') return std::nullopt;
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  const auto year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const auto hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return bad();
  if (*year < 1970 || *month < 1 || *month > 12 || *hour > 23 || *minute > 59 || *second > 59) {
    return bad();
  }
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int days_in_month = kDays[*month - 1] + (*month == 2 && leap ? 1 : 0);
  if (*day < 1 || *day > days_in_month) return bad();
  // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
  const int y = *year - (*month <= 2 ? 1 : 0);
  const int era = y / 400;
  const int yoe = y - era * 400;
  const int mp = (*month + 9) % 12;
  const int doy = (153 * mp + 2) / 5 + *day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const long days = static_cast<long>(era) * 146097 + doe - 719468;
  return static_cast<double>(days) * 86400.0 + *hour * 3600.0 + *minute * 60.0 + *second;
}

Result<ImportedTrace> ImportPublicTrace(std::string_view text, PublicTraceFormat format,
                                        const ImportOptions& options,
                                        const ThroughputTable& throughputs,
                                        const std::string& source_name, std::string_view pai_tasks,
                                        const std::string& pai_tasks_name) {
  Collector collector(options.skip_bad_rows);
  switch (format) {
    case PublicTraceFormat::kPhilly:
      GAVEL_RETURN_IF_ERROR(ReadPhilly(text, source_name, collector));
      break;
    case PublicTraceFormat::kHelios:
      GAVEL_RETURN_IF_ERROR(ReadHelios(text, source_name, collector));
      break;
    case PublicTraceFormat::kPai:
      GAVEL_RETURN_IF_ERROR(ReadPai(text, source_name, pai_tasks, pai_tasks_name, collector));
      break;
  }
  ImportedTrace result;
  result.report = collector.report;
  GAVEL_ASSIGN_OR_RETURN(result.jobs,
                         MapJobs(std::move(collector.jobs), options, throughputs, source_name));
  result.report.imported = result.jobs.size();
  return result;
}

Result<ImportedTrace> ImportPublicTraceFile(const std::string& path, PublicTraceFormat format,
                                            const ImportOptions& options,
                                            const ThroughputTable& throughputs) {
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadWhole(path));
  std::string tasks_text;
  std::string tasks_path;
  if (format == PublicTraceFormat::kPai) {
    tasks_path = options.pai_task_table;
    if (tasks_path.empty()) {
      tasks_path = (std::filesystem::path(path).parent_path() / "pai_task_table.csv").string();
    }
    GAVEL_ASSIGN_OR_RETURN(tasks_text, ReadWhole(tasks_path));
  }
  return ImportPublicTrace(text, format, options, throughputs, path, tasks_text, tasks_path);
}

}  // namespace gavel::workload
