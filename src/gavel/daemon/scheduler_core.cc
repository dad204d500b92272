// The file reads top down: construction, the round flow (Tick and its phases), recovery,
// then the requests (users, agents), crediting a finished micro-task with the failure policy,
// the mechanism's queries and durability.
#include "gavel/daemon/scheduler_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "gavel/core/bounds.h"
#include "gavel/daemon/error_text.h"

namespace gavel::daemon {
namespace {

// Who may join: GPU types of the table, and under a cost policy only priced ones.
AgentRules RulesFor(const CoreOptions& options) {
  AgentRules rules;
  rules.throughputs = options.throughputs.get();
  rules.policy = options.policy.name;
  if (options.policy.capabilities().needs_instance_costs) {
    rules.required_prices = &options.instance_costs;
  }
  return rules;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Construction.

SchedulerCore::SchedulerCore(CoreOptions options, Store* store, AgentTransport* transport,
                             const Clock* clock, CoreHooks hooks)
    : options_(std::move(options)),
      store_(store),
      gated_(transport),
      transport_(&gated_),
      clock_(clock),
      hooks_(std::move(hooks)),
      agents_(&journal_, RulesFor(options_)),
      jobs_(&journal_, options_.throughputs, options_.learning) {}

SchedulerCore::~SchedulerCore() {
  seam_.reset();
  allocation_.reset();
}

Result<std::unique_ptr<SchedulerCore>> SchedulerCore::Create(CoreOptions options, Store* store,
                                                             AgentTransport* transport,
                                                             const Clock* clock,
                                                             CoreHooks hooks) {
  GAVEL_CHECK(store != nullptr && transport != nullptr && clock != nullptr);
  GAVEL_RETURN_IF_ERROR(ValidateCoreOptions(options));
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<policy::Policy> inner, options.policy.Make(options.seed));

  std::unique_ptr<SchedulerCore> core(new SchedulerCore(std::move(options), store, transport,
                                                        clock, std::move(hooks)));
  core->allocation_ = std::make_shared<AllocationService>(
      std::move(inner), core->options_.background_solves, core->hooks_.wake);
  GAVEL_RETURN_IF_ERROR(core->Recover());
  return core;
}

// ------------------------------------------------------------------------------------------
// The round flow, on the clock: Tick does what is due — declare silent agents dead, close
// the round (every report in, or its end came: what is still out is carried), kill the
// closing round's stragglers at its deadline, solve ahead at mid-round, start the next round
// (plan → AgentExecutor). The requests below feed it.

void SchedulerCore::CheckHeartbeats(std::int64_t now) {
  const auto timeout_ms = static_cast<std::int64_t>(options_.heartbeat_timeout.value() * 1000.0);
  for (const std::string& id : agents_.DeclareSilentDead(now, timeout_ms)) {
    seam_->MarkClusterChanged();  // the mechanism drops its GPUs next round
    if (round_) AbandonAgentTasks(*round_, id, "its worker died", "a GPU of the job died", now);
    if (closing_) AbandonAgentTasks(*closing_, id, "its worker died", "a GPU of the job died", now);
  }
}

bool SchedulerCore::ShouldStartRound(std::int64_t now) const {
  if (round_) return false;
  const int gpus = agents_.LiveGpus();
  if (gpus == 0) return false;
  // Only the very first round waits for the expected cluster; later ones run on what is left.
  if (next_round_id_ == 0 && gpus < options_.expected_gpus) return false;
  return Settled(now) && jobs_.AnyRunnable(now);
}

void SchedulerCore::Tick() {
  const std::int64_t now = clock_->NowMs();
  CheckHeartbeats(now);
  seam_->TakeFreshAllocation();
  if (closing_ && (now >= closing_->deadline_ms() || closing_->AllReported())) {
    ExpireClosing(now);
  }
  if (round_) {
    if (round_->idle()) {
      // An idle round ends early when the job set changed and something is runnable.
      if (now >= round_->end_ms() || (jobs_changed_ && Settled(now) && jobs_.AnyRunnable(now))) {
        CloseRound();
      }
    } else if (round_->AllReported()) {
      CloseRound();
    } else if (options_.rounds_on_time && now >= round_->end_ms() + BoundaryWaitMs()) {
      // The next round starts on time: reports still out are taken late.
      CarryOutstanding(now);
      CloseRound();
      if (now >= closing_->deadline_ms()) ExpireClosing(now);
    } else if (now >= round_->deadline_ms()) {
      KillStragglers(*round_, now);
      CloseRound();
    } else if (round_->TakeMidRound(now)) {
      PrefetchAllocation(now, /*mid_round=*/true);
    }
  }
  // (While the cluster change waits for the next round, the RoundScheduler's layout is stale:
  // the round's own solve covers the new cluster.)
  if (jobs_changed_ && seam_->up_to_date()) {
    jobs_changed_ = false;
    PrefetchAllocation(now, /*mid_round=*/false);
  }
  if (ShouldStartRound(now)) StartRound(now);
}

std::int64_t SchedulerCore::NextWakeMs() const {
  const std::int64_t now = clock_->NowMs();
  std::int64_t wake = now + 1000;
  if (closing_) wake = std::min(wake, closing_->deadline_ms());
  if (round_) {
    wake = std::min(wake, round_->NextWakeMs());
    if (!round_->idle() && options_.rounds_on_time) {
      wake = std::min(wake, round_->end_ms() + BoundaryWaitMs());
    }
  } else if (ShouldStartRound(now)) {
    return now;
  }
  // Only a settle still running is a reason to wake: once it has passed, a round that did
  // not start waits for something else (a worker joining, the expected cluster), and waking
  // for the past would spin this loop.
  if (idle_arrival_ms_ >= 0 && idle_arrival_ms_ + SettleMs() > now) {
    wake = std::min(wake, idle_arrival_ms_ + SettleMs());
  }
  const auto timeout_ms = static_cast<std::int64_t>(options_.heartbeat_timeout.value() * 1000.0);
  for (const auto& [id, agent] : agents_.agents()) {
    if (agent.row.alive) wake = std::min(wake, agent.last_heartbeat_ms + timeout_ms + 1);
  }
  for (const auto& [id, job] : jobs_) {
    if (IsActive(job) && job.row.next_retry_ms > now) wake = std::min(wake, job.row.next_retry_ms);
  }
  return std::max(wake, now);
}

void SchedulerCore::StartRound(std::int64_t now) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<mechanism::RoundPlan> plan = seam_->PlanRound(now);
  if (!plan) return;
  // Admission control (oasis) turned jobs away for good: they fail, with the reason, and
  // their processes (if any waited paused) stop.
  for (const JobId rejected : plan->rejected) {
    const auto it = jobs_.find(static_cast<std::uint64_t>(rejected.value()));
    if (it == jobs_.end() || !IsActive(it->second)) continue;
    EndJob(it->second, wire::FAILED,
           "rejected by the admission control of " + options_.policy.name +
               ": no schedule of the job earns a positive utility at the current prices",
           now);
    KillEverywhere(it->first, "rejected by admission control", /*any_round=*/true);
  }
  idle_arrival_ms_ = -1;
  round_.emplace(next_round_id_++, now,
                 static_cast<std::int64_t>(options_.round_length.value() * 1000.0),
                 static_cast<std::int64_t>(options_.grace().value() * 1000.0), &journal_);
  journal_.batch.meta["next_round_id"] = std::to_string(next_round_id_);
  ++counters_.rounds_started;
  // Fills the round's tasks and sends it to the agents (agent_executor.h).
  const Status executed = executor_->Execute(*plan);
  GAVEL_CHECK(executed.ok());
  counters_.last_plan_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void SchedulerCore::KillStragglers(OpenRound& round, std::int64_t now) {
  // The job is to blame only if its agent is demonstrably alive (heartbeats of late); a
  // silent agent is about to be declared dead, which is no fault of the job.
  const auto recent_ms =
      static_cast<std::int64_t>(2.0 * options_.heartbeat_interval.value() * 1000.0);
  // A job with a rank still starting (imports, restore) is no straggler: its lease has not
  // begun. Its tasks end without blame and its processes keep starting; the next round
  // extends them if it keeps the job on those GPUs, else the agents stop them. A start-up
  // that hangs is the agent's to catch (`gavel worker --startup-timeout-seconds`).
  for (const auto& [job, workers] : std::map(round.jobs())) {
    const auto this_job = job;  // clang 14 cannot capture a structured binding
    const bool starting = std::any_of(workers.begin(), workers.end(), [&](std::uint64_t w) {
      const auto it = starting_.find(w);
      return it != starting_.end() && it->second == this_job;
    });
    if (starting && round.EndWithoutBlame(job, "still starting at the round's deadline")) {
      Log(now, "slow-start", job, 0, "still starting at the round's deadline: not blamed");
      FinishMicroTask(round, job, now);
      // Its processes wait on those GPUs as a paused job's do: placed there again, they go
      // on (an extension, no new attempt). (A closing round's job is the open round's now.)
      Job& spared = jobs_.at(job);
      if (IsActive(spared) && !IsClosing(round)) spared.paused = spared.still_starting = true;
    }
  }
  // A multi-GPU job's lease is a step bound from its throughput estimate: one that outlasts
  // the round is the estimate's fault (a prior too high), not the job's. Its ranks are
  // killed without blame, and their kill reports teach the daemon the rate (ReportDone).
  // A job merely late (a loaded machine) is killed without blame; only a job that missed
  // deadline_misses_to_fail deadlines in a row (it hangs) counts it as a crash.
  const std::set<std::uint64_t> jobs = round.EndStragglers(
      [&](std::uint64_t worker) {
        const Agent* agent = agents_.AgentOfWorker(worker);
        const std::uint64_t job = round.PendingJobOn(worker);
        const auto it = jobs_.find(job);
        if (it == jobs_.end() || it->second.row.spec.scale_factor() > 1) return false;
        const bool again =
            it->second.deadline_misses + 1 >= std::max(1, options_.deadline_misses_to_fail);
        return again && agent != nullptr && agent->row.alive &&
               now - agent->last_heartbeat_ms <= recent_ms;
      },
      &counters_.stragglers_killed);
  for (std::uint64_t job : jobs) {
    KillEverywhere(job, "no report by the round's deadline", /*any_round=*/false, "", &round);
    const auto it = jobs_.find(job);
    const int misses = it == jobs_.end() ? 0 : ++it->second.deadline_misses;
    Log(now, "straggler", job, 0,
        "killed: no report by the round's deadline (" + std::to_string(misses) + " in a row; " +
            std::to_string(options_.deadline_misses_to_fail) + " count as a crash)");
    FinishMicroTask(round, job, now);
  }
}

void SchedulerCore::CarryOutstanding(std::int64_t now) {
  if (closing_) ExpireClosing(now);
  const double elapsed_s = static_cast<double>(now - round_->start_ms()) / 1000.0;
  for (const auto& [job_id, workers] : round_->jobs()) {
    const std::vector<const RoundTask*> tasks = round_->TasksOf(job_id);
    const auto out = std::count_if(tasks.begin(), tasks.end(),
                                   [](const RoundTask* t) { return !t->reported; });
    if (out == 0) continue;  // its micro-task was finished when its last report came
    counters_.tasks_carried += static_cast<std::uint64_t>(out);
    // Its time is booked now, as if it had reported; its steps follow with the reports.
    if (round_->mech_backed()) seam_->CarryMicroTask(job_id, 0, elapsed_s, now);
    Job& job = jobs_.at(job_id);
    if (!IsActive(job)) continue;
    // Its processes stay where they are: placed there again they go on (an extension), placed
    // elsewhere the job waits until they reported, placed nowhere their agents stop them.
    const auto this_job = job_id;  // clang 14 cannot capture a structured binding
    job.last_workers = workers;
    job.paused = job.report_outstanding = true;
    job.still_starting = std::any_of(workers.begin(), workers.end(), [&](std::uint64_t w) {
      const auto it = starting_.find(w);
      return it != starting_.end() && it->second == this_job;
    });
  }
  round_->Detach();
  closing_.emplace(std::move(*round_));
}

void SchedulerCore::ExpireClosing(std::int64_t now) {
  KillStragglers(*closing_, now);
  for (const auto& [job_id, workers] : closing_->jobs()) jobs_.at(job_id).report_outstanding = false;
  closing_.reset();
}

void SchedulerCore::CloseRound() {
  if (round_->mech_backed()) seam_->RoundClosed();
  round_.reset();
  journal_.batch.close_round = true;
  journal_.batch.open_round.reset();
  journal_.batch.reported_workers.clear();  // marks on the closed round's tasks no longer matter
}

// ------------------------------------------------------------------------------------------
// Recovery.

Status SchedulerCore::Recover() {
  const std::int64_t now = clock_->NowMs();
  started_ms_ = now;
  GAVEL_ASSIGN_OR_RETURN(StoredState state, store_->Load());
  auto meta_int = [&](const std::string& key, std::int64_t fallback) -> Result<std::int64_t> {
    const auto it = state.meta.find(key);
    if (it == state.meta.end()) return fallback;
    try {
      std::size_t used = 0;
      const std::int64_t v = std::stoll(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument(key);
      return v;
    } catch (const std::exception&) {
      return Status::InvalidArgument("state database, table meta, key " + key + ": `" +
                                     it->second + "` is not an integer");
    }
  };
  GAVEL_ASSIGN_OR_RETURN(epoch_ms_, meta_int("epoch_ms", now));
  if (!state.meta.contains("epoch_ms")) journal_.batch.meta["epoch_ms"] = std::to_string(epoch_ms_);
  GAVEL_ASSIGN_OR_RETURN(const std::int64_t next_job, meta_int("next_job_id", 1));
  GAVEL_ASSIGN_OR_RETURN(const std::int64_t next_worker, meta_int("next_worker_id", 0));
  GAVEL_ASSIGN_OR_RETURN(const std::int64_t next_round, meta_int("next_round_id", 0));
  next_round_id_ = static_cast<std::uint64_t>(std::max<std::int64_t>(next_round, 0));
  seam_ = std::make_unique<MechanismSeam>(&options_, &jobs_, &agents_, &journal_, allocation_,
                                          clock_, epoch_ms_);
  executor_ = std::make_unique<AgentExecutor>(
      &options_, AgentExecutorParts{&jobs_, &agents_, seam_.get(), transport_, &journal_,
                                    &round_, hooks_.dispatch_failed});

  GAVEL_RETURN_IF_ERROR(jobs_.Restore(std::move(state.jobs),
                                      static_cast<std::uint64_t>(std::max<std::int64_t>(next_job, 1))));
  agents_.Restore(std::move(state.agents), static_cast<std::uint64_t>(std::max<std::int64_t>(next_worker, 0)), now);
  if (state.open_round) {
    const RoundRow& stored = *state.open_round;
    round_ = OpenRound::Resume(
        stored, now, static_cast<std::int64_t>(options_.grace().value() * 1000.0),
        static_cast<std::int64_t>(options_.heartbeat_timeout.value() * 1000.0),
        [&](std::uint64_t job) { return jobs_.find(job) != jobs_.end(); },
        [&](std::uint64_t worker) {
          const Agent* agent = agents_.AgentOfWorker(worker);
          return agent ? agent->row.gpu_type : std::string();
        },
        &journal_);
    // A job with a task still out is running.
    for (const auto& [job_id, workers] : round_->jobs()) {
      Job& job = jobs_.at(job_id);
      for (std::uint64_t w : workers) {
        if (round_->PendingJobOn(w) == job_id && IsActive(job)) job.row.state = wire::RUNNING;
      }
    }
    next_round_id_ = std::max(next_round_id_, stored.round_id + 1);
    Log(now, "recover", 0, 0,
        "resumed with round " + std::to_string(stored.round_id) + " open (" +
            std::to_string(stored.tasks.size()) + " tasks)");
  } else {
    Log(now, "recover", 0, 0, "resumed with no open round");
  }
  jobs_changed_ = true;
  return Status::Ok();
}

// ------------------------------------------------------------------------------------------
// Small helpers.

bool SchedulerCore::IsActive(const Job& job) const { return JobBook::IsActive(job); }

void SchedulerCore::Touch(const Job& job) { jobs_.Touch(job); }

void SchedulerCore::Log(std::int64_t now, const std::string& kind, std::uint64_t job,
                        std::uint64_t worker, const std::string& message) {
  journal_.Log(now, kind, job, worker, message);
}

CoreCounters SchedulerCore::counters() const {
  CoreCounters counters = counters_;
  counters.rebuilds = seam_->rebuilds();
  counters.cluster_changes = seam_->cluster_changes();
  return counters;
}

std::optional<std::uint64_t> SchedulerCore::current_round() const {
  if (!round_) return std::nullopt;
  return round_->id();
}

double SchedulerCore::Prior(const Job& job, const std::string& gpu_type) const {
  return jobs_.Prior(job, gpu_type);
}

double SchedulerCore::Estimate(const Job& job, const std::string& gpu_type) const {
  return jobs_.Estimate(job, gpu_type);
}

// ------------------------------------------------------------------------------------------
// Requests from users.

Result<std::uint64_t> SchedulerCore::Submit(const rpc::Principal& user,
                                            const wire::JobSpec& spec) {
  GAVEL_RETURN_IF_ERROR(jobs_.Validate(spec));
  if (options_.policy.capabilities().single_gpu_jobs_only && spec.scale_factor() > 1) {
    return Status::InvalidArgument("spec.scale_factor: policy " + options_.policy.name +
                                   " schedules single-GPU jobs only");
  }
  const std::int64_t now = clock_->NowMs();
  Job& job = jobs_.Add(user, spec, now, agents_.LiveGpuTypes());
  const std::uint64_t id = job.row.id;
  jobs_changed_ = true;
  if ((!round_ || round_->idle()) && idle_arrival_ms_ < 0) idle_arrival_ms_ = now;
  seam_->Admit(job);
  return id;
}

bool SchedulerCore::CancelDenied(const rpc::Principal& user, std::uint64_t job_id) const {
  const auto it = jobs_.find(job_id);
  return it != jobs_.end() && !user.admin && it->second.row.user != user.user;
}

Result<wire::JobInfo> SchedulerCore::Cancel(const rpc::Principal& user, std::uint64_t job_id) {
  const auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return Status::NotFound("job_id: no job " + std::to_string(job_id));
  }
  Job& job = it->second;
  if (CancelDenied(user, job_id)) {
    return Status::FailedPrecondition("job " + std::to_string(job_id) + " belongs to " +
                                      job.row.user);
  }
  if (!IsActive(job)) {
    return Status::FailedPrecondition("job " + std::to_string(job_id) + " already " +
                                      (job.row.state == wire::DONE        ? "done"
                                       : job.row.state == wire::FAILED    ? "failed"
                                                                          : "cancelled"));
  }
  const std::int64_t now = clock_->NowMs();
  KillEverywhere(job_id, "cancelled by " + user.user, /*any_round=*/true);
  EndJob(job, wire::CANCELLED, "cancelled by " + user.user, now);
  // Its tasks of this round (and the closing one) end now; whatever its process
  // checkpointed no longer matters.
  if (round_ && round_->HasJob(job_id) && round_->EndWithoutBlame(job_id, "cancelled")) {
    FinishJobTasks(job_id, now);
  }
  if (closing_ && closing_->HasJob(job_id) && closing_->EndWithoutBlame(job_id, "cancelled")) {
    FinishMicroTask(*closing_, job_id, now);
  }
  return Info(job);
}

Result<wire::ListJobsResponse> SchedulerCore::ListJobs(const wire::ListJobsRequest& request) const {
  return Listing()->Page(request);
}

std::shared_ptr<const JobListing> SchedulerCore::Listing() const {
  constexpr std::int64_t kRefreshMs = 1000;
  const std::int64_t now = clock_->NowMs();
  const std::optional<std::uint64_t> round = current_round();
  std::set<std::string> live;
  for (const std::string& t : agents_.LiveGpuTypes()) live.insert(t);
  const bool full = now - listing_full_ms_ >= kRefreshMs || now < listing_full_ms_ ||
                    round != listing_round_;
  if (full) {
    listing_full_ms_ = now;
    listing_round_ = round;
    for (const auto& [id, job] : jobs_) {
      listing_entries_[id] = std::make_shared<const JobListing::Entry>(Info(job, live));
    }
  } else {
    listing_stale_.insert(journal_.dirty_jobs.begin(), journal_.dirty_jobs.end());
    for (std::uint64_t id : listing_stale_) {
      const auto it = jobs_.find(id);
      if (it != jobs_.end()) {
        listing_entries_[id] = std::make_shared<const JobListing::Entry>(Info(it->second, live));
      }
    }
  }
  listing_stale_.clear();
  std::vector<JobListing::EntryPtr> entries;
  entries.reserve(listing_entries_.size());
  for (const auto& [id, entry] : listing_entries_) entries.push_back(entry);
  return std::make_shared<const JobListing>(std::move(entries));
}

wire::JobInfo SchedulerCore::Info(const Job& job) const {
  std::set<std::string> live;
  for (const std::string& t : agents_.LiveGpuTypes()) live.insert(t);
  return Info(job, live);
}

wire::JobInfo SchedulerCore::Info(const Job& job, const std::set<std::string>& live) const {
  wire::JobInfo info;
  const JobRow& row = job.row;
  info.set_id(row.id);
  info.set_state(row.state);
  info.set_user(row.user);
  info.set_name(row.spec.name());
  *info.mutable_spec() = row.spec;
  info.set_steps_done(row.steps_done);
  info.set_total_steps(row.spec.total_steps());
  info.set_progress(static_cast<double>(row.steps_done) /
                    static_cast<double>(std::max<std::uint64_t>(row.spec.total_steps(), 1)));
  const std::map<std::string, double> allocation =
      IsActive(job) ? seam_->AllocationOf(row.id) : std::map<std::string, double>{};
  std::set<std::string> types = live;
  for (const auto& [t, g] : row.per_type) types.insert(t);
  double rate = 0.0;
  for (const std::string& type : types) {
    wire::JobTypeStats* stats = info.add_per_type();
    stats->set_gpu_type(type);
    const auto it = row.per_type.find(type);
    const JobGpuRow g = it == row.per_type.end() ? JobGpuRow{} : it->second;
    double share = IsActive(job) ? g.allocation : 0.0;
    if (const auto x = allocation.find(type); x != allocation.end()) share = x->second;
    // A type whose agents are all dead gives no time until they return, whatever the last
    // allocation (solved with them) says: showing it would promise more than the job gets.
    if (!live.contains(type)) share = 0.0;
    stats->set_allocation(share);
    stats->set_seconds(g.seconds);
    stats->set_steps(static_cast<std::uint64_t>(std::llround(g.steps)));
    stats->set_throughput_estimate(Estimate(job, type));
    stats->set_throughput_prior(Prior(job, type));
    stats->set_throughput_measured(g.measurements > 0 ? g.measured : 0.0);
    stats->set_measurements(g.measurements);
    rate += share * Estimate(job, type);
  }
  if (job.partner_job != 0) {
    info.set_partner_job_id(job.partner_job);
    info.set_partner_job_type(job.partner_type);
    const auto c = job.row.colocated.find({job.partner_gpu_type, job.partner_type});
    if (c != job.row.colocated.end()) {
      info.set_colocated_steps_per_s(c->second.measured);
      info.set_colocated_measurements(c->second.measurements);
    }
  }
  if (round_ && row.state == wire::RUNNING) {
    if (round_->HasJob(row.id)) {
      // A pair's second job runs on its GPUs' partner slots: shown as the GPUs themselves.
      for (std::uint64_t w : round_->WorkersOf(row.id)) info.add_worker_ids(GpuOfSlot(w));
      const RoundTask* twin = round_->TaskOn(TwinSlotOf(round_->WorkersOf(row.id).front()));
      info.set_sharing(twin != nullptr && twin->job_id == job.partner_job);
      info.set_gpu_type(round_->GpuTypeOf(row.id));
      if (rate <= 0.0) rate = Estimate(job, info.gpu_type());
    }
  }
  const double remaining = static_cast<double>(row.spec.total_steps() - row.steps_done);
  if (!IsActive(job)) {
    info.set_eta_s(0.0);
  } else {
    info.set_eta_s(rate > 0.0 ? remaining / rate : -1.0);
  }
  info.set_submitted_unix_ms(row.submitted_ms);
  info.set_finished_unix_ms(row.finished_ms);
  info.set_attempts(row.attempts);
  info.set_failures(row.failures);
  info.set_last_exit_code(row.last_exit_code);
  info.set_message(row.message);
  info.set_next_retry_unix_ms(row.next_retry_ms);
  info.set_last_startup_s(row.last_startup_s);
  info.set_startup_total_s(row.startup_total_s);
  return info;
}

Result<std::vector<SchedulerCore::LogSource>> SchedulerCore::LogSources(
    std::uint64_t job_id) const {
  if (!jobs_.contains(job_id)) return Status::NotFound("job_id: no job " + std::to_string(job_id));
  std::vector<LogSource> sources;
  for (const auto& [id, agent] : agents_.agents()) {
    sources.push_back(LogSource{agents_.Endpoint(agent), agent.row.alive});
  }
  return sources;
}

wire::ListWorkersResponse SchedulerCore::ListWorkers() const {
  wire::ListWorkersResponse response;
  const std::int64_t now = clock_->NowMs();
  agents_.ListWorkers(now, &response, [&](std::uint64_t worker) -> std::uint64_t {
    return round_ ? round_->PendingJobOn(worker) : 0;
  });
  return response;
}

wire::GetStatusResponse SchedulerCore::GetStatus() const {
  wire::GetStatusResponse status;
  const std::int64_t now = clock_->NowMs();
  status.set_policy(options_.policy.name);
  status.set_round_duration_s(options_.round_length.value());
  status.set_lag_bound_restarts(options_.lag_bound_restarts);
  status.set_rounds_on_time(options_.rounds_on_time);
  status.set_arrival_settle_s(options_.arrival_settle().value());
  status.set_round_id(round_ ? round_->id() : next_round_id_);
  status.set_round_elapsed_s(round_ ? static_cast<double>(now - round_->start_ms()) / 1000.0
                                    : 0.0);
  std::uint32_t counts[6] = {0, 0, 0, 0, 0, 0};
  for (const auto& [id, job] : jobs_) ++counts[job.row.state];
  status.set_queued_jobs(counts[wire::QUEUED]);
  status.set_running_jobs(counts[wire::RUNNING]);
  status.set_done_jobs(counts[wire::DONE]);
  status.set_failed_jobs(counts[wire::FAILED]);
  status.set_cancelled_jobs(counts[wire::CANCELLED]);
  for (const auto& [id, agent] : agents_.agents()) {
    if (agent.row.alive) {
      status.set_alive_workers(status.alive_workers() + agent.row.num_gpus);
      (*status.mutable_gpus_per_type())[agent.row.gpu_type] += agent.row.num_gpus;
    } else {
      status.set_dead_workers(status.dead_workers() + agent.row.num_gpus);
    }
  }
  status.set_uptime_s(static_cast<double>(now - started_ms_) / 1000.0);
  const AllocationStats stats = allocation_->stats();
  status.set_last_solve_s(stats.last_solve_seconds);
  status.set_allocations_computed(stats.solves);
  status.set_version("0.1.0");
  for (const auto& [entity, weight] : options_.entity_weights) {
    (*status.mutable_entity_weights())[entity] = weight;
  }
  return status;
}

// ------------------------------------------------------------------------------------------
// Requests from agents.

Result<wire::RegisterWorkerResponse> SchedulerCore::RegisterWorker(
    const rpc::Principal& caller, const wire::RegisterWorkerRequest& request) {
  bool changed = false;
  GAVEL_ASSIGN_OR_RETURN(const Agent* registered,
                         agents_.Register(caller, request, clock_->NowMs(), &changed));
  const Agent& agent = *registered;
  if (changed) seam_->MarkClusterChanged();  // the mechanism takes them next round
  jobs_.AddPriors(agent.row.gpu_type);
  wire::RegisterWorkerResponse response;
  for (std::uint32_t g = 0; g < agent.row.num_gpus; ++g) {
    response.add_worker_ids(agent.row.first_worker_id + g);
    // Space sharing: a second process slot on the same GPU for a pair's other job.
    if (options_.policy.capabilities().packing) {
      response.add_partner_worker_ids(PartnerSlotOf(agent.row.first_worker_id + g));
    }
  }
  response.set_round_duration_s(options_.round_length.value());
  response.set_heartbeat_interval_s(options_.heartbeat_interval.value());
  response.set_heartbeat_timeout_s(options_.heartbeat_timeout.value());
  return response;
}

wire::HeartbeatResponse SchedulerCore::Heartbeat(const wire::HeartbeatRequest& request) {
  wire::HeartbeatResponse response;
  response.set_known(agents_.Heartbeat(request.agent_id(), clock_->NowMs()));
  if (response.known()) {
    // Which of its GPUs hold a process that has not reported ready (worker.proto,
    // GpuState.starting): not stragglers while they start.
    for (const wire::GpuState& gpu : request.gpus()) {
      if (!agents_.OwnsWorker(request.agent_id(), gpu.worker_id())) continue;
      if (gpu.starting()) {
        starting_[gpu.worker_id()] = gpu.job_id();
      } else {
        starting_.erase(gpu.worker_id());
      }
    }
  }
  return response;
}

Status SchedulerCore::ReportDone(const wire::ReportDoneRequest& request) {
  if (agents_.Find(request.agent_id()) == nullptr) {
    return Status::NotFound("agent_id: unknown agent " + Quoted(request.agent_id()) +
                            " (register first)");
  }
  if (!agents_.OwnsWorker(request.agent_id(), request.worker_id())) {
    return Status::InvalidArgument("worker_id: " + std::to_string(request.worker_id()) +
                                   " is not a GPU of agent " + request.agent_id());
  }
  if (request.outcome() < wire::LEASE_EXPIRED || request.outcome() > wire::LAUNCH_FAILED) {
    return Status::InvalidArgument("outcome: must be one of LEASE_EXPIRED, COMPLETED, CRASHED, "
                                   "KILLED, LAUNCH_FAILED");
  }
  if (!std::isfinite(request.elapsed_s()) || request.elapsed_s() < 0.0 ||
      !std::isfinite(request.training_seconds()) || request.training_seconds() < 0.0) {
    return Status::InvalidArgument("elapsed_s/training_seconds: must be non-negative numbers");
  }
  const auto job_it = jobs_.find(request.job_id());
  if (job_it == jobs_.end()) {
    return Status::NotFound("job_id: no job " + std::to_string(request.job_id()));
  }
  const std::int64_t now = clock_->NowMs();
  ++counters_.reports;
  agents_.Touch(request.agent_id(), now);  // a report is a sign of life
  // The fence: a report of a launch the job has been relaunched since (a process that ran on
  // after its host was declared dead, one spared at a deadline and then replaced) is neither
  // credited nor blamed; its checkpoints are its launch's own, which no later launch reads
  // (docs/checkpointing.md, "The layout on disk").
  const std::uint32_t attempts = job_it->second.row.attempts;
  const bool current_launch = attempts > 0 && request.attempt() == attempts - 1;
  if (!current_launch) {
    ++counters_.fenced_reports;
    Log(now, "fenced", request.job_id(), request.worker_id(),
        "report of launch " + std::to_string(request.attempt()) + " refused: the job runs as launch " +
            (attempts > 0 ? std::to_string(attempts - 1) : std::string("none")));
  }
  if (current_launch && (request.outcome() == wire::LEASE_EXPIRED ||
                         request.outcome() == wire::COMPLETED)) {
    job_it->second.deadline_misses = 0;  // a micro-task ended as planned: the job is not hung
  }
  const OpenRound::Fate fate = round_ && current_launch ? round_->Record(request)
                                                         : OpenRound::Fate::kStale;
  if (fate == OpenRound::Fate::kMicroTaskEnded) FinishJobTasks(request.job_id(), now);
  if (fate != OpenRound::Fate::kStale) return Status::Ok();
  // A report the closing round still waits for (late: the next round began on time).
  const OpenRound::Fate late = closing_ && current_launch ? closing_->Record(request)
                                                         : OpenRound::Fate::kStale;
  if (late == OpenRound::Fate::kMicroTaskEnded) {
    FinishMicroTask(*closing_, request.job_id(), now);
  }
  if (late != OpenRound::Fate::kStale) return Status::Ok();
  // A repeat, or a report from a round that is over: its checkpoint is credited by the job's
  // next report (counts are absolute), so ignoring it loses nothing. One thing it alone
  // knows: how fast a process the daemon killed at the deadline was training (the ranks of a
  // multi-GPU job whose step bound, from a prior, outlasted the round), so that the next step
  // bound fits the round.
  ++counters_.stale_reports;
  const Agent* agent = agents_.AgentOfWorker(request.worker_id());
  Job& job = job_it->second;
  if (request.outcome() == wire::KILLED && IsActive(job) && agent != nullptr &&
      job.row.spec.scale_factor() > 1) {
    if (jobs_.LearnIsolated(job, agent->row.gpu_type, request.steps_trained(),
                            request.training_seconds())) {
      jobs_changed_ = true;  // worth a new solve
    }
    Touch(job);
    seam_->TakeEstimates(job, MechanismSeam::Learned::kOwn);
  }
  return Status::Ok();
}

void SchedulerCore::OnDispatchFailed(const std::string& agent_id, std::uint64_t round_id) {
  if (!round_ || round_->id() != round_id) return;
  const std::int64_t now = clock_->NowMs();
  // Only the jobs' other GPUs need telling: the unreachable agent never got the round.
  if (AbandonAgentTasks(*round_, agent_id,
                        "the round's work could not be delivered to agent " + agent_id,
                        "another of its GPUs is unreachable", now)) {
    Log(now, "dispatch-failed", 0, 0, "agent " + agent_id);
  }
}

bool SchedulerCore::AbandonAgentTasks(OpenRound& round, const std::string& agent_id,
                                      const std::string& message,
                                      const std::string& kill_reason, std::int64_t now) {
  const std::set<std::uint64_t> jobs = round.EndTasksOn(
      [&](std::uint64_t worker) { return agents_.OwnsWorker(agent_id, worker); }, message);
  for (std::uint64_t job : jobs) {
    // Its other ranks cannot go on without the ones that ended.
    KillEverywhere(job, kill_reason, /*any_round=*/false, /*spare=*/agent_id, &round);
    round.EndWithoutBlame(job, "");
    FinishMicroTask(round, job, now);
  }
  return !jobs.empty();
}

// ------------------------------------------------------------------------------------------
// Crediting a finished micro-task.

void SchedulerCore::FinishMicroTask(OpenRound& round, std::uint64_t job_id, std::int64_t now) {
  if (!round.HasJob(job_id)) return;
  const bool late = IsClosing(round);
  const MicroTaskSummary m = round.Summarize(job_id, now);
  Job& job = jobs_.at(job_id);
  const bool active = IsActive(job);
  const Credited credited = jobs_.CreditMicroTask(job, m, now, late);
  if (credited.worth_resolve) jobs_changed_ = true;
  if (late) {
    // The mechanism booked this micro-task's time when its round closed; now its steps.
    job.report_outstanding = false;
    seam_->BookLateSteps(job_id, credited.steps, now);
  }

  if (active) {
    for (std::uint64_t w : m.workers) agents_.AddBusySeconds(w, m.elapsed_s);
    if (job.row.steps_done >= job.row.spec.total_steps()) {
      EndJob(job, wire::DONE, "", now);
      // A late report finished it: its task of the open round has nothing left to do.
      if (late && round_ && round_->HasJob(job_id) && round_->EndWithoutBlame(job_id, "done")) {
        FinishJobTasks(job_id, now);
      }
    } else if (m.completed && !m.crashed) {
      RoundTask as_crash = *m.first;
      as_crash.exit_code = 0;
      as_crash.message = "exited with status 0 after " + std::to_string(job.row.steps_done) +
                         " of " + std::to_string(job.row.spec.total_steps()) + " steps";
      HandleCrash(job, as_crash, now);
    } else if (m.crashed || m.launch_failed || m.killed_at_fault) {
      job.last_launch_failed = m.launch_failed && job.last_launch_failed;
      RoundTask copy = *m.culprit;
      if (m.launch_failed) copy.outcome = wire::LAUNCH_FAILED;
      HandleCrash(job, copy, now);
    } else if (!late) {
      job.last_launch_failed = false;
      if (job.row.state == wire::RUNNING) job.row.state = wire::QUEUED;
    }
    // A late crash leaves the job backing off; a task of it in the open round runs on.
    if (late && IsActive(job) && round_ && round_->HasJob(job_id)) job.row.state = wire::RUNNING;
    Touch(job);
  }

  // Feed the RoundScheduler the credited increment (exact: its record of the job's progress
  // then equals the checkpointed count, so both agree on when the job is done), then what the
  // micro-task measured.
  if (!late && round.mech_backed()) {
    seam_->ReportMicroTask(job_id, credited.steps, m.elapsed_s, now);
  }
  if (IsActive(job)) {
    seam_->TakeEstimates(job, credited.learned_colocated ? MechanismSeam::Learned::kOwnAndPairs
                                                         : MechanismSeam::Learned::kOwn);
  } else {
    seam_->Remove(job, now);
  }
}

void SchedulerCore::HandleCrash(Job& job, const RoundTask& culprit, std::int64_t now) {
  JobRow& row = job.row;
  const bool same_code = row.streak >= 1 && row.failures >= 1 &&
                         row.last_exit_code == culprit.exit_code;
  ++row.failures;
  ++row.streak;
  const bool launch_failed = culprit.outcome == wire::LAUNCH_FAILED;
  const bool launch_failed_twice = launch_failed && job.last_launch_failed;
  job.last_launch_failed = launch_failed;
  row.last_exit_code = culprit.exit_code;
  // A kill's message says why by itself ("no report by the round's deadline"); a crash's is
  // the stderr tail that follows the exit code.
  const bool killed = culprit.outcome == wire::KILLED;
  const std::string what = launch_failed ? "could not be started"
                           : killed && !culprit.message.empty()
                               ? culprit.message
                               : killed ? "killed"
                                        : "crashed with exit code " + std::to_string(culprit.exit_code);
  std::string detail = culprit.message.empty() || killed ? "" : ": " + culprit.message;
  job.paused = false;
  if (row.failures > static_cast<std::uint32_t>(options_.max_retries)) {
    EndJob(job, wire::FAILED,
           what + detail + " (" + std::to_string(row.failures) + " failures, limit " +
               std::to_string(options_.max_retries) + " retries)",
           now);
  } else if (same_code && row.streak >= 2 && culprit.outcome == wire::CRASHED) {
    EndJob(job, wire::FAILED,
           what + " twice in a row without progress" + detail + " (not retried: it fails the "
                  "same way every time)",
           now);
  } else if (launch_failed_twice) {
    EndJob(job, wire::FAILED, what + " twice in a row" + detail, now);
  } else {
    const double backoff = std::min(options_.max_retry_backoff.value(),
                                    options_.retry_backoff.value() *
                                        std::pow(2.0, static_cast<double>(row.streak - 1)));
    row.next_retry_ms = now + static_cast<std::int64_t>(backoff * 1000.0);
    seam_->Hold(job);
    row.message = what + detail + "; retry " + std::to_string(row.failures) + " of " +
                  std::to_string(options_.max_retries) + " after " +
                  std::to_string(static_cast<int>(backoff)) + " s";
    if (row.state == wire::RUNNING) row.state = wire::QUEUED;
    Log(now, "crash", row.id, culprit.worker_id, row.message);
  }
  Touch(job);
}

void SchedulerCore::EndJob(Job& job, wire::JobState state, const std::string& message,
                           std::int64_t now) {
  job.row.state = state;
  job.row.finished_ms = now;
  if (!message.empty() || state == wire::DONE) job.row.message = message;
  job.paused = false;
  Touch(job);
  jobs_changed_ = true;
  const char* kind = state == wire::DONE ? "done" : state == wire::FAILED ? "failed" : "cancel";
  Log(now, kind, job.row.id, 0,
      message.empty() ? std::to_string(job.row.steps_done) + " steps" : message);
  // A finished job has already left the RoundScheduler with its last report (their progress
  // records agree); any other leaves now.
  seam_->Remove(job, now);
}

void SchedulerCore::KillEverywhere(std::uint64_t job_id, const std::string& reason,
                                   bool any_round, const std::string& spare,
                                   const OpenRound* round) {
  if (round == nullptr && round_) round = &*round_;
  std::set<std::string> targets;
  for (const std::optional<OpenRound>* r : {&round_, &closing_}) {
    if (!r->has_value()) continue;
    for (std::uint64_t w : (*r)->WorkersOf(job_id)) {
      if (const Agent* a = agents_.AgentOfWorker(w)) targets.insert(a->row.agent_id);
    }
  }
  const auto job = jobs_.find(job_id);
  if (job != jobs_.end()) {
    for (std::uint64_t w : job->second.last_workers) {
      if (const Agent* a = agents_.AgentOfWorker(w)) targets.insert(a->row.agent_id);
    }
  }
  for (const std::string& id : targets) {
    const Agent& agent = *agents_.Find(id);
    if (!agent.row.alive || id == spare) continue;
    wire::KillJobRequest request;
    request.set_job_id(job_id);
    request.set_reason(reason);
    if (!any_round && round != nullptr) request.set_round_id(round->id());
    transport_->KillJob(agents_.Endpoint(agent), request, nullptr);
  }
}

// ------------------------------------------------------------------------------------------
// The mechanism (through the seam, mechanism_seam.h).

std::optional<mechanism::JobAccounting> SchedulerCore::MechanismAccounting(
    std::uint64_t job_id) const {
  return seam_->AccountingOf(job_id);
}

std::vector<std::string> SchedulerCore::mechanism_gpu_types() const {
  return seam_->gpu_types();
}

std::optional<policy::PolicyInput> SchedulerCore::MechanismPolicyInput() const {
  return seam_->PolicyInputNow();
}

bool SchedulerCore::MechanismHolds(std::uint64_t job_id) const {
  return seam_->Holds(job_id);
}

void SchedulerCore::PrefetchAllocation(std::int64_t now, bool mid_round) {
  std::vector<JobId> leaving;
  if (mid_round && round_) {
    // Jobs whose remaining steps fit in what is left of the round at their estimated speed
    // will most likely have finished when the next round is planned.
    const double left_s = std::max(0.0, static_cast<double>(round_->end_ms() - now) / 1000.0);
    for (const auto& [job_id, workers] : round_->jobs()) {
      const Job& job = jobs_.at(job_id);
      if (!IsActive(job)) continue;
      const double rate = Estimate(job, round_->GpuTypeOf(job_id));
      const double remaining =
          static_cast<double>(job.row.spec.total_steps() - job.row.steps_done);
      // steps_done is last round's checkpoint: count this round's steps so far too.
      const double this_round = rate * static_cast<double>(now - round_->start_ms()) / 1000.0;
      if (remaining - this_round <= rate * left_s * 1.1) leaving.push_back(JobId(job_id));
    }
  }
  seam_->Prefetch(leaving, mid_round ? AllocationService::PrefetchUse::kCacheOnly
                                     : AllocationService::PrefetchUse::kTakeWhenSolved);
}

// ------------------------------------------------------------------------------------------
// Durability.

Status SchedulerCore::Flush() {
  for (std::uint64_t id : journal_.dirty_jobs) journal_.batch.jobs.push_back(jobs_.at(id).row);
  listing_stale_.insert(journal_.dirty_jobs.begin(), journal_.dirty_jobs.end());
  for (const std::string& id : journal_.dirty_agents) {
    journal_.batch.agents.push_back(agents_.Find(id)->row);
  }
  journal_.dirty_jobs.clear();
  journal_.dirty_agents.clear();
  if (journal_.batch.empty()) {
    gated_.Release();
    return Status::Ok();
  }
  WriteBatch batch = std::move(journal_.batch);
  journal_.batch = WriteBatch{};
  if (Status committed = store_->Commit(batch); !committed.ok()) {
    gated_.Discard();
    return committed;
  }
  gated_.Release();
  if (hooks_.event) {
    for (const EventRow& event : batch.events) hooks_.event(event);
  }
  return Status::Ok();
}

}  // namespace gavel::daemon
