#include "gavel/daemon/mechanism_seam.h"

#include <algorithm>
#include <cmath>

namespace gavel::daemon {

// The RoundScheduler's clock: seconds since the state directory was created, never going
// backwards even if the wall clock does.
class MechanismSeam::MechanismClock final : public Clock {
 public:
  MechanismClock(const Clock* clock, std::int64_t epoch_ms) : clock_(clock), epoch_(epoch_ms) {}
  Seconds Now() const override {
    const double now = static_cast<double>(clock_->NowMs() - epoch_) / 1000.0;
    last_ = std::max(last_, now);
    return Seconds(last_);
  }

 private:
  const Clock* clock_;
  std::int64_t epoch_;
  mutable double last_ = 0.0;
};

// The policy the RoundScheduler calls: the AllocationService, noting the throughputs each
// problem was posed with (for the re-solve threshold).
class MechanismSeam::PolicyAdapter final : public policy::Policy {
 public:
  PolicyAdapter(const MechanismSeam* seam, std::shared_ptr<AllocationService> service)
      : seam_(seam), service_(std::move(service)) {}
  Result<policy::PolicyOutput> Allocate(const policy::PolicyInput& input) override {
    seam_->NoteEstimatesUsed(input);
    return service_->Allocate(input);
  }

 private:
  const MechanismSeam* seam_;
  std::shared_ptr<AllocationService> service_;
};

// Space sharing: a pair's co-located throughputs from the JobBook — each member's measurement
// next to a job of the other's type, else the table's slowdown applied to its own estimate.
class MechanismSeam::ColocatedFromJobs final : public mechanism::ColocatedThroughputSource {
 public:
  ColocatedFromJobs(const JobBook* jobs, std::shared_ptr<const ThroughputTable> table)
      : jobs_(jobs), table_(std::move(table)) {}
  std::array<double, 2> Colocated(JobId a, JobId b, int table_gpu_type) override {
    const auto ja = jobs_->find(a.value());
    const auto jb = jobs_->find(b.value());
    if (ja == jobs_->end() || jb == jobs_->end()) return {0.0, 0.0};
    const std::string& type = table_->gpu_types().at(static_cast<std::size_t>(table_gpu_type));
    return {jobs_->ColocatedEstimate(ja->second, jb->second, type),
            jobs_->ColocatedEstimate(jb->second, ja->second, type)};
  }

 private:
  const JobBook* jobs_;
  std::shared_ptr<const ThroughputTable> table_;
};

MechanismSeam::MechanismSeam(const CoreOptions* options, JobBook* jobs, const AgentRegistry* agents,
                   Journal* journal, std::shared_ptr<AllocationService> allocation,
                   const Clock* clock, std::int64_t epoch_ms)
    : options_(options),
      jobs_(jobs),
      agents_(agents),
      journal_(journal),
      allocation_(std::move(allocation)),
      clock_(clock),
      epoch_ms_(epoch_ms),
      mech_clock_(std::make_unique<MechanismClock>(clock, epoch_ms)) {
  if (options_->policy.capabilities().packing) {
    colocated_ = std::make_shared<ColocatedFromJobs>(jobs_, options_->throughputs);
  }
}

MechanismSeam::~MechanismSeam() = default;

Seconds MechanismSeam::MechTime(std::int64_t unix_ms) const {
  return Seconds(static_cast<double>(unix_ms - epoch_ms_) / 1000.0);
}

// ------------------------------------------------------------------------------------------
// Keeping the mechanism in step.

void MechanismSeam::Admit(const Job& job) {
  // A job no GPU type of the cluster can run stays out until the cluster changes
  // (ApplyClusterChange admits the missing jobs).
  if (mech_ && !mech_->IsActive(JobId(job.row.id))) (void)AddToMechanism(job);
}

Status MechanismSeam::AddToMechanism(const Job& job) {
  mechanism::JobDescription description;
  description.type = job.mech_type;
  description.total_steps = static_cast<double>(job.row.spec.total_steps());
  description.steps_done = static_cast<double>(job.row.steps_done);
  description.priority_weight = job.row.spec.priority_weight();
  description.arrival = MechTime(job.row.submitted_ms);
  description.entity = job.row.spec.entity();
  NoteStartup(job);
  description.restart_cost = Seconds(RestartCostOf(job));
  // The field's schedulers' inputs (docs/runtime.md, "The field's schedulers under gavel
  // serve"), all from the durable job row, so that they survive a restart.
  description.cpus_per_gpu = job.row.spec.cpus_per_gpu();
  description.mem_gb_per_gpu = job.row.spec.mem_gb_per_gpu();
  description.utility = UtilityOf(job.row.spec);
  if (!job.row.spec.app().empty()) description.app = AppId(job.row.user, job.row.spec.app());
  // Attained service: the stored time run per type, times the GPUs it ran on.
  bool ran = false;
  for (const std::string& type : mech_->layout().type_names()) {
    const auto it = job.row.per_type.find(type);
    const double seconds = it == job.row.per_type.end() ? 0.0 : it->second.seconds;
    description.gpu_seconds_done.push_back(seconds * job.row.spec.scale_factor());
    ran = ran || seconds > 0.0;
  }
  if (!ran) description.gpu_seconds_done.clear();
  if (job.row.next_retry_ms > clock_->NowMs()) {
    description.held_until = MechTime(job.row.next_retry_ms);
  }
  GAVEL_RETURN_IF_ERROR(mech_->AddJob(JobId(job.row.id), description));
  PushOwnEstimates(job);
  return Status::Ok();
}

int MechanismSeam::AppId(const std::string& user, const std::string& app) {
  // Numbered in order of first sight; only equality matters to the policies.
  return app_ids_.try_emplace({user, app}, static_cast<int>(app_ids_.size())).first->second;
}

void MechanismSeam::Remove(const Job& job, std::int64_t now) {
  startup_total_seen_.erase(job.row.id);
  if (!mech_ || !mech_->IsActive(JobId(job.row.id))) return;
  if (pair_of_.contains(job.row.id)) {
    // Its pair still runs: removing it now would abandon the partner's micro-task unbooked.
    leaving_.insert(job.row.id);
    return;
  }
  const Status removed = mech_->RemoveJob(JobId(job.row.id));
  if (!removed.ok()) {
    journal_->Log(now, "internal", job.row.id, 0, removed.ToString());
    needs_rebuild_ = true;
  }
}

void MechanismSeam::TakeEstimates(const Job& job, Learned learned) {
  PushOwnEstimates(job);
  if (learned == Learned::kOwnAndPairs) RefreshPairsOf(job);
}

void MechanismSeam::PushOwnEstimates(const Job& job) {
  if (!mech_ || !mech_->IsActive(JobId(job.row.id))) return;
  const std::vector<std::string>& types = mech_->layout().type_names();
  for (std::size_t t = 0; t < types.size(); ++t) {
    const Status updated = mech_->UpdateThroughput(JobId(job.row.id), static_cast<int>(t),
                                                   jobs_->Estimate(job, types[t]));
    GAVEL_CHECK_MSG(updated.ok(), updated.ToString().c_str());  // validated estimates
  }
  NoteStartup(job);
  const Status updated = mech_->UpdateRestartCost(JobId(job.row.id), Seconds(RestartCostOf(job)));
  GAVEL_CHECK_MSG(updated.ok(), updated.ToString().c_str());  // measured durations
}

void MechanismSeam::NoteStartup(const Job& job) {
  if (!(job.row.last_startup_s > 0.0)) return;
  // A new measurement adds to the running total, which only grows.
  const auto [seen, fresh] = startup_total_seen_.try_emplace(job.row.id, 0.0);
  if (!fresh && seen->second == job.row.startup_total_s) return;
  seen->second = job.row.startup_total_s;
  for (StartupMean* mean : {&startup_by_job_type_[job.row.spec.job_type()], &startup_of_all_}) {
    mean->sum += job.row.last_startup_s;
    ++mean->count;
  }
  startup_means_changed_ = true;
}

void MechanismSeam::RefreshUnmeasuredRestartCosts() {
  startup_means_changed_ = false;
  for (const auto& [id, job] : *jobs_) {
    if (job.row.last_startup_s > 0.0 || !mech_->IsActive(JobId(id))) continue;
    const Status updated = mech_->UpdateRestartCost(JobId(id), Seconds(RestartCostOf(job)));
    GAVEL_CHECK_MSG(updated.ok(), updated.ToString().c_str());
  }
}

double MechanismSeam::RestartCostOf(const Job& job) const {
  if (job.row.last_startup_s > 0.0) return job.row.last_startup_s;
  const auto of_type = startup_by_job_type_.find(job.row.spec.job_type());
  const StartupMean& mean =
      of_type != startup_by_job_type_.end() && of_type->second.count > 0 ? of_type->second
                                                                           : startup_of_all_;
  return mean.count == 0 ? 0.0 : mean.sum / static_cast<double>(mean.count);
}

void MechanismSeam::Hold(const Job& job) {
  if (!mech_ || !mech_->IsActive(JobId(job.row.id))) return;
  GAVEL_CHECK(mech_->HoldJob(JobId(job.row.id), MechTime(job.row.next_retry_ms)).ok());
}

void MechanismSeam::Rebuild(std::int64_t now) {
  ++rebuilds_;
  needs_rebuild_ = false;
  cluster_changed_ = false;
  mech_.reset();
  worker_of_layout_.clear();
  pairs_.clear();
  pair_of_.clear();
  leaving_.clear();

  std::vector<std::uint64_t> workers;
  Result<mechanism::ClusterLayout> layout = agents_->LiveLayout(&workers);
  if (!layout.ok()) {
    if (layout.status().code() != StatusCode::kFailedPrecondition) {
      journal_->Log(now, "internal", 0, 0, layout.status().ToString());
    }
    return;
  }
  // The one place the RoundScheduler's options are made: from the core's settings, and from
  // the live cluster (its prices, whether placement respects host resources).
  mechanism::SchedulerOptions mech_options;
  mech_options.policy = options_->policy.name;
  mech_options.seed = options_->seed;
  mech_options.round_length = options_->round_length;
  mech_options.min_reset_interval = options_->min_reset_interval;
  mech_options.max_failed_attempts = std::nullopt;  // the daemon's retry rules
  mech_options.entity_weights = options_->entity_weights;
  mech_options.realisation.lag_bound_restarts = options_->lag_bound_restarts;
  mech_options.instance_costs = LayoutCosts(*layout);
  // Where agents advertise host CPUs or memory (`gavel worker --cpus/--mem-gb`), placement
  // holds jobs' host demands to them (a job that does not fit waits), as the multi-resource
  // policies (drf, tetris) assume; otherwise the original's placement, unchanged.
  host_limited_ = HostLimited(*layout);
  mech_options.topology_aware_placement = host_limited_;
  mech_options.colocated = colocated_;  // null unless the policy packs
  Result<std::unique_ptr<mechanism::RoundScheduler>> mech =
      mechanism::RoundScheduler::CreateWithPolicy(
          *std::move(layout), options_->throughputs, mech_options, mech_clock_.get(),
          std::make_unique<PolicyAdapter>(this, allocation_), options_->policy.capabilities());
  if (!mech.ok()) {
    journal_->Log(now, "internal", 0, 0, mech.status().ToString());
    return;
  }
  mech_ = *std::move(mech);
  worker_of_layout_ = std::move(workers);
  for (const auto& [id, job] : *jobs_) {
    if (!JobBook::IsActive(job)) continue;
    const Status added = AddToMechanism(job);
    if (!added.ok()) journal_->Log(now, "internal", id, 0, added.ToString());
  }
}

void MechanismSeam::ApplyClusterChange(std::int64_t now) {
  std::vector<std::uint64_t> workers;
  Result<mechanism::ClusterLayout> layout = agents_->LiveLayout(&workers);
  // With no live GPU there is nothing to plan on: the old layout waits for GPUs to return.
  if (!layout.ok()) return;
  std::unordered_map<std::uint64_t, WorkerId> layout_of;
  for (std::size_t i = 0; i < workers.size(); ++i) layout_of[workers[i]] = WorkerId(i);
  std::vector<std::optional<WorkerId>> successor(worker_of_layout_.size());
  for (std::size_t i = 0; i < worker_of_layout_.size(); ++i) {
    const auto it = layout_of.find(worker_of_layout_[i]);
    if (it != layout_of.end()) successor[i] = it->second;
  }
  if (HostLimited(*layout) != host_limited_) {
    // Host resources appeared or went away: placement changes its rules (a rebuild).
    Rebuild(now);
    return;
  }
  std::vector<double> costs = LayoutCosts(*layout);
  const Status changed = mech_->ChangeCluster(*std::move(layout), successor, std::move(costs));
  if (!changed.ok()) {
    journal_->Log(now, "internal", 0, 0,
                  "cluster change refused, rebuilding: " + changed.ToString());
    Rebuild(now);
    return;
  }
  ++cluster_changes_;
  cluster_changed_ = false;
  worker_of_layout_ = std::move(workers);
  for (const auto& [id, job] : *jobs_) {
    if (!JobBook::IsActive(job)) continue;
    if (mech_->IsActive(JobId(id))) {
      PushOwnEstimates(job);  // types that joined get the job's estimates too
    } else {
      (void)AddToMechanism(job);  // still too large for every type: it waits for more GPUs
    }
  }
}

bool MechanismSeam::HostLimited(const mechanism::ClusterLayout& layout) {
  return layout.host_resources().cpus_per_server > 0.0 ||
         layout.host_resources().mem_gb_per_server > 0.0;
}

std::vector<double> MechanismSeam::LayoutCosts(const mechanism::ClusterLayout& layout) const {
  std::vector<double> costs;
  if (!options_->policy.capabilities().needs_instance_costs) return costs;
  for (const std::string& type : layout.type_names()) {
    costs.push_back(options_->instance_costs.at(type));  // LiveLayout left unpriced types out
  }
  return costs;
}

// ------------------------------------------------------------------------------------------
// A round.

std::optional<mechanism::RoundPlan> MechanismSeam::PlanRound(std::int64_t now) {
  if (needs_rebuild_ || !mech_) {
    Rebuild(now);
  } else if (cluster_changed_) {
    ApplyClusterChange(now);
  }
  if (!mech_) return std::nullopt;
  TakeFreshAllocation();
  if (startup_means_changed_) RefreshUnmeasuredRestartCosts();
  Result<mechanism::RoundPlan> plan = mech_->PlanRound();
  if (!plan.ok()) {
    journal_->Log(now, "policy-error", 0, 0, plan.status().ToString());
    needs_rebuild_ = true;  // start from a clean RoundScheduler next time
    return std::nullopt;
  }
  if (plan->allocation_recomputed) RecordAllocation();
  // Every pair of the last round was booked when its members reported (RoundClosed).
  pairs_.clear();
  pair_of_.clear();
  for (const mechanism::Assignment& a : plan->assignments) {
    if (!a.combination.is_pair()) continue;
    pairs_[a.combination] = PairReports{};
    for (int m = 0; m < 2; ++m) pair_of_.emplace(a.combination.member(m).value(), a.combination);
  }
  return *std::move(plan);
}

std::vector<std::uint64_t> MechanismSeam::WorkersOf(const mechanism::Assignment& assignment,
                                               int member) const {
  std::vector<std::uint64_t> workers;
  for (WorkerId w : assignment.workers) {
    const std::uint64_t gpu = worker_of_layout_.at(w.value());
    workers.push_back(member == 0 ? gpu : PartnerSlotOf(gpu));
  }
  return workers;
}

void MechanismSeam::Report(std::uint64_t job_id, std::uint64_t steps, double elapsed_s,
                           std::int64_t now, bool carried) {
  const JobId id(job_id);
  if (const auto pair = pair_of_.find(job_id); pair != pair_of_.end()) {
    const mechanism::Combination combination = pair->second;
    PairReports& reports = pairs_.at(combination);
    const auto i = static_cast<std::size_t>(combination.IndexOf(id));
    reports.steps[i] = static_cast<double>(steps);
    reports.elapsed[i] = std::max(elapsed_s, 1e-3);
    reports.reported[i] = true;
    reports.carried = reports.carried || carried;
    if (reports.reported[0] && reports.reported[1]) BookPair(combination, now);
    return;
  }
  if (!mech_ || !mech_->IsActive(id)) return;  // it left: its micro-task was abandoned
  mechanism::MicroTaskResult result;
  result.combination = mechanism::Combination::Single(id);
  result.steps = {static_cast<double>(steps)};
  result.elapsed = {Seconds(std::max(elapsed_s, 1e-3))};
  result.finished_at = mech_clock_->Now();
  Result<mechanism::ReportOutcome> outcome =
      carried ? mech_->OnMicroTaskCarried(result) : mech_->OnMicroTaskDone(result);
  if (!outcome.ok()) {
    journal_->Log(now, "internal", job_id, 0, outcome.status().ToString());
    needs_rebuild_ = true;
  }
}

void MechanismSeam::BookLateSteps(std::uint64_t job_id, std::uint64_t steps, std::int64_t now) {
  const JobId id(job_id);
  if (steps == 0 || !mech_ || !mech_->IsActive(id)) return;
  const Result<bool> booked = mech_->BookLateSteps(id, static_cast<double>(steps), MechTime(now));
  if (!booked.ok()) {
    journal_->Log(now, "internal", job_id, 0, booked.status().ToString());
    needs_rebuild_ = true;
  }
}

void MechanismSeam::BookPair(const mechanism::Combination& pair, std::int64_t now) {
  const PairReports reports = pairs_.at(pair);
  pairs_.erase(pair);
  for (int m = 0; m < 2; ++m) pair_of_.erase(pair.member(m).value());
  if (mech_) {
    mechanism::MicroTaskResult result;
    result.combination = pair;
    result.steps = {reports.steps[0], reports.steps[1]};
    result.elapsed = {Seconds(reports.elapsed[0]), Seconds(reports.elapsed[1])};
    result.finished_at = mech_clock_->Now();
    // A member with no new checkpointed step fails the pair's micro-task in the mechanism
    // (its partner's steps go unbooked there; the JobBook credits them all the same), unless
    // a member's steps are still on their way (carried).
    Result<mechanism::ReportOutcome> outcome =
        reports.carried ? mech_->OnMicroTaskCarried(result) : mech_->OnMicroTaskDone(result);
    if (!outcome.ok()) {
      journal_->Log(now, "internal", pair.member(0).value(), 0, outcome.status().ToString());
      needs_rebuild_ = true;
    }
  }
  RemoveLeavers(now);
}

void MechanismSeam::RemoveLeavers(std::int64_t now) {
  for (auto it = leaving_.begin(); it != leaving_.end();) {
    if (pair_of_.contains(*it)) {
      ++it;
      continue;
    }
    const JobId id(*it);
    it = leaving_.erase(it);
    if (!mech_ || !mech_->IsActive(id)) continue;  // the booking finished it
    const Status removed = mech_->RemoveJob(id);
    if (!removed.ok()) {
      journal_->Log(now, "internal", id.value(), 0, removed.ToString());
      needs_rebuild_ = true;
    }
  }
}

void MechanismSeam::Skip(const mechanism::Assignment& assignment) {
  (void)mech_->OnMicroTaskFailed(assignment.combination, mech_clock_->Now());
  if (assignment.combination.is_pair()) {
    pairs_.erase(assignment.combination);
    for (int m = 0; m < 2; ++m) pair_of_.erase(assignment.combination.member(m).value());
  }
}

void MechanismSeam::RoundClosed() {
  // Every member reported before the round closed, so no pair is left unbooked; should one
  // be (a bug), its members leave the pair bookkeeping and the mechanism is rebuilt below.
  pairs_.clear();
  pair_of_.clear();
  RemoveLeavers(clock_->NowMs());
  if (mech_ && mech_->HasRunningMicroTasks()) needs_rebuild_ = true;
}

void MechanismSeam::RefreshPairsOf(const Job& job) {
  if (!mech_ || !colocated_ || !mech_->IsActive(JobId(job.row.id))) return;
  for (const auto& [id, other] : *jobs_) {
    if (id == job.row.id || !JobBook::IsActive(other)) continue;
    (void)mech_->RefreshPair(JobId(job.row.id), JobId(id));  // NotFound: not a pair (types)
  }
}

// ------------------------------------------------------------------------------------------
// The allocation.

void MechanismSeam::TakeFreshAllocation() {
  if (allocation_->TakeFreshResult() && mech_) mech_->RequestReallocation();
}

void MechanismSeam::Prefetch(const std::vector<JobId>& leaving,
                             AllocationService::PrefetchUse use) {
  if (!HasActiveJobs()) return;
  std::vector<policy::PolicyInput> inputs;
  inputs.push_back(mech_->PolicyInputAt(mech_clock_->Now()));
  if (!leaving.empty()) inputs.push_back(mech_->PolicyInputAt(mech_clock_->Now(), leaving));
  for (const policy::PolicyInput& input : inputs) NoteEstimatesUsed(input);
  allocation_->Prefetch(std::move(inputs), use);
}

void MechanismSeam::NoteEstimatesUsed(const policy::PolicyInput& input) const {
  for (std::size_t i = 0; i < input.jobs.size(); ++i) {
    const auto it = jobs_->find(input.jobs[i].id.value());
    if (it == jobs_->end()) continue;
    for (std::size_t t = 0; t < input.num_types(); ++t) {
      it->second.used_estimate[input.gpu_types[t]] = input.throughput(i, t);
    }
  }
}

void MechanismSeam::RecordAllocation() {
  const std::vector<std::string>& types = mech_->layout().type_names();
  for (auto& [id, job] : *jobs_) {
    if (!JobBook::IsActive(job)) continue;
    const std::vector<double> x = mech_->AllocationOf(JobId(id));
    bool changed = false;
    for (std::size_t t = 0; t < types.size(); ++t) {
      JobGpuRow& g = job.row.per_type[types[t]];
      if (std::abs(g.allocation - x[t]) > 1e-9) {
        g.allocation = x[t];
        changed = true;
      }
    }
    if (changed) jobs_->Touch(job);
  }
}

// ------------------------------------------------------------------------------------------
// Queries.

std::map<std::string, double> MechanismSeam::AllocationOf(std::uint64_t job_id) const {
  std::map<std::string, double> out;
  if (!mech_ || !mech_->IsActive(JobId(job_id))) return out;
  const std::vector<double> x = mech_->AllocationOf(JobId(job_id));
  const std::vector<std::string>& types = mech_->layout().type_names();
  for (std::size_t t = 0; t < types.size(); ++t) out[types[t]] = x[t];
  return out;
}

std::optional<mechanism::JobAccounting> MechanismSeam::AccountingOf(std::uint64_t job_id) const {
  if (!mech_) return std::nullopt;
  return mech_->AccountingOf(JobId(job_id));
}

std::optional<policy::PolicyInput> MechanismSeam::PolicyInputNow() const {
  if (!mech_ || mech_->num_active_jobs() == 0) return std::nullopt;
  return mech_->PolicyInputAt(mech_clock_->Now());
}

std::vector<std::string> MechanismSeam::gpu_types() const {
  return mech_ ? mech_->layout().type_names() : std::vector<std::string>{};
}

bool MechanismSeam::Holds(std::uint64_t job_id) const {
  return mech_ && mech_->IsActive(JobId(job_id)) && mech_->IsHeld(JobId(job_id));
}

}  // namespace gavel::daemon
