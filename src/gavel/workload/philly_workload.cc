#include "gavel/workload/philly_workload.h"

#include <cmath>
#include <numbers>
#include <set>
#include <span>
#include <utility>

#include "gavel/core/check.h"
#include "gavel/core/shipped_data.h"
#include "gavel/workload/job_table.h"

namespace gavel::workload {
namespace {

constexpr double kSecondsPerHour = 3600.0;
constexpr double kHoursPerDay = 24.0;

// Stream offsets, apart from the original generator's seed+2/+3/+6 so both can coexist.
constexpr std::uint64_t kJobStream = 11;
constexpr std::uint64_t kArrivalStream = 12;
constexpr std::uint64_t kOutcomeStream = 13;

bool InRange(double value, double low, double high) {
  return std::isfinite(value) && value >= low && value <= high;
}

Status Bound(bool ok, const std::string& what) {
  return ok ? Status::Ok() : Status::InvalidArgument("Philly workload: " + what);
}

}  // namespace

std::string DefaultPhillyDistributionFile() {
  return ShippedDataFile("philly_job_distribution.csv");
}

Status ValidatePhillyWorkloadOptions(const PhillyWorkloadOptions& o) {
  GAVEL_RETURN_IF_ERROR(Bound(o.distribution != nullptr && !o.distribution->rows.empty(),
                              "no (duration, num_gpus) rows"));
  GAVEL_RETURN_IF_ERROR(Bound(InRange(o.mean_interarrival.value(), 0.0, 1e9),
                              "the mean inter-arrival time must be in [0, 1e9] seconds"));
  GAVEL_RETURN_IF_ERROR(Bound(InRange(o.diurnal_amplitude, 0.0, 1.0) && o.diurnal_amplitude < 1.0,
                              "the diurnal amplitude must be in [0, 1)"));
  GAVEL_RETURN_IF_ERROR(Bound(InRange(o.peak_hour, 0.0, kHoursPerDay) && o.peak_hour < 24.0,
                              "the peak hour must be in [0, 24)"));
  GAVEL_RETURN_IF_ERROR(Bound(InRange(o.start_hour, 0.0, kHoursPerDay) && o.start_hour < 24.0,
                              "the start hour must be in [0, 24)"));
  GAVEL_RETURN_IF_ERROR(Bound(InRange(o.killed_share, 0.0, 1.0) &&
                                  InRange(o.unsuccessful_share, 0.0, 1.0) &&
                                  o.killed_share + o.unsuccessful_share <= 1.0,
                              "the killed and unsuccessful shares must be in [0, 1] and sum "
                              "to at most 1"));
  GAVEL_RETURN_IF_ERROR(
      Bound(InRange(o.user_error_share, 0.0, 1.0), "the user-error share must be in [0, 1]"));
  GAVEL_RETURN_IF_ERROR(Bound(InRange(o.user_error_max_progress, 0.0, 1.0) &&
                                  o.user_error_max_progress > 0.0 &&
                                  o.user_error_max_progress < 1.0,
                              "the user-error progress bound must be in (0, 1)"));
  return Status::Ok();
}

double PhillyDiurnalFactor(const PhillyWorkloadOptions& o, Seconds t) {
  const double hours = t.value() / kSecondsPerHour + o.start_hour - o.peak_hour;
  return 1.0 + o.diurnal_amplitude * std::cos(2.0 * std::numbers::pi * hours / kHoursPerDay);
}

PhillyJobStream::PhillyJobStream(const PhillyWorkloadOptions& options,
                                 std::map<JobTypeKey, double> reference_throughput)
    : options_(options),
      reference_throughput_(std::move(reference_throughput)),
      job_rng_(options.seed + kJobStream),
      arrival_rng_(options.seed + kArrivalStream),
      outcome_rng_(options.seed + kOutcomeStream) {
  const std::span<const JobTemplate> table = JobTable();
  for (std::size_t i = 0; i < table.size(); ++i) {
    single_gpu_templates_.push_back(i);
    if (table[i].distributed) distributed_templates_.push_back(i);
  }
}

Result<std::unique_ptr<PhillyJobStream>> PhillyJobStream::Create(
    const PhillyWorkloadOptions& options, const ThroughputTable& throughputs) {
  GAVEL_RETURN_IF_ERROR(ValidatePhillyWorkloadOptions(options));
  const std::string& ref = options.reference_gpu_type;
  if (!throughputs.HasGpuType(ref)) {
    return Status::InvalidArgument("Philly workload: reference GPU type '" + ref +
                                   "' is not in the throughput table");
  }
  std::set<int> sizes;
  for (const PhillyJobDistribution::Row& row : options.distribution->rows) {
    sizes.insert(row.num_gpus);
  }
  std::map<JobTypeKey, double> reference_throughput;
  for (const JobTemplate& t : JobTable()) {
    for (int sf : sizes) {
      if (sf != 1 && !t.distributed) continue;
      const JobTypeKey key{t.model, sf};
      const std::optional<double> tput = throughputs.Isolated(ref, key);
      if (!tput.has_value() || !(*tput > 0.0)) {
        return Status::InvalidArgument("Philly workload: job type " + key.ToString() +
                                       " has no positive throughput on the reference GPU type '" +
                                       ref + "'");
      }
      reference_throughput.emplace(key, *tput);
    }
  }
  return std::unique_ptr<PhillyJobStream>(
      new PhillyJobStream(options, std::move(reference_throughput)));
}

std::optional<Seconds> PhillyJobStream::PeekArrival() const {
  if (options_.max_jobs.has_value() && num_generated_ >= *options_.max_jobs) return std::nullopt;
  return next_arrival_;
}

TraceJob PhillyJobStream::Pop() {
  GAVEL_CHECK_MSG(PeekArrival().has_value(), "Pop() on an exhausted PhillyJobStream");
  TraceJob job = DrawJob();
  job.arrival_time = next_arrival_;
  if (options_.label_outcomes) job.outcome = DrawOutcome();
  ++num_generated_;
  next_arrival_ = DrawNextArrival(next_arrival_);
  return job;
}

TraceJob PhillyJobStream::DrawJob() {
  const auto& rows = options_.distribution->rows;
  const PhillyJobDistribution::Row& row = rows[job_rng_.ChoiceIndex(rows.size())];
  const std::vector<std::size_t>& candidates =
      row.num_gpus == 1 ? single_gpu_templates_ : distributed_templates_;
  const JobTemplate& t = JobTable()[candidates[job_rng_.ChoiceIndex(candidates.size())]];
  TraceJob job = TraceJobFromTemplate(t, row.num_gpus);
  const auto tput = reference_throughput_.find(job.key());
  GAVEL_CHECK_MSG(tput != reference_throughput_.end(), "job type validated in Create()");
  job.total_steps = row.duration.value() * tput->second;
  job.duration = row.duration;
  return job;
}

JobOutcome PhillyJobStream::DrawOutcome() {
  // Two draws per job, always, so that job i's outcome does not depend on job i-1's kind.
  const double kind_draw = outcome_rng_.Random();
  const double progress_draw = outcome_rng_.Random();
  JobOutcome outcome;
  const double unsuccessful_end = options_.unsuccessful_share;
  const double user_end = unsuccessful_end * options_.user_error_share;
  const double bound = options_.user_error_max_progress;
  if (kind_draw < user_end) {
    outcome.kind = OutcomeKind::kUserError;
    outcome.at_progress = bound * (1.0 - progress_draw);  // (0, bound]
  } else if (kind_draw < unsuccessful_end) {
    outcome.kind = OutcomeKind::kInfrastructureFailure;
    outcome.at_progress = bound + (1.0 - bound) * (1.0 - progress_draw);  // (bound, 1]
  } else if (kind_draw < unsuccessful_end + options_.killed_share) {
    // The table's duration is the observed run time, which for a killed job ends at the kill.
    outcome.kind = OutcomeKind::kKilled;
    outcome.at_progress = 1.0;
  }
  return outcome;
}

Seconds PhillyJobStream::DrawNextArrival(Seconds after) {
  const double lam = options_.mean_interarrival.value();
  if (lam == 0.0) return after;
  const double amplitude = options_.diurnal_amplitude;
  const double peak_rate = (1.0 + amplitude) / lam;
  double t = after.value();
  // Thinning: candidates at the peak rate, each kept with probability rate(t) / peak rate.
  while (true) {
    t += -std::log(1.0 - arrival_rng_.Random()) / peak_rate;
    const double keep = PhillyDiurnalFactor(options_, Seconds(t)) / (1.0 + amplitude);
    if (arrival_rng_.Random() < keep) return Seconds(t);
  }
}

Result<std::vector<TraceJob>> GeneratePhillyJobs(const PhillyWorkloadOptions& options,
                                                 const ThroughputTable& throughputs,
                                                 std::size_t count) {
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<PhillyJobStream> stream,
                         PhillyJobStream::Create(options, throughputs));
  std::vector<TraceJob> jobs;
  jobs.reserve(count);
  while (jobs.size() < count && stream->PeekArrival().has_value()) jobs.push_back(stream->Pop());
  return jobs;
}

}  // namespace gavel::workload
