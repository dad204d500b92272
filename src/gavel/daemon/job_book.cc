#include "gavel/daemon/job_book.h"

#include <charconv>

#include "gavel/core/bounds.h"
#include "gavel/daemon/error_text.h"

#include <algorithm>
#include <array>
#include <optional>
#include <cmath>
#include <limits>

namespace gavel::daemon {
namespace {

constexpr std::size_t kMaxCommandBytes = 64 * 1024;
constexpr std::size_t kMaxEnvBytes = 64 * 1024;
constexpr std::uint32_t kMaxScaleFactor = 64;

// One throughput sample (steps over training seconds) into an EMA with weight `alpha` on the
// new sample (the first sample is taken as it is). Clamped into bounds.h's range: a report of
// many steps in a moment (a clock step, a lying agent) must not put a throughput the LPs
// cannot scale into the schedule. False (nothing learned) for an empty sample.
template <typename Count>
bool AddSample(double& ema, Count& count, std::uint64_t steps, double seconds, double alpha) {
  if (steps == 0 || !(seconds > 0.0)) return false;
  const double sample = std::clamp(static_cast<double>(steps) / seconds,
                                   bounds::kMinPositiveThroughput, bounds::kMaxThroughput);
  ema = count == 0 ? sample : alpha * sample + (1.0 - alpha) * ema;
  ++count;
  return true;
}

// Whether `now` moved more than `threshold` (a fraction) from `before`, the value the latest
// allocation used (none yet: always).
bool MovedPast(double now, double before, double threshold) {
  return before <= 0.0 || std::abs(now - before) > threshold * before;
}

}  // namespace

JobBook::JobBook(Journal* journal, std::shared_ptr<const ThroughputTable> throughputs,
                 ThroughputLearning learning)
    : journal_(journal), throughputs_(std::move(throughputs)), learning_(learning) {
  // Stand-in types for jobs whose type the table does not know: per scale factor, the key
  // that runs fastest on its slowest GPU type (so the mechanism can place it anywhere).
  const ThroughputTable& table = *throughputs_;
  std::map<int, double> best;
  for (std::size_t k = 0; k < table.job_types().size(); ++k) {
    const JobTypeKey& key = table.job_types()[k];
    double slowest = std::numeric_limits<double>::infinity();
    for (const std::string& type : table.gpu_types()) {
      if (type.find("unconsolidated") != std::string::npos) continue;
      slowest = std::min(slowest, table.Isolated(type, key).value_or(0.0));
    }
    const auto it = best.find(key.scale_factor);
    if (it == best.end() || slowest > it->second) {
      best[key.scale_factor] = slowest;
      representative_key_[key.scale_factor] = static_cast<int>(k);
    }
  }
}

Status JobBook::Restore(std::vector<JobRow> rows, std::uint64_t next_job_id) {
  next_job_id_ = std::max<std::uint64_t>(next_job_id, 1);
  for (JobRow& row : rows) {
    Job job;
    job.row = std::move(row);
    if (!ResolveMechType(job) && IsActive(job)) {
      return Status::InvalidArgument("state database, job " + std::to_string(job.row.id) +
                                     ", field spec.scale_factor: the throughput table has no "
                                     "job type with " +
                                     std::to_string(job.row.spec.scale_factor()) + " GPUs");
    }
    if (job.row.state == wire::RUNNING) job.row.state = wire::QUEUED;  // until its round says
    next_job_id_ = std::max(next_job_id_, job.row.id + 1);
    jobs_.emplace(job.row.id, std::move(job));
  }
  return Status::Ok();
}

Job& JobBook::Add(const rpc::Principal& user, const wire::JobSpec& spec, std::int64_t now,
                  const std::vector<std::string>& live_types) {
  Job job;
  job.row.id = next_job_id_++;
  job.row.user = user.user;
  job.row.spec = spec;
  if (job.row.spec.priority_weight() == 0.0) job.row.spec.set_priority_weight(1.0);
  if (job.row.spec.entity().empty()) job.row.spec.set_entity(user.user);
  job.row.state = wire::QUEUED;
  job.row.submitted_ms = now;
  GAVEL_CHECK(ResolveMechType(job));  // Validate checked the scale factor
  for (const std::string& type : live_types) job.row.per_type[type].prior = Prior(job, type);
  const std::uint64_t id = job.row.id;
  auto [it, inserted] = jobs_.emplace(id, std::move(job));
  GAVEL_CHECK(inserted);
  Touch(it->second);
  journal_->batch.meta["next_job_id"] = std::to_string(next_job_id_);
  journal_->Log(now, "submit", id, 0, "by " + user.user);
  return it->second;
}

void JobBook::AddPriors(const std::string& gpu_type) {
  for (auto& [id, job] : jobs_) {
    if (IsActive(job) && !job.row.per_type.contains(gpu_type)) {
      job.row.per_type[gpu_type].prior = Prior(job, gpu_type);
      Touch(job);
    }
  }
}

bool JobBook::AnyRunnable(std::int64_t now) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
    return IsActive(entry.second) && entry.second.row.next_retry_ms <= now;
  });
}

bool JobBook::ResolveMechType(Job& job) const {
  const ThroughputTable& table = *throughputs_;
  const auto sf = static_cast<int>(job.row.spec.scale_factor());
  const JobTypeKey key{job.row.spec.job_type(), sf};
  job.table_type = table.HasJobType(key);
  if (job.table_type) {
    job.mech_type = key;
    return true;
  }
  const auto rep = representative_key_.find(sf);
  if (rep == representative_key_.end()) return false;
  job.mech_type = table.job_types()[static_cast<std::size_t>(rep->second)];
  return true;
}

double JobBook::Prior(const Job& job, const std::string& gpu_type) const {
  const auto& given = job.row.spec.throughputs();
  const auto it = given.find(gpu_type);
  if (it != given.end()) return it->second;
  if (job.table_type) {
    return throughputs_->Isolated(gpu_type, job.mech_type).value_or(0.0);
  }
  return given.empty() ? 1.0 : 0.0;  // the original's DEFAULT_THROUGHPUT; unlisted = unknown
}

double JobBook::Estimate(const Job& job, const std::string& gpu_type) const {
  const auto it = job.row.per_type.find(gpu_type);
  if (it != job.row.per_type.end() && it->second.measurements > 0) return it->second.measured;
  return Prior(job, gpu_type);
}

double JobBook::ColocatedEstimate(const Job& job, const Job& partner,
                                  const std::string& gpu_type) const {
  const auto measured = job.row.colocated.find({gpu_type, partner.row.spec.job_type()});
  if (measured != job.row.colocated.end() && measured->second.measurements > 0) {
    return measured->second.measured;
  }
  // A job the table lacks, once measured next to table types, stands in as the table type
  // its completed row matches (the estimator's rule, docs/estimator.md).
  const estimator::CompletedRow* own = job.table_type ? nullptr : RowOf(job);
  const estimator::CompletedRow* other = partner.table_type ? nullptr : RowOf(partner);
  if (own != nullptr || other != nullptr) {
    const ThroughputTable& table = *throughputs_;
    const estimator::ReferenceRows* rows =
        ReferenceRowsFor(static_cast<int>(job.row.spec.scale_factor()));
    const std::optional<int> gpu = table.GpuTypeIndex(gpu_type);
    const std::optional<int> own_key =
        own != nullptr ? std::optional<int>(own->match) : table.KeyIndex(job.mech_type);
    const std::optional<int> other_key =
        other != nullptr ? std::optional<int>(other->match) : table.KeyIndex(partner.mech_type);
    if (rows != nullptr && gpu && own_key && other_key) {
      const std::optional<std::size_t> column = rows->Column(*gpu, *other_key);
      const std::optional<double> normalized =
          column ? rows->Reference(*own_key, *column) : std::nullopt;
      if (normalized) return Estimate(job, gpu_type) * *normalized;
    }
  }
  const std::optional<double> alone = throughputs_->Isolated(gpu_type, job.mech_type);
  const std::optional<std::array<double, 2>> together =
      throughputs_->Colocated(gpu_type, job.mech_type, partner.mech_type);
  if (!alone || !together || !(*alone > 0.0)) return 0.0;
  return Estimate(job, gpu_type) * (*together)[0] / *alone;
}

const estimator::ReferenceRows* JobBook::ReferenceRowsFor(int scale_factor) const {
  auto it = reference_rows_.find(scale_factor);
  if (it == reference_rows_.end()) {
    auto rows = estimator::ReferenceRows::Create(throughputs_, scale_factor);
    it = reference_rows_.emplace(scale_factor, rows.ok() ? std::move(rows).value() : nullptr)
             .first;
  }
  return it->second.get();
}

const estimator::CompletedRow* JobBook::RowOf(const Job& job) const {
  if (job.table_type) return nullptr;
  const int scale_factor = static_cast<int>(job.row.spec.scale_factor());
  const estimator::ReferenceRows* rows = ReferenceRowsFor(scale_factor);
  if (rows == nullptr) return nullptr;
  // Observed: the measured co-located rate next to a table type over the isolated estimate.
  std::vector<estimator::RowObservation> observed;
  for (const auto& [key, rate] : job.row.colocated) {
    if (rate.measurements == 0) continue;
    const std::optional<int> gpu = throughputs_->GpuTypeIndex(key.first);
    const std::optional<int> partner = throughputs_->KeyIndex(JobTypeKey{key.second, scale_factor});
    const double alone = Estimate(job, key.first);
    if (!gpu || !partner || !(alone > 0.0) || !rows->Column(*gpu, *partner)) continue;
    observed.push_back({*gpu, *partner, std::clamp(rate.measured / alone, 0.0, 1.0)});
  }
  if (observed.empty()) return nullptr;
  RowCache& cache = rows_[job.row.id];
  if (cache.observed != observed) {  // a new entry has none
    cache.observed = observed;
    Result<estimator::CompletedRow> row =
        rows->Complete(observed, estimator::OnlinePmfOptions(), job.row.id);
    cache.row = row.ok() ? std::optional<estimator::CompletedRow>(std::move(row).value())
                         : std::nullopt;
  }
  return cache.row ? &*cache.row : nullptr;
}

Result<ListPage> ParseListPage(const wire::ListJobsRequest& request) {
  ListPage page;
  page.limit = request.limit() == 0 ? kDefaultListLimit : request.limit();
  if (page.limit > kMaxListLimit) {
    return Status::InvalidArgument("limit: at most " + std::to_string(kMaxListLimit) +
                                   " jobs per page, got " + std::to_string(request.limit()));
  }
  const std::string& token = request.page_token();
  if (!token.empty()) {
    // The token is the last id of the previous page, in decimal.
    const auto [end, error] =
        std::from_chars(token.data(), token.data() + token.size(), page.after_id);
    if (error != std::errc() || end != token.data() + token.size() || token.size() > 20) {
      return Status::InvalidArgument("page_token: not the next_page_token of a previous page");
    }
  }
  return page;
}

Status JobBook::Validate(const wire::JobSpec& spec) const {
  const ThroughputTable& table = *throughputs_;
  if (spec.command_size() == 0) {
    return Status::InvalidArgument("spec.command: empty; give the program to run");
  }
  if (spec.command(0).empty()) return Status::InvalidArgument("spec.command[0]: empty");
  std::size_t bytes = 0;
  for (int i = 0; i < spec.command_size(); ++i) {
    bytes += spec.command(i).size();
    if (spec.command(i).find('\0') != std::string::npos) {
      return Status::InvalidArgument("spec.command[" + std::to_string(i) +
                                     "]: contains a NUL byte");
    }
  }
  if (bytes > kMaxCommandBytes) {
    return Status::InvalidArgument("spec.command: longer than " +
                                   std::to_string(kMaxCommandBytes) + " bytes");
  }
  if (spec.scale_factor() < 1) {
    return Status::InvalidArgument("spec.scale_factor: must be at least 1");
  }
  if (spec.scale_factor() > kMaxScaleFactor) {
    return Status::InvalidArgument("spec.scale_factor: at most " +
                                   std::to_string(kMaxScaleFactor) + " GPUs");
  }
  if (!representative_key_.contains(static_cast<int>(spec.scale_factor()))) {
    std::string have;
    for (const auto& [sf, key] : representative_key_) {
      have += (have.empty() ? "" : ", ") + std::to_string(sf);
    }
    return Status::InvalidArgument("spec.scale_factor: no job type of the throughput table runs "
                                   "on " + std::to_string(spec.scale_factor()) +
                                   " GPUs (it has " + have + ")");
  }
  if (spec.total_steps() < 1) return Status::InvalidArgument("spec.total_steps: must be >= 1");
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(static_cast<double>(spec.total_steps()), 1.0,
                                            bounds::kMaxSteps, "spec.total_steps", " steps"));
  // 0 is the wire's default (the caller gave none; the daemon reads it as 1).
  if (spec.priority_weight() != 0.0) {
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(spec.priority_weight(), bounds::kMinWeight,
                                              bounds::kMaxWeight, "spec.priority_weight"));
  }
  if (!spec.job_type().empty() && spec.throughputs().empty() &&
      !table.HasJobType(JobTypeKey{spec.job_type(), static_cast<int>(spec.scale_factor())})) {
    return Status::InvalidArgument(
        "spec.job_type: " + Quoted(spec.job_type()) + " on " +
        std::to_string(spec.scale_factor()) +
        " GPU(s) is not in the throughput table; give throughput estimates per GPU type "
        "(--throughput TYPE=STEPS_PER_S) or leave the type out");
  }
  bool any_positive = spec.throughputs().empty();
  for (const auto& [type, value] : spec.throughputs()) {
    if (!table.HasGpuType(type)) {
      return Status::InvalidArgument("spec.throughputs[" + Quoted(type) +
                                     "]: not a GPU type of the throughput table (" +
                                     JoinNames(table.gpu_types()) + ")");
    }
    GAVEL_RETURN_IF_ERROR(bounds::CheckThroughput(value, "spec.throughputs[" + Quoted(type) + "]"));
    any_positive = any_positive || value > 0.0;
  }
  if (!any_positive) {
    return Status::InvalidArgument("spec.throughputs: every estimate is 0; the job could run "
                                   "nowhere");
  }
  std::size_t env_bytes = 0;
  for (const auto& [key, value] : spec.env()) {
    env_bytes += key.size() + value.size();
    if (key.empty() || key.find('=') != std::string::npos ||
        key.find('\0') != std::string::npos || value.find('\0') != std::string::npos) {
      return Status::InvalidArgument("spec.env[" + Quoted(key) +
                                     "]: names must be non-empty, without '=' or NUL");
    }
  }
  // Bounded like the command, so that one job's listing entry stays small (a listing must
  // not outgrow gRPC's message limit).
  if (env_bytes > kMaxEnvBytes) {
    return Status::InvalidArgument("spec.env: longer than " + std::to_string(kMaxEnvBytes) +
                                   " bytes in all");
  }
  if (spec.name().size() > 256) return Status::InvalidArgument("spec.name: over 256 bytes");
  if (spec.entity().size() > 128) return Status::InvalidArgument("spec.entity: over 128 bytes");
  if (spec.working_directory().size() > 4096) {
    return Status::InvalidArgument("spec.working_directory: over 4096 bytes");
  }
  // The field's schedulers' inputs (docs/runtime.md, "The field's schedulers under gavel serve").
  if (spec.app().size() > 128) return Status::InvalidArgument("spec.app: over 128 bytes");
  GAVEL_RETURN_IF_ERROR(
      bounds::CheckRange(spec.cpus_per_gpu(), 0.0, bounds::kMaxHostCpus, "spec.cpus_per_gpu", " CPUs"));
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(spec.mem_gb_per_gpu(), 0.0, bounds::kMaxHostMemGb,
                                           "spec.mem_gb_per_gpu", " GB"));
  if (spec.has_utility()) {
    const wire::JobUtility& u = spec.utility();
    if (u.family() != wire::JobUtility::SIGMOID && u.family() != wire::JobUtility::LINEAR) {
      return Status::InvalidArgument("spec.utility.family: must be SIGMOID or LINEAR");
    }
    // The bounds of the text form (core/utility.h, ParseUtility).
    constexpr double kMaxUtilityNumber = 1e12;
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(u.value(), std::numeric_limits<double>::min(),
                                             kMaxUtilityNumber, "spec.utility.value"));
    GAVEL_RETURN_IF_ERROR(bounds::CheckRange(u.time_s(), std::numeric_limits<double>::min(),
                                             kMaxUtilityNumber, "spec.utility.time_s", " s"));
    if (u.family() == wire::JobUtility::SIGMOID) {
      GAVEL_RETURN_IF_ERROR(bounds::CheckRange(u.steepness(), std::numeric_limits<double>::min(),
                                               kMaxUtilityNumber, "spec.utility.steepness",
                                               " 1/s"));
    }
  }
  return Status::Ok();
}

std::optional<UtilityFunction> UtilityOf(const wire::JobSpec& spec) {
  if (!spec.has_utility()) return std::nullopt;
  const wire::JobUtility& u = spec.utility();
  const bool sigmoid = u.family() == wire::JobUtility::SIGMOID;
  return UtilityFunction{sigmoid ? UtilityFamily::kSigmoid : UtilityFamily::kLinear, u.value(),
                         u.time_s(), sigmoid ? u.steepness() : 1.0};
}

// ------------------------------------------------------------------------------------------
// Learning and crediting.

Credited JobBook::CreditMicroTask(Job& job, const MicroTaskSummary& m, std::int64_t now,
                                  bool late) {
  const std::uint64_t total = job.row.spec.total_steps();
  std::uint64_t checkpointed = m.checkpointed.value_or(job.row.steps_done);
  if (checkpointed > total) {
    journal_->Log(now, "bad-report", job.row.id, m.first->worker_id,
                  "checkpointed " + std::to_string(checkpointed) + " > total " +
                      std::to_string(total));
    checkpointed = total;
  }
  const std::uint64_t before = job.row.steps_done;
  const std::uint64_t done = std::max(before, checkpointed);
  Credited credited;
  credited.steps = done - before;
  if (!IsActive(job)) return credited;

  job.row.steps_done = done;
  JobGpuRow& g = job.row.per_type[m.gpu_type];
  if (g.prior == 0.0) g.prior = Prior(job, m.gpu_type);
  g.seconds += m.elapsed_s;
  g.steps += static_cast<double>(credited.steps);
  // Space sharing: next to a partner the job learns its co-located rate, not its own.
  if (m.shared) {
    const auto partner = jobs_.find(m.partner);
    if (partner != jobs_.end()) {
      credited.learned_colocated =
          LearnColocated(job, partner->second, m.gpu_type, m.steps_trained, m.training_s,
                         &credited.worth_resolve);
    }
  } else {
    credited.worth_resolve = LearnIsolated(job, m.gpu_type, m.steps_trained, m.training_s);
  }
  if (m.startup_s > 0.0) {
    job.row.last_startup_s = m.startup_s;
    job.row.startup_total_s += m.startup_s;
  }
  if (!late) {
    job.last_workers = m.workers;
    job.paused = m.expired && !m.crashed && !m.launch_failed && !m.completed;
    job.still_starting = false;
  }
  if (credited.steps > 0) job.row.streak = 0;
  Touch(job);
  return credited;
}

bool JobBook::LearnIsolated(Job& job, const std::string& gpu_type, std::uint64_t steps,
                            double training_s) {
  if (steps == 0 || !(training_s > 0.0)) return false;
  JobGpuRow& g = job.row.per_type[gpu_type];
  AddSample(g.measured, g.measurements, steps, training_s, learning_.ema_alpha);
  Touch(job);
  const auto used = job.used_estimate.find(gpu_type);
  return MovedPast(g.measured, used == job.used_estimate.end() ? 0.0 : used->second,
                   learning_.resolve_threshold);
}

bool JobBook::LearnColocated(Job& job, const Job& partner, const std::string& gpu_type,
                             std::uint64_t steps, double training_s, bool* worth_resolve) {
  const double before = ColocatedEstimate(job, partner, gpu_type);
  if (steps == 0 || !(training_s > 0.0)) return false;  // no sample (AddSample's rule)
  ColocatedRow& rate = job.row.colocated[{gpu_type, partner.row.spec.job_type()}];
  AddSample(rate.measured, rate.measurements, steps, training_s, learning_.ema_alpha);
  Touch(job);
  *worth_resolve = MovedPast(rate.measured, before, learning_.resolve_threshold);
  return true;
}

}  // namespace gavel::daemon
