#include "gavel/sim/physics.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gavel/core/shipped_data.h"

namespace gavel::sim {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// The data rows of a small CSV with a header: '#' lines and blank lines skipped; each row split
// on ',' and trimmed, with its 1-based line number. The header must be `header`.
Result<std::vector<std::pair<int, std::vector<std::string>>>> ReadCsv(
    std::string_view text, const std::string& source, const std::string& header) {
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  bool seen_header = false;
  const auto columns = static_cast<std::size_t>(std::count(header.begin(), header.end(), ',') + 1);
  while (std::getline(in, line)) {
    ++number;
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (!seen_header) {
      if (line != header) {
        return Status::InvalidArgument(source + ":" + std::to_string(number) +
                                       ": expected the header \"" + header + "\"");
      }
      seen_header = true;
      continue;
    }
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    std::string cell;
    while (std::getline(cells_in, cell, ',')) cells.push_back(Trim(cell));
    if (cells.size() != columns) {
      return Status::InvalidArgument(source + ":" + std::to_string(number) + ": expected " +
                                     std::to_string(columns) + " fields (" + header + ")");
    }
    rows.emplace_back(number, std::move(cells));
  }
  if (!seen_header) return Status::InvalidArgument(source + ": no header \"" + header + "\"");
  return rows;
}

Result<double> Number(const std::string& cell, const std::string& where, double lo, double hi) {
  try {
    std::size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  std::ostringstream range;
  range << "[" << lo << ", " << hi << "]";
  return Status::InvalidArgument(where + ": \"" + cell + "\" is not a number in " + range.str());
}

std::uint64_t SplitMix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Uniform(std::uint64_t& state) {
  return static_cast<double>(SplitMix(state) >> 11) * 0x1.0p-53;
}

}  // namespace

std::string ModelFamily(std::string_view job_type) {
  const std::size_t paren = job_type.find(" (");
  return std::string(job_type.substr(0, paren));
}

int SizeClass(int gpus) {
  if (gpus <= 1) return 0;
  if (gpus <= 4) return 1;
  if (gpus <= 8) return 2;
  return 3;
}

// ---- Placement penalty ----

double PlacementPenalty::Factor(std::string_view job_type, int servers, int racks) const {
  if (servers <= 1) return 1.0;
  auto it = by_family.find(ModelFamily(job_type));
  if (it == by_family.end()) it = by_family.find("*");
  if (it == by_family.end()) return 1.0;
  return racks > 1 ? it->second.across_racks : it->second.across_servers;
}

Result<PlacementPenalty> PlacementPenalty::Parse(std::string_view text,
                                                 const std::string& source) {
  GAVEL_ASSIGN_OR_RETURN(const auto rows,
                         ReadCsv(text, source, "family,across_servers,across_racks"));
  PlacementPenalty table;
  for (const auto& [line, cells] : rows) {
    const std::string where = source + ":" + std::to_string(line);
    if (cells[0].empty()) return Status::InvalidArgument(where + ": family: empty");
    Factors f;
    GAVEL_ASSIGN_OR_RETURN(f.across_servers, Number(cells[1], where + ": across_servers", 1e-6, 1));
    GAVEL_ASSIGN_OR_RETURN(f.across_racks, Number(cells[2], where + ": across_racks", 1e-6, 1));
    if (!table.by_family.emplace(cells[0], f).second) {
      return Status::InvalidArgument(where + ": family \"" + cells[0] + "\" listed twice");
    }
  }
  return table;
}

Result<PlacementPenalty> PlacementPenalty::LoadFile(const std::string& path) {
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return Parse(text, path);
}

// ---- Restart overhead ----

Seconds RestartOverhead::For(std::string_view job_type) const {
  auto it = by_family.find(ModelFamily(job_type));
  if (it == by_family.end()) it = by_family.find("*");
  return Seconds(it == by_family.end() ? 0.0 : it->second);
}

RestartOverhead RestartOverhead::Uniform(double seconds) {
  RestartOverhead r;
  r.by_family["*"] = seconds;
  return r;
}

Result<RestartOverhead> RestartOverhead::Parse(std::string_view text, const std::string& source) {
  GAVEL_ASSIGN_OR_RETURN(const auto rows, ReadCsv(text, source, "family,seconds"));
  RestartOverhead table;
  for (const auto& [line, cells] : rows) {
    const std::string where = source + ":" + std::to_string(line);
    if (cells[0].empty()) return Status::InvalidArgument(where + ": family: empty");
    GAVEL_ASSIGN_OR_RETURN(const double s, Number(cells[1], where + ": seconds", 0, 86400));
    if (!table.by_family.emplace(cells[0], s).second) {
      return Status::InvalidArgument(where + ": family \"" + cells[0] + "\" listed twice");
    }
  }
  return table;
}

Result<RestartOverhead> RestartOverhead::LoadFile(const std::string& path) {
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return Parse(text, path);
}

// ---- Failures ----

Result<FailureModel> FailureModel::Parse(std::string_view text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range (406)
    return Status::InvalidArgument(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument(source + ": expected an object");
  FailureModel m;
  const auto number = [&](const char* key, double lo, double hi, double& out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    const nlohmann::json& v = j.at(key);
    if (!v.is_number() || !(v.get<double>() >= lo) || !(v.get<double>() <= hi)) {
      std::ostringstream range;
      range << "[" << lo << ", " << hi << "]";
      return Status::InvalidArgument(source + ": " + key + ": expected a number in " +
                                     range.str());
    }
    out = v.get<double>();
    return Status::Ok();
  };
  for (const auto& [key, value] : j.items()) {
    static const std::array<const char*, 7> kKnown = {
        "user_error_probability",  "user_error_mean_seconds", "infra_failures_per_gpu_hour",
        "max_retries",             "retry_backoff_seconds",   "max_retry_backoff_seconds",
        "description"};
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
      return Status::InvalidArgument(source + ": " + key + ": unknown field");
    }
  }
  if (j.contains("user_error_probability")) {
    const nlohmann::json& p = j.at("user_error_probability");
    if (!p.is_array() || p.size() != 4) {
      return Status::InvalidArgument(source +
                                     ": user_error_probability: expected 4 probabilities (jobs "
                                     "of 1, 2-4, 5-8, >8 GPUs)");
    }
    for (std::size_t i = 0; i < 4; ++i) {
      if (!p[i].is_number() || !(p[i].get<double>() >= 0.0) || !(p[i].get<double>() <= 1.0)) {
        return Status::InvalidArgument(source + ": user_error_probability[" + std::to_string(i) +
                                       "]: expected a probability in [0, 1]");
      }
      m.user_error_probability[i] = p[i].get<double>();
    }
  }
  GAVEL_RETURN_IF_ERROR(number("user_error_mean_seconds", 1e-3, 1e9, m.user_error_mean_seconds));
  GAVEL_RETURN_IF_ERROR(
      number("infra_failures_per_gpu_hour", 0.0, 1e3, m.infra_failures_per_gpu_hour));
  double retries = m.max_retries;
  GAVEL_RETURN_IF_ERROR(number("max_retries", 0.0, 1000.0, retries));
  if (retries != std::floor(retries)) {
    return Status::InvalidArgument(source + ": max_retries: expected an integer");
  }
  m.max_retries = static_cast<int>(retries);
  GAVEL_RETURN_IF_ERROR(number("retry_backoff_seconds", 0.0, 1e7, m.retry_backoff_seconds));
  GAVEL_RETURN_IF_ERROR(
      number("max_retry_backoff_seconds", 0.0, 1e7, m.max_retry_backoff_seconds));
  return m;
}

Result<FailureModel> FailureModel::LoadFile(const std::string& path) {
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return Parse(text, path);
}

Seconds FailureModel::Backoff(int failures) const {
  const double b = retry_backoff_seconds * std::pow(2.0, std::max(0, failures - 1));
  return Seconds(std::min(b, max_retry_backoff_seconds));
}

mechanism::WorkerDemand DefaultDemand(std::string_view job_type) {
  // CPU cores and GB of host memory per GPU (docs/simulator.md: why these).
  static const std::map<std::string, mechanism::WorkerDemand, std::less<>> kDefaults = {
      {"ResNet-18", {4.0, 16.0}},     {"ResNet-50", {6.0, 24.0}}, {"Transformer", {2.0, 16.0}},
      {"LM", {2.0, 8.0}},             {"Recommendation", {4.0, 48.0}},
      {"A3C", {8.0, 8.0}},            {"CycleGAN", {3.0, 12.0}}};
  const auto it = kDefaults.find(ModelFamily(job_type));
  return it == kDefaults.end() ? mechanism::WorkerDemand{4.0, 16.0} : it->second;
}

std::string ShippedPlacementPenaltyFile() {
  return ShippedDataFile("placement_penalty.csv");
}
std::string ShippedRestartOverheadFile() {
  return ShippedDataFile("restart_overhead.csv");
}

// ---- The model of one run ----

PhysicsModel::PhysicsModel(PhysicsOptions options, const mechanism::ClusterLayout* layout,
                           std::uint64_t seed)
    : options_(std::move(options)), layout_(layout), seed_(seed) {}

double PhysicsModel::Exponential(JobState& job, double mean) {
  return -mean * std::log1p(-Uniform(job.rng));
}

double PhysicsModel::PlannedSteps(double total_steps,
                                  const std::optional<workload::JobOutcome>& planned) const {
  if (!options_.failures || !planned || planned->kind != workload::OutcomeKind::kKilled) {
    return total_steps;
  }
  // At least one step, so that a kill at a tiny progress still leaves a job to run.
  return std::max(1.0, std::floor(planned->at_progress * total_steps));
}

void PhysicsModel::AdmitJob(JobId job, std::string_view job_type, int gpus, double total_steps,
                            const std::optional<workload::JobOutcome>& planned) {
  if (jobs_.size() <= Index(job)) jobs_.resize(Index(job) + 1);
  JobState& s = jobs_[Index(job)];
  s.job_type = std::string(job_type);
  s.rng = seed_ * 0xD1B54A32D192ED03ULL ^ (job.value() + 1) * 0x9E3779B97F4A7C15ULL;
  if (!options_.failures) return;
  if (planned) {
    // The workload's plan replaces the draws (it was drawn from the same study's mix).
    if (planned->kind == workload::OutcomeKind::kUserError ||
        planned->kind == workload::OutcomeKind::kInfrastructureFailure) {
      s.planned_failure =
          planned->kind == workload::OutcomeKind::kUserError ? Failure::kUser : Failure::kInfra;
      s.planned_at_steps = planned->at_progress * total_steps;
    }
    return;
  }
  const FailureModel& m = *options_.failures;
  // Always three draws, in this order, so a job's fate depends only on (seed, id).
  const double u_user = Uniform(s.rng);
  const double user_at = Exponential(s, m.user_error_mean_seconds);
  if (u_user < m.user_error_probability[static_cast<std::size_t>(SizeClass(gpus))]) {
    s.user_error_at = user_at;
  }
  if (m.infra_failures_per_gpu_hour > 0.0) {
    s.infra_failure_at =
        Exponential(s, 3600.0 / (m.infra_failures_per_gpu_hour * static_cast<double>(gpus)));
  }
}

Outcome PhysicsModel::Launch(const mechanism::Assignment& a, Seconds start) {
  const double lease = a.lease_duration.value();
  const auto members = a.max_steps.size();
  const double gpus = static_cast<double>(a.workers.size());
  // Spread: distinct servers and racks (a job has at most a few dozen GPUs).
  int servers = 0;
  int racks = 0;
  {
    std::vector<int> seen_servers;
    std::vector<int> seen_racks;
    for (WorkerId w : a.workers) {
      const int s = layout_->ServerOf(w);
      if (std::find(seen_servers.begin(), seen_servers.end(), s) == seen_servers.end()) {
        seen_servers.push_back(s);
      }
      const int r = layout_->RackOfServer(s);
      if (std::find(seen_racks.begin(), seen_racks.end(), r) == seen_racks.end()) {
        seen_racks.push_back(r);
      }
    }
    servers = static_cast<int>(seen_servers.size());
    racks = static_cast<int>(seen_racks.size());
  }
  if (servers > 1) ++stats_.spread_micro_tasks;

  // Restart: every launch that does not keep last round's GPUs. Inside the lease at most half
  // of it, so a lease always makes progress; outside it the lease is whole.
  double restart = 0.0;
  if (options_.restart_overhead && !a.lease_extended) {
    for (std::size_t i = 0; i < members; ++i) {
      const JobState& s = jobs_[Index(a.combination.member(static_cast<int>(i)))];
      restart = std::max(restart, options_.restart_overhead->For(s.job_type).value());
    }
    if (!options_.restart_outside_lease) restart = std::min(restart, lease / 2.0);
    stats_.restart_overhead_gpu_seconds += restart * gpus;
  }
  // The lease's own clock starts after the dispatch delay (and, outside the lease, the restart).
  const double lease_start = options_.dispatch_delay.value();
  const double lease_budget = options_.restart_outside_lease ? lease + restart : lease;
  start = start + Seconds(lease_start);

  Outcome out;
  out.steps.assign(a.max_steps.begin(), a.max_steps.end());
  out.finish = start;
  double first_throughput = 0.0;  // member 0's, placement penalty included
  for (std::size_t i = 0; i < members; ++i) {
    JobState& s = jobs_[Index(a.combination.member(static_cast<int>(i)))];
    if (!a.lease_extended && s.started && options_.restart_overhead) ++stats_.restarts;
    s.started = true;
    const double factor = options_.placement_penalty
                              ? options_.placement_penalty->Factor(s.job_type, servers, racks)
                              : 1.0;
    const double tput = a.expected_throughput[i] * factor;
    if (i == 0) first_throughput = tput;
    const double compute = a.max_steps[i] / tput;
    double duration;
    if (options_.whole_steps) {
      // (A thousandth of a step of tolerance: lease x throughput is often whole up to rounding.)
      constexpr double kTolerance = 1e-3;
      const bool gang = members == 1 && a.workers.size() > 1;
      const double lease_time = options_.step_early_leases
                                    ? mechanism::StepShortLease(a.lease_duration, tput).value()
                                    : lease;
      const double training = options_.restart_outside_lease ? lease_time : lease_time - restart;
      // A gang's is the daemon's step bound (AgentExecutor::GangLeaseOf): a round's worth of
      // steps; with on-time rounds, those that fit in the round after the restart, a step short.
      double steps;
      if (!gang) {
        steps = std::ceil(std::max(0.0, training) * tput - kTolerance);
      } else if (options_.step_early_leases) {
        steps = std::max(
            1.0, mechanism::StepShortBound(std::max(0.0, lease - restart) * tput, kTolerance));
      } else {
        steps = std::max(1.0, std::floor(lease * tput + kTolerance));
      }
      const double left = i < a.remaining_steps.size() ? a.remaining_steps[i] : a.max_steps[i];
      out.steps[i] = std::min(left, steps);
      duration = restart + out.steps[i] / tput;
    } else if (restart + compute <= lease_budget) {
      out.steps[i] = a.max_steps[i];
      duration = restart + compute;
    } else {
      out.steps[i] = (lease_budget - restart) * tput;
      duration = lease_budget;
    }
    stats_.placement_slowdown_gpu_seconds +=
        (duration - restart) * (1.0 - factor) * gpus / static_cast<double>(members);
    out.finish = std::max(out.finish, start + Seconds(duration));
  }

  // Failures strike single jobs (pairs only run under packing policies; docs/simulator.md).
  if (options_.failures && members == 1) {
    JobState& s = jobs_[Index(a.combination.member(0))];
    const double ran = (out.finish - start).value();
    // The micro-task fails `t` seconds in: the lease's work is lost.
    const auto strike = [&](double t, Failure kind) {
      out.finish = start + Seconds(t);
      out.steps[0] = 0.0;
      stats_.wasted_gpu_seconds += t * gpus;
      out.failure = kind;
      ++(kind == Failure::kUser ? stats_.user_errors : stats_.infra_failures);
    };
    if (s.planned_failure != Failure::kNone) {
      // The workload's plan (AdmitJob): it fails as its progress reaches the planned point.
      if (s.steps_done + out.steps[0] < s.planned_at_steps) {
        s.steps_done += out.steps[0];
      } else {
        strike(std::min(ran, restart + std::max(0.0, s.planned_at_steps - s.steps_done) /
                                           first_throughput),
               s.planned_failure);
        s.planned_failure = Failure::kNone;  // an infrastructure failure strikes once
        s.planned_at_steps = std::numeric_limits<double>::infinity();
      }
    } else {
      const double fail_at = std::min(s.user_error_at, s.infra_failure_at);
      if (s.run_seconds + ran <= fail_at) {
        s.run_seconds += ran;
      } else {
        const bool user_error = s.user_error_at <= s.infra_failure_at;
        strike(fail_at - s.run_seconds, user_error ? Failure::kUser : Failure::kInfra);
        s.run_seconds = fail_at;
        if (!user_error) {
          s.infra_failure_at =
              s.run_seconds +
              Exponential(s, 3600.0 / (options_.failures->infra_failures_per_gpu_hour * gpus));
        }
      }
    }
  }
  return out;
}

void PhysicsModel::JobFailed(double gpu_seconds) {
  ++stats_.failed_jobs;
  stats_.wasted_gpu_seconds += gpu_seconds;
}

bool PhysicsModel::Retry(JobId job, int* failures) {
  JobState& s = jobs_.at(Index(job));
  ++s.infra_failures;
  *failures = s.infra_failures;
  return s.infra_failures <= options_.failures->max_retries;
}

}  // namespace gavel::sim
