#include "gavel/workload/trace_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

#include "gavel/core/bounds.h"
#include "gavel/core/check.h"
#include "gavel/core/parse_number.h"
#include "gavel/workload/job_stream.h"

namespace gavel::workload {
namespace {

// The columns of our CSV format, in the order the writer emits them.
constexpr const char* kCsvColumns[] = {
    "job_type", "scale_factor", "total_steps",       "arrival_time",  "priority_weight", "slo",
    "duration", "command",      "working_directory", "num_steps_arg", "needs_data_dir"};
constexpr const char* kOptionalCsvColumns[] = {"cpus_per_gpu", "mem_gb_per_gpu", "outcome",
                                               "outcome_at_progress", "app",
                                               "min_workers", "max_workers", "scaling",
                                               "utility"};
// Enough ids for any trace; keeps an app id an int.
constexpr long long kMaxAppId = 1'000'000'000;

std::string_view TrimView(std::string_view s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// "'text'" for messages (built with append: GCC 12 warns falsely on "'" + std::string).
std::string Quote(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted += '\'';
  quoted.append(text);
  quoted += '\'';
  return quoted;
}

std::vector<std::string_view> Split(std::string_view line, char sep) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const auto pos = line.find(sep, start);
    if (pos == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, pos - start));
    start = pos + 1;
  }
}

// Parses one line's fields; every error is "<file>:<line>: <column>: <what>".
class FieldParser {
 public:
  FieldParser(const std::string& source, int line) : source_(source), line_(line) {}

  Status Error(std::string_view column, const std::string& what) const {
    return Status::InvalidArgument(source_ + ":" + std::to_string(line_) + ": " +
                                   std::string(column) + ": " + what);
  }
  Status LineError(const std::string& what) const {
    return Status::InvalidArgument(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  // Like Python's int(): optional surrounding whitespace and sign, decimal digits only.
  Result<long long> Int(std::string_view column, std::string_view text) const {
    std::string_view t = TrimView(text);
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    const std::optional<long long> value = ParseInteger<long long>(t);
    if (!value) return Error(column, Quote(text) + " is not an integer");
    return *value;
  }

  // A finite decimal number (Python's float(), without inf/nan).
  Result<double> Double(std::string_view column, std::string_view text) const {
    std::string_view t = TrimView(text);
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    const std::optional<double> value = ParseFiniteDouble(t);
    if (!value) return Error(column, Quote(text) + " is not a finite number");
    return *value;
  }

  Result<bool> Bool01(std::string_view column, std::string_view text) const {
    GAVEL_ASSIGN_OR_RETURN(const long long v, Int(column, text));
    if (v != 0 && v != 1) return Error(column, Quote(text) + " is not 0 or 1");
    return v == 1;
  }

  Result<int> ScaleFactor(std::string_view text, bool allow_zero) const {
    GAVEL_ASSIGN_OR_RETURN(const long long v, Int("scale_factor", text));
    const int lo = allow_zero ? 0 : 1;
    if (v < lo || v > bounds::kMaxGpus) {
      return Error("scale_factor", Quote(text) + " is not a GPU count in [" + std::to_string(lo) +
                                       ", " + std::to_string(bounds::kMaxGpus) + "]");
    }
    return static_cast<int>(v);
  }

  Result<double> TotalSteps(std::string_view text, bool integral) const {
    double steps = 0.0;
    if (integral) {
      GAVEL_ASSIGN_OR_RETURN(const long long v, Int("total_steps", text));
      steps = static_cast<double>(v);
    } else {
      GAVEL_ASSIGN_OR_RETURN(steps, Double("total_steps", text));
    }
    if (!(steps > 0.0)) return Error("total_steps", Quote(text) + " is not > 0");
    GAVEL_RETURN_IF_ERROR(InRange("total_steps", steps, 0.0, bounds::kMaxSteps, ""));
    return steps;
  }

  Result<double> PriorityWeight(std::string_view text) const {
    GAVEL_ASSIGN_OR_RETURN(const double w, Double("priority_weight", text));
    GAVEL_RETURN_IF_ERROR(
        InRange("priority_weight", w, bounds::kMinWeight, bounds::kMaxWeight, ""));
    return w;
  }

  Result<Seconds> Arrival(std::string_view text) const {
    GAVEL_ASSIGN_OR_RETURN(const double t, Double("arrival_time", text));
    GAVEL_RETURN_IF_ERROR(InRange("arrival_time", t, 0.0, bounds::kMaxSeconds, " s"));
    return Seconds(t);
  }

  // "<file>:<line>: <column>: <value> is outside [lo, hi]" (docs/formats.md, "Bounds").
  Status InRange(std::string_view column, double value, double lo, double hi,
                 const char* unit) const {
    const Status status = bounds::CheckRange(value, lo, hi, std::string(column), unit);
    return status.ok() ? status : LineError(status.message());
  }

 private:
  const std::string& source_;
  int line_;
};

// The original's SLO column: -1 (any negative value) means none.
std::optional<double> SloFromColumn(double value) {
  if (value < 0.0) return std::nullopt;
  return value;
}

Result<TraceJob> ParseGavelLine(const FieldParser& p, std::string_view line) {
  const std::vector<std::string_view> f = Split(line, '\t');
  if (f.size() != 10) {
    return p.LineError(
        "expected 10 tab-separated columns (job_type, command, "
        "working_directory, num_steps_arg, needs_data_dir, total_steps, "
        "scale_factor, priority_weight, SLO, arrival_time), found " +
        std::to_string(f.size()));
  }
  TraceJob job;
  job.job_type = std::string(f[0]);
  if (TrimView(job.job_type).empty()) return p.Error("job_type", "empty");
  job.command = std::string(f[1]);
  job.working_directory = std::string(f[2]);
  job.num_steps_arg = std::string(f[3]);
  GAVEL_ASSIGN_OR_RETURN(job.needs_data_dir, p.Bool01("needs_data_dir", f[4]));
  GAVEL_ASSIGN_OR_RETURN(job.total_steps, p.TotalSteps(f[5], /*integral=*/true));
  GAVEL_ASSIGN_OR_RETURN(job.scale_factor, p.ScaleFactor(f[6], /*allow_zero=*/false));
  GAVEL_ASSIGN_OR_RETURN(job.priority_weight, p.PriorityWeight(f[7]));
  GAVEL_ASSIGN_OR_RETURN(const double slo, p.Double("SLO", f[8]));
  GAVEL_RETURN_IF_ERROR(p.InRange("SLO", slo, -bounds::kMaxSeconds, bounds::kMaxSeconds, ""));
  job.slo_multiplier = SloFromColumn(slo);
  GAVEL_ASSIGN_OR_RETURN(job.arrival_time, p.Arrival(f[9]));
  return job;
}

// Returns nullopt for a row the old parser skipped (scale factor 0).
Result<std::optional<TraceJob>> ParseMsrLine(const FieldParser& p, std::string_view line) {
  const std::vector<std::string_view> f = Split(line, '\t');
  if (f.size() != 7) {
    return p.LineError(
        "expected 7 tab-separated columns (job_type, command, num_steps_arg, "
        "needs_data_dir, total_steps, arrival_time, scale_factor), found " +
        std::to_string(f.size()));
  }
  TraceJob job;
  job.job_type = std::string(f[0]);
  if (TrimView(job.job_type).empty()) return p.Error("job_type", "empty");
  job.command = std::string(f[1]);
  job.num_steps_arg = std::string(f[2]);
  GAVEL_ASSIGN_OR_RETURN(job.needs_data_dir, p.Bool01("needs_data_dir", f[3]));
  GAVEL_ASSIGN_OR_RETURN(job.total_steps, p.TotalSteps(f[4], /*integral=*/true));
  GAVEL_ASSIGN_OR_RETURN(job.arrival_time, p.Arrival(f[5]));
  GAVEL_ASSIGN_OR_RETURN(job.scale_factor, p.ScaleFactor(f[6], /*allow_zero=*/true));
  if (job.scale_factor == 0) return std::optional<TraceJob>();
  return std::optional<TraceJob>(std::move(job));
}

// Splits one CSV line into fields (RFC 4180 quoting; fields cannot span lines).
Result<std::vector<std::string>> SplitCsv(const FieldParser& p, std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  std::size_t i = 0;
  while (true) {
    field.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return p.LineError("unterminated quoted field");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field.push_back(line[i++]);
      }
      if (i < line.size() && line[i] != ',') {
        return p.LineError("unexpected text after a quoted field at character " +
                           std::to_string(i + 1));
      }
    } else {
      while (i < line.size() && line[i] != ',') {
        if (line[i] == '"') {
          return p.LineError("a quote inside an unquoted field at character " +
                             std::to_string(i + 1));
        }
        field.push_back(line[i++]);
      }
    }
    fields.push_back(field);
    if (i >= line.size()) return fields;
    ++i;  // the comma
  }
}

struct CsvHeader {
  std::map<std::string, std::size_t> index;  // column name -> position
  std::size_t size = 0;
};

Result<CsvHeader> ParseCsvHeader(const FieldParser& p, std::string_view line) {
  GAVEL_ASSIGN_OR_RETURN(std::vector<std::string> names, SplitCsv(p, line));
  CsvHeader header;
  header.size = names.size();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string name(TrimView(names[i]));
    bool known = false;
    for (const char* column : kCsvColumns) known = known || name == column;
    // Optional columns, written only when a job has them: host demands per GPU (the
    // simulator's topology, docs/simulator.md) and planned outcomes (job_outcome.h).
    for (const char* column : kOptionalCsvColumns) known = known || name == column;
    if (!known) return p.Error(name, "unknown column in the header");
    if (!header.index.emplace(name, i).second) {
      return p.Error(name, "column appears twice in the header");
    }
  }
  for (const char* required : {"job_type", "scale_factor", "total_steps", "arrival_time"}) {
    if (!header.index.contains(required)) {
      return p.Error(required, "required column missing from the header");
    }
  }
  return header;
}

// The elastic columns (min_workers and max_workers together, scaling only with them) and the
// utility column (core/elastic.h, core/utility.h); empty cells = fixed size / no utility.
template <class Get>
Status ParseElasticAndUtility(const FieldParser& p, const Get& get, TraceJob& job) {
  const auto cell = [&](const char* column) -> std::optional<std::string_view> {
    const std::string* v = get(column);
    if (v == nullptr || TrimView(*v).empty()) return std::nullopt;
    return TrimView(*v);
  };
  const std::optional<std::string_view> min = cell("min_workers");
  const std::optional<std::string_view> max = cell("max_workers");
  const std::optional<std::string_view> scaling = cell("scaling");
  if (min.has_value() != max.has_value()) {
    return p.Error(min ? "max_workers" : "min_workers",
                   "missing (an elastic job gives both min_workers and max_workers)");
  }
  if (scaling && !min) return p.Error("scaling", "given without min_workers and max_workers");
  if (min) {
    ElasticSpec spec;
    GAVEL_ASSIGN_OR_RETURN(const long long lo, p.Int("min_workers", *min));
    GAVEL_ASSIGN_OR_RETURN(const long long hi, p.Int("max_workers", *max));
    GAVEL_RETURN_IF_ERROR(p.InRange("min_workers", static_cast<double>(lo), 1.0,
                                    static_cast<double>(job.scale_factor), ""));
    GAVEL_RETURN_IF_ERROR(p.InRange("max_workers", static_cast<double>(hi),
                                    static_cast<double>(job.scale_factor),
                                    static_cast<double>(kMaxElasticWorkers), ""));
    spec.min_workers = static_cast<int>(lo);
    spec.max_workers = static_cast<int>(hi);
    if (scaling) {
      Result<std::vector<ScalingPoint>> curve = ParseScalingCurve(*scaling);
      if (!curve.ok()) return p.Error("scaling", curve.status().message());
      spec.scaling = std::move(*curve);
    }
    job.elastic = std::move(spec);
  }
  if (const std::optional<std::string_view> u = cell("utility")) {
    Result<UtilityFunction> utility = ParseUtility(*u);
    if (!utility.ok()) return p.Error("utility", utility.status().message());
    job.utility = *utility;
  }
  return Status::Ok();
}

Result<TraceJob> ParseCsvLine(const FieldParser& p, const CsvHeader& header,
                              std::string_view line) {
  GAVEL_ASSIGN_OR_RETURN(std::vector<std::string> f, SplitCsv(p, line));
  if (f.size() != header.size) {
    return p.LineError("expected " + std::to_string(header.size) +
                       " comma-separated columns as in the header, found " +
                       std::to_string(f.size()));
  }
  auto get = [&](const char* column) -> const std::string* {
    const auto it = header.index.find(column);
    return it == header.index.end() ? nullptr : &f[it->second];
  };
  TraceJob job;
  job.job_type = *get("job_type");
  if (TrimView(job.job_type).empty()) return p.Error("job_type", "empty");
  GAVEL_ASSIGN_OR_RETURN(job.scale_factor, p.ScaleFactor(*get("scale_factor"), false));
  GAVEL_ASSIGN_OR_RETURN(job.total_steps, p.TotalSteps(*get("total_steps"), false));
  GAVEL_ASSIGN_OR_RETURN(job.arrival_time, p.Arrival(*get("arrival_time")));
  if (const std::string* w = get("priority_weight"); w != nullptr && !TrimView(*w).empty()) {
    GAVEL_ASSIGN_OR_RETURN(job.priority_weight, p.PriorityWeight(*w));
  }
  if (const std::string* s = get("slo"); s != nullptr && !TrimView(*s).empty()) {
    GAVEL_ASSIGN_OR_RETURN(const double slo, p.Double("slo", *s));
    // 0 is a multiplier the gavel format holds (only negative values mean none there), so the
    // CSV must take it too: a gavel trace converts to CSV and back (found by trace_gavel_fuzz).
    // A negative one is refused (leave the cell empty for none).
    GAVEL_RETURN_IF_ERROR(p.InRange("slo", slo, 0.0, bounds::kMaxSeconds, ""));
    job.slo_multiplier = slo;
  }
  if (const std::string* d = get("duration"); d != nullptr && !TrimView(*d).empty()) {
    GAVEL_ASSIGN_OR_RETURN(const double duration, p.Double("duration", *d));
    if (!(duration > 0.0)) return p.Error("duration", Quote(*d) + " is not > 0");
    GAVEL_RETURN_IF_ERROR(p.InRange("duration", duration, 0.0, bounds::kMaxSeconds, " s"));
    job.duration = Seconds(duration);
  }
  for (const char* column : {"cpus_per_gpu", "mem_gb_per_gpu"}) {
    const std::string* v = get(column);
    if (v == nullptr || TrimView(*v).empty()) continue;
    GAVEL_ASSIGN_OR_RETURN(const double value, p.Double(column, *v));
    const bool cpus = column[0] == 'c';
    GAVEL_RETURN_IF_ERROR(p.InRange(column, value, 0.0,
                                    cpus ? bounds::kMaxHostCpus : bounds::kMaxHostMemGb,
                                    cpus ? " cores" : " GB"));
    (cpus ? job.cpus_per_gpu : job.mem_gb_per_gpu) = value;
  }
  if (const std::string* app = get("app"); app != nullptr && !TrimView(*app).empty()) {
    GAVEL_ASSIGN_OR_RETURN(const long long id, p.Int("app", *app));
    if (id < 0 || id > kMaxAppId) {
      return p.Error("app", Quote(*app) + " is not an app id in [0, " +
                                std::to_string(kMaxAppId) + "]");
    }
    job.app = static_cast<int>(id);
  }
  const std::string* outcome = get("outcome");
  const std::string* at = get("outcome_at_progress");
  const bool has_outcome = outcome != nullptr && !TrimView(*outcome).empty();
  const bool has_at = at != nullptr && !TrimView(*at).empty();
  if (has_outcome) {
    const Result<OutcomeKind> kind = ParseOutcomeKind(TrimView(*outcome));
    if (!kind.ok()) return p.Error("outcome", kind.status().message());
    JobOutcome planned{*kind, 1.0};
    if (has_at) {
      GAVEL_ASSIGN_OR_RETURN(planned.at_progress, p.Double("outcome_at_progress", *at));
      if (!(planned.at_progress > 0.0 && planned.at_progress <= 1.0)) {
        return p.Error("outcome_at_progress", Quote(*at) + " is not in (0, 1]");
      }
    }
    job.outcome = planned;
  } else if (has_at) {
    return p.Error("outcome_at_progress", "given without an outcome");
  }
  GAVEL_RETURN_IF_ERROR(ParseElasticAndUtility(p, get, job));
  if (const std::string* c = get("command"); c != nullptr) job.command = *c;
  if (const std::string* w = get("working_directory"); w != nullptr) job.working_directory = *w;
  if (const std::string* n = get("num_steps_arg"); n != nullptr) job.num_steps_arg = *n;
  job.needs_data_dir = false;
  if (const std::string* n = get("needs_data_dir"); n != nullptr && !TrimView(*n).empty()) {
    GAVEL_ASSIGN_OR_RETURN(job.needs_data_dir, p.Bool01("needs_data_dir", *n));
  }
  return job;
}

// Python's '%f' % x: fixed, 6 decimals, correctly rounded (as glibc's printf).
std::string FormatFixed6(double value) {
  char buffer[400];  // %f of the largest double needs 317 characters
  const int n = std::snprintf(buffer, sizeof buffer, "%f", value);
  GAVEL_CHECK(n > 0 && static_cast<std::size_t>(n) < sizeof buffer);
  return std::string(buffer, static_cast<std::size_t>(n));
}

// 17 significant digits: reads back to the same double.
std::string FormatRoundTrip(double value) {
  char buffer[64];
  const int n = std::snprintf(buffer, sizeof buffer, "%.17g", value);
  GAVEL_CHECK(n > 0 && static_cast<std::size_t>(n) < sizeof buffer);
  return std::string(buffer, static_cast<std::size_t>(n));
}

// Python's '%d' % x for a float x: truncation toward zero.
std::string PyPercentD(double value) {
  return std::to_string(static_cast<long long>(std::trunc(value)));
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos && TrimView(text).size() == text.size()) {
    return text;
  }
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted.push_back('"');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

Status CheckWritable(const std::vector<TraceJob>& jobs, TraceFormat format) {
  const char* forbidden = format == TraceFormat::kGavel ? "\t\r\n" : "\r\n";
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const TraceJob& job = jobs[i];
    const std::string where = "job " + std::to_string(i) + ": ";
    for (const auto& [name, text] :
         {std::pair<const char*, const std::string*>{"job_type", &job.job_type},
          {"command", &job.command},
          {"working_directory", &job.working_directory},
          {"num_steps_arg", &job.num_steps_arg}}) {
      if (text->find_first_of(forbidden) != std::string::npos) {
        return Status::InvalidArgument(where + name + " holds a character the " +
                                       TraceFormatName(format) + " format cannot store");
      }
    }
    // Python's %d would fail on these; the int64 conversion in PyPercentD must not overflow.
    for (const double v : {job.total_steps, job.priority_weight}) {
      if (!std::isfinite(v) || std::fabs(v) >= 9.0e18) {
        return Status::InvalidArgument(where + "total_steps or priority_weight is not finite");
      }
    }
    if (job.scale_factor < 1) return Status::InvalidArgument(where + "scale_factor < 1");
  }
  return ValidateArrivalOrder(jobs);
}

}  // namespace

const char* TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kGavel:
      return "gavel";
    case TraceFormat::kMsrLegacy:
      return "msr";
    case TraceFormat::kCsv:
      return "csv";
  }
  return "?";
}

Result<TraceFormat> ParseTraceFormat(std::string_view name) {
  for (TraceFormat f : {TraceFormat::kGavel, TraceFormat::kMsrLegacy, TraceFormat::kCsv}) {
    if (name == TraceFormatName(f)) return f;
  }
  return Status::InvalidArgument("unknown trace format '" + std::string(name) +
                                 "' (expected gavel, msr or csv)");
}

Result<std::vector<TraceJob>> ParseTrace(std::string_view text, TraceFormat format,
                                         const std::string& source_name) {
  std::vector<TraceJob> jobs;
  std::optional<CsvHeader> csv_header;
  std::optional<Seconds> previous_arrival;
  int line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto newline = text.find('\n', pos);
    std::string_view line = text.substr(
        pos, newline == std::string_view::npos ? std::string_view::npos : newline - pos);
    pos = newline == std::string_view::npos ? text.size() : newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (TrimView(line).empty()) continue;
    const FieldParser parser(source_name, line_number);

    std::optional<TraceJob> job;
    switch (format) {
      case TraceFormat::kGavel: {
        GAVEL_ASSIGN_OR_RETURN(job, ParseGavelLine(parser, line));
        break;
      }
      case TraceFormat::kMsrLegacy: {
        GAVEL_ASSIGN_OR_RETURN(job, ParseMsrLine(parser, line));
        break;
      }
      case TraceFormat::kCsv: {
        if (!csv_header.has_value()) {
          GAVEL_ASSIGN_OR_RETURN(csv_header, ParseCsvHeader(parser, line));
          continue;
        }
        GAVEL_ASSIGN_OR_RETURN(job, ParseCsvLine(parser, *csv_header, line));
        break;
      }
    }
    if (!job.has_value()) continue;  // a skipped legacy row
    if (previous_arrival.has_value() && job->arrival_time < *previous_arrival) {
      return parser.Error("arrival_time", FormatRoundTrip(job->arrival_time.value()) +
                                              " is earlier than the previous job's arrival time " +
                                              FormatRoundTrip(previous_arrival->value()) +
                                              " (arrival times must be non-decreasing)");
    }
    previous_arrival = job->arrival_time;
    if (jobs.size() >= bounds::kMaxJobs) {
      return parser.LineError("more than " + std::to_string(bounds::kMaxJobs) + " jobs");
    }
    jobs.push_back(std::move(*job));
  }
  if (format == TraceFormat::kCsv && !csv_header.has_value()) {
    return Status::InvalidArgument(source_name + ": empty CSV trace, expected a header line");
  }
  return jobs;
}

Result<std::vector<TraceJob>> ReadTraceFile(const std::string& path, TraceFormat format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open the trace file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": error while reading the trace file");
  return ParseTrace(contents.str(), format, path);
}

std::string FormatGavelJob(const TraceJob& job) {
  std::string out;
  out += job.job_type;
  out += '\t';
  out += job.command;
  out += '\t';
  out += job.working_directory;
  out += '\t';
  out += job.num_steps_arg;
  out += '\t';
  out += job.needs_data_dir ? "1" : "0";
  out += '\t';
  out += PyPercentD(job.total_steps);
  out += '\t';
  out += std::to_string(job.scale_factor);
  out += '\t';
  out += PyPercentD(job.priority_weight);
  out += '\t';
  out += FormatFixed6(job.slo_multiplier.value_or(-1.0));
  return out;
}

Result<std::string> FormatTrace(const std::vector<TraceJob>& jobs, TraceFormat format) {
  if (format == TraceFormat::kMsrLegacy) {
    return Status::InvalidArgument("the legacy msr trace format is read-only");
  }
  GAVEL_RETURN_IF_ERROR(CheckWritable(jobs, format));
  std::string out;
  if (format == TraceFormat::kGavel) {
    for (const TraceJob& job : jobs) {
      out += FormatGavelJob(job);
      out += '\t';
      out += FormatFixed6(job.arrival_time.value());
      out += '\n';
    }
    return out;
  }
  // The optional columns only when a job has them, so plain traces keep the plain header.
  const bool with_demands = std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& j) {
    return j.cpus_per_gpu.has_value() || j.mem_gb_per_gpu.has_value();
  });
  const bool with_outcomes = std::any_of(jobs.begin(), jobs.end(),
                                         [](const TraceJob& j) { return j.outcome.has_value(); });
  const bool with_apps = std::any_of(jobs.begin(), jobs.end(),
                                     [](const TraceJob& j) { return j.app.has_value(); });
  const bool with_elastic = std::any_of(jobs.begin(), jobs.end(),
                                        [](const TraceJob& j) { return j.elastic.has_value(); });
  const bool with_utility = std::any_of(jobs.begin(), jobs.end(),
                                        [](const TraceJob& j) { return j.utility.has_value(); });
  bool first = true;
  for (const char* column : kCsvColumns) {
    if (!first) out += ',';
    out += column;
    first = false;
  }
  if (with_demands) out += ",cpus_per_gpu,mem_gb_per_gpu";
  if (with_outcomes) out += ",outcome,outcome_at_progress";
  if (with_apps) out += ",app";
  if (with_elastic) out += ",min_workers,max_workers,scaling";
  if (with_utility) out += ",utility";
  out += '\n';
  const auto optional = [](const std::optional<double>& v) {
    return v.has_value() ? FormatRoundTrip(*v) : std::string();
  };
  for (const TraceJob& job : jobs) {
    out += CsvField(job.job_type) + ',';
    out += std::to_string(job.scale_factor) + ',';
    out += FormatRoundTrip(job.total_steps) + ',';
    out += FormatRoundTrip(job.arrival_time.value()) + ',';
    out += FormatRoundTrip(job.priority_weight) + ',';
    if (job.slo_multiplier.has_value()) out += FormatRoundTrip(*job.slo_multiplier);
    out += ',';
    if (job.duration.has_value()) out += FormatRoundTrip(job.duration->value());
    out += ',';
    out += CsvField(job.command) + ',';
    out += CsvField(job.working_directory) + ',';
    out += CsvField(job.num_steps_arg) + ',';
    out += job.needs_data_dir ? "1" : "0";
    if (with_demands) {
      // Appended piece by piece: gcc 12 warns falsely (-Wrestrict) on "," + std::string.
      out += ',';
      out += optional(job.cpus_per_gpu);
      out += ',';
      out += optional(job.mem_gb_per_gpu);
    }
    if (with_outcomes) {
      out += ",";
      if (job.outcome) {
        out += OutcomeKindName(job.outcome->kind);
        out += ',';
        out += FormatRoundTrip(job.outcome->at_progress);
      } else {
        out += ",";
      }
    }
    if (with_apps) {
      out += ',';
      if (job.app) out += std::to_string(*job.app);
    }
    if (with_elastic) {
      out += ',';
      if (job.elastic) {
        out += std::to_string(job.elastic->min_workers);
        out += ',';
        out += std::to_string(job.elastic->max_workers);
        out += ',';
        out += FormatScalingCurve(job.elastic->scaling);
      } else {
        out += ",,";
      }
    }
    if (with_utility) {
      out += ',';
      if (job.utility) out += FormatUtility(*job.utility);
    }
    out += '\n';
  }
  return out;
}

Status WriteTraceFile(const std::string& path, const std::vector<TraceJob>& jobs,
                      TraceFormat format) {
  GAVEL_ASSIGN_OR_RETURN(const std::string text, FormatTrace(jobs, format));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError(path + ": cannot open the trace file for writing");
  out << text;
  out.flush();
  if (!out) return Status::IoError(path + ": error while writing the trace file");
  return Status::Ok();
}

}  // namespace gavel::workload
