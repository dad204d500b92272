#include "gavel/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <queue>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "gavel/mechanism/ports.h"
#include "gavel/mechanism/round_scheduler.h"
#include "gavel/policy/registry.h"
#include "gavel/sim/estimation.h"
#include "gavel/sim/event_queue.h"
#include "gavel/sim/ideal.h"
#include "gavel/sim/job_summary.h"
#include "gavel/sim/setup.h"
#include "gavel/sim/sim_executor.h"

namespace gavel::sim {
namespace {

using mechanism::RoundScheduler;

// One run of the round-based mechanism (see simulator.h for the loop).
class RoundSimulation {
 public:
  RoundSimulation(const SimulationOptions& options, internal::RunSetup setup)
      : options_(options),
        setup_(std::move(setup)),
        physics_(options.physics.any() ? std::make_optional<PhysicsModel>(
                                             options.physics, &setup_.layout, options.seed)
                                       : std::nullopt),
        executor_(&queue_, physics_ ? &*physics_ : nullptr) {}

  Result<SimulationResult> Run() {
    GAVEL_RETURN_IF_ERROR(CreateScheduler());
    int idle_rounds = 0;
    while (window_done_ < setup_.window_end - setup_.window_start) {
      if (options_.saturation_limit && now_ > *options_.saturation_limit) {
        saturated_ = true;
        break;
      }
      if (options_.progress && scheduler_->stats().rounds % 64 == 0) ReportProgress();
      if (options_.time_limit && now_ > *options_.time_limit) {
        return Status::FailedPrecondition(
            "simulated time passed the limit of " + std::to_string(options_.time_limit->value()) +
            " s with " + std::to_string(setup_.window_end - setup_.window_start - window_done_) +
            " window jobs unfinished (is the cluster overloaded?): " + UnfinishedWindowJobs());
      }
      AdvanceClock();
      GAVEL_RETURN_IF_ERROR(DeliverMicroTaskEnds());
      GAVEL_RETURN_IF_ERROR(AdmitArrivals());
      GAVEL_ASSIGN_OR_RETURN(const bool launched, PlanAndLaunchRound());
      GAVEL_RETURN_IF_ERROR(PassOnLeftJobs());
      // Nothing runs, nothing will arrive, yet window jobs wait: give the allocation one more
      // chance, then give up rather than spin (the original spins forever here).
      if (!launched && queue_.empty() && !setup_.stream->PeekArrival() && releases_.empty() &&
          window_done_ < setup_.window_end - setup_.window_start) {
        if (++idle_rounds > 1) return Stuck();
        scheduler_->RequestReallocation();
        scheduler_->OpenResetGate();
      } else {
        idle_rounds = 0;
      }
    }
    return Finish();
  }

 private:
  Status CreateScheduler() {
    mechanism::SchedulerOptions so;
    so.policy = PolicyWithPhysicsDefaults(options_.policy, options_.physics);
    so.compat = options_.compat;
    so.seed = options_.seed;
    so.round_length = options_.round_length;
    so.min_reset_interval = options_.min_reset_interval;
    so.instance_costs = setup_.instance_costs;
    so.lp_solver = options_.lp_solver;
    so.solve_path = options_.solve_path;
    so.topology_aware_placement = options_.physics.topology_aware();
    so.realisation.restart_costs = options_.physics.restart_aware;
    so.realisation.lag_bound_restarts = LagBoundFor(options_.policy, options_.physics);
    so.exhaustive_scans = options_.exhaustive_scans;
    GAVEL_ASSIGN_OR_RETURN(estimation_, SimEstimation::Create(options_, setup_.layout));
    so.colocated = estimation_;
    GAVEL_ASSIGN_OR_RETURN(
        scheduler_, RoundScheduler::Create(setup_.layout, options_.throughputs, so, &clock_));
    total_gpus_ = 0;
    for (int t = 0; t < setup_.layout.num_types(); ++t) total_gpus_ += setup_.layout.gpu_count(t);
    return Status::Ok();
  }

  // To the end of the running round, else to the next arrival.
  void AdvanceClock() {
    const std::optional<Seconds> next_arrival = setup_.stream->PeekArrival();
    // The original's trace-mode rule: nothing queued and nothing running forces a reset.
    if (options_.compat.gated_reallocation && setup_.is_trace && !next_arrival && queue_.empty()) {
      scheduler_->OpenResetGate();
    }
    while (!releases_.empty() && releases_.top() <= now_) releases_.pop();
    if (!queue_.empty()) {
      now_ = round_end_;
    } else if (next_arrival || !releases_.empty()) {
      // The next arrival (and the idle cluster's settling pause after it), or a failed job's
      // retry (physics), whichever comes first.
      now_ = next_arrival ? *next_arrival + options_.physics.arrival_settle : releases_.top();
      if (!releases_.empty()) now_ = std::min(now_, releases_.top());
    }
    clock_.Set(now_);
  }

  // Every micro-task of the round ends and reports per GPU.
  Status DeliverMicroTaskEnds() {
    // batch_'s first `ended` events are this round's; the rest keep their memory for reuse.
    std::size_t ended = 0;
    while (!queue_.empty() && queue_.TopTime() <= now_) {
      if (ended == batch_.size()) batch_.emplace_back();
      queue_.PopInto(batch_[ended++]);
    }
    if (ended == 0) return Status::Ok();
    order_.resize(ended);
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    if (options_.compat.latest_first_delivery) {
      // The original pops its heap of (-finish, combination): latest-finishing first.
      std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
        const MicroTaskEnd& x = batch_[a];
        const MicroTaskEnd& y = batch_[b];
        if (x.finish != y.finish) return x.finish > y.finish;
        if (x.combination < y.combination || y.combination < x.combination) {
          return x.combination < y.combination;
        }
        return a < b;
      });
    }
    // The original books every micro-task from the end of the previous round that ran anything.
    const Seconds booked_from = previous_round_end_.value_or(Seconds(0.0));
    previous_round_end_ = now_;
    last_batch_.clear();
    for (std::size_t i : order_) {
      const MicroTaskEnd& end = batch_[i];
      AddToTimeline(end);
      if (end.failure != Failure::kNone) {
        GAVEL_RETURN_IF_ERROR(OnFailure(end));
        continue;
      }
      const Seconds elapsed =
          end.finish - (options_.compat.idle_gap_booking ? booked_from : end.start);
      SplitIntoReports(end, elapsed, options_.compat.floor_step_split, reports_);
      for (const mechanism::WorkerReport& report : reports_) {
        GAVEL_ASSIGN_OR_RETURN(const mechanism::ReportOutcome outcome,
                               scheduler_->OnWorkerDone(report));
        for (JobId job : outcome.completed) JobLeft(job);
        for (JobId job : outcome.dropped) JobLeft(job);
      }
      if (estimation_ && end.combination.is_pair()) {
        estimation_->OnPairRan(end.combination, end.gpu_type, *scheduler_);
      }
      const double gpus = static_cast<double>(end.workers.size());
      if (window_start_time_) {
        window_busy_ +=
            gpus * std::max(0.0, (end.finish - std::max(end.start, *window_start_time_)).value());
      } else {
        last_batch_.push_back({end.start, end.finish, gpus});
      }
    }
    return Status::Ok();
  }

  // Jobs that arrived by now, in arrival order.
  Status AdmitArrivals() {
    return internal::ForEachArrival(
        *setup_.stream, now_, options_.compat,
        [&](const workload::TraceJob& job, const mechanism::JobDescription& arrived) -> Status {
          mechanism::JobDescription description = arrived;
          if (physics_) {
            description.total_steps = physics_->PlannedSteps(description.total_steps, job.outcome);
          }
          if (options_.physics.topology_aware()) {
            GAVEL_RETURN_IF_ERROR(SetDemands(job, description));
          }
          if (options_.physics.restart_overhead) {
            description.restart_cost = options_.physics.restart_overhead->For(job.job_type);
          }
          // Jobs are numbered 0, 1, 2, ... in arrival order (the metrics' window counts them).
          const JobId id(scheduler_->num_jobs());
          if (estimation_) {
            GAVEL_RETURN_IF_ERROR(
                estimation_->OnArrival(id, JobTypeKey{job.job_type, job.scale_factor}));
          }
          GAVEL_RETURN_IF_ERROR(scheduler_->AddJob(id, description));
          if (physics_) {
            physics_->AdmitJob(id, job.job_type, job.scale_factor, arrived.total_steps,
                               job.outcome);
          }
          TrackWaiting(id, job);
          if (id.value() == setup_.window_start) StartWindow(job.arrival_time);
          return Status::Ok();
        });
  }

  // Plans the next round and hands it to the executor. Returns whether anything runs this round.
  Result<bool> PlanAndLaunchRound() {
    GAVEL_ASSIGN_OR_RETURN(mechanism::RoundPlan plan, scheduler_->PlanRound());
    if (estimation_) estimation_->ApplyTruth(plan, *scheduler_);
    GAVEL_RETURN_IF_ERROR(executor_.Execute(plan));
    for (JobId rejected : plan.rejected) JobLeft(rejected);
    // The queue holds exactly this round's micro-task ends.
    round_end_ = executor_.plan_end();
    ClassifyWaiting(plan);
    return !plan.assignments.empty();
  }

  // ---- Physics ----

  // Host demands per GPU: the trace's, else the model's default. A job that could not fit on
  // an empty server would wait forever.
  Status SetDemands(const workload::TraceJob& job, mechanism::JobDescription& d) const {
    const mechanism::WorkerDemand fallback = DefaultDemand(job.job_type);
    d.cpus_per_gpu = job.cpus_per_gpu.value_or(fallback.cpus);
    d.mem_gb_per_gpu = job.mem_gb_per_gpu.value_or(fallback.mem_gb);
    const mechanism::HostResources& host = options_.physics.host;
    if ((host.cpus_per_server > 0.0 && d.cpus_per_gpu > host.cpus_per_server) ||
        (host.mem_gb_per_server > 0.0 && d.mem_gb_per_gpu > host.mem_gb_per_server)) {
      return Status::InvalidArgument(
          "job " + std::to_string(scheduler_->num_jobs()) + " (" + job.job_type + ") needs " +
          std::to_string(d.cpus_per_gpu) + " CPUs and " + std::to_string(d.mem_gb_per_gpu) +
          " GB per GPU, more than a server has (--cpus-per-server, --mem-per-server-gb)");
    }
    return Status::Ok();
  }

  // A micro-task failed (physics.h): a user error fails the job for good; an infrastructure
  // failure loses the lease's work and retries after a backoff, or fails the job once it is
  // out of retries.
  Status OnFailure(const MicroTaskEnd& end) {
    const JobId job = end.combination.member(0);
    if (!scheduler_->IsActive(job)) return Status::Ok();
    int failures = 0;
    if (end.failure == Failure::kInfra && physics_->Retry(job, &failures)) {
      GAVEL_ASSIGN_OR_RETURN(const mechanism::ReportOutcome outcome,
                             scheduler_->OnMicroTaskFailed(end.combination, end.finish));
      for (JobId dropped : outcome.dropped) JobLeft(dropped);
      if (!scheduler_->IsActive(job)) return Status::Ok();
      const Seconds release = end.finish + physics_->options().failures->Backoff(failures);
      GAVEL_RETURN_IF_ERROR(scheduler_->HoldJob(job, release));
      releases_.push(release);
      return Status::Ok();
    }
    double used = 0.0;
    for (int t = 0; t < setup_.layout.num_types(); ++t) used += scheduler_->gpu_seconds(job, t);
    GAVEL_RETURN_IF_ERROR(scheduler_->RemoveJob(job));
    physics_->MarkFailed(job);
    physics_->JobFailed(used);
    JobLeft(job);
    return Status::Ok();
  }

  // ---- Metrics ----

  void AddToTimeline(const MicroTaskEnd& end) {
    const double width = options_.timeline_bucket.value();
    if (!(width > 0.0)) return;
    const double gpus = static_cast<double>(end.workers.size());
    double t = end.start.value();
    const double stop = end.finish.value();
    while (t < stop) {
      const auto bucket = static_cast<std::size_t>(t / width);
      const double edge = std::min(stop, static_cast<double>(bucket + 1) * width);
      if (timeline_.size() <= bucket) timeline_.resize(bucket + 1, 0.0);
      timeline_[bucket] += gpus * (edge - t);
      t = edge;
    }
  }

  // Which GPU types a waiting job could use (bit per layout type).
  void TrackWaiting(JobId id, const workload::TraceJob& job) {
    Wait& w = waits_[static_cast<std::size_t>(id.value())];
    w.mark = job.arrival_time;
    w.gpus = job.scale_factor;
    const std::optional<int> key = options_.throughputs->KeyIndex(job.key());
    for (int t = 0; t < setup_.layout.num_types() && t < 64; ++t) {
      const std::optional<int> table_type =
          options_.throughputs->GpuTypeIndex(setup_.layout.type_name(t));
      if (!key || !table_type || setup_.layout.gpu_count(t) < job.scale_factor) continue;
      const std::optional<double> tput = options_.throughputs->Isolated(*table_type, *key);
      if (tput && *tput > 0.0) w.types |= std::uint64_t{1} << t;
    }
    waiting_.push_back(id);
  }

  // After each plan: every job still waiting for its first start books the time since the
  // last plan to the class it was in then (Philly's fragmentation delay when enough GPUs of a
  // usable type were free in total, fair-share delay otherwise).
  void ClassifyWaiting(const mechanism::RoundPlan& plan) {
    if (waiting_.empty()) return;
    const int types = setup_.layout.num_types();
    free_.assign(static_cast<std::size_t>(types), 0);
    for (int t = 0; t < types; ++t) free_[static_cast<std::size_t>(t)] = setup_.layout.gpu_count(t);
    for (const mechanism::Assignment& a : plan.assignments) {
      free_[static_cast<std::size_t>(a.gpu_type)] -= static_cast<int>(a.workers.size());
    }
    std::size_t kept = 0;
    for (JobId id : waiting_) {
      Wait& w = waits_.at(static_cast<std::size_t>(id.value()));
      bool fragmented = false;
      for (int t = 0; t < types && t < 64; ++t) {
        if ((w.types >> t & 1U) != 0 && free_[static_cast<std::size_t>(t)] >= w.gpus) {
          fragmented = true;
        }
      }
      const double span = std::max(0.0, (now_ - w.mark).value());
      const bool booked_fragmented = w.classified ? w.fragmented : false;
      (booked_fragmented ? w.fragmentation : w.fair_share) += span;
      w.mark = now_;
      w.classified = true;
      w.fragmented = fragmented;
      const mechanism::JobRecord& record = scheduler_->record(id);
      if (record.first_start || record.done()) continue;  // no longer waiting
      waiting_[kept++] = id;
    }
    waiting_.resize(kept);
  }

  void ReportProgress() const {
    Progress p;
    p.now = now_;
    p.window_done = window_done_;
    p.window_jobs = setup_.window_end - setup_.window_start;
    p.admitted = scheduler_->num_jobs();
    p.active = scheduler_->num_active_jobs();
    p.rounds = scheduler_->stats().rounds;
    options_.progress(p);
  }

  // A job finished, was dropped, rejected or failed: its record is final.
  void JobLeft(JobId job) {
    if (job.value() >= setup_.window_start && job.value() < setup_.window_end) ++window_done_;
    left_.push_back(job);
  }

  // The jobs that left since the last call get their results, and every result whose
  // predecessors have all left goes on, in id order (Emit). Called after ClassifyWaiting,
  // which books a leaving job's last wait.
  Status PassOnLeftJobs() {
    for (JobId job : left_) {
      const auto i = static_cast<std::size_t>(job.value());
      if (i >= next_to_emit_ && !ready_.contains(i)) ready_.emplace(i, ResultOf(i));
    }
    left_.clear();
    while (!ready_.empty() && ready_.begin()->first == next_to_emit_) {
      GAVEL_RETURN_IF_ERROR(Emit(std::move(ready_.begin()->second)));
      ready_.erase(ready_.begin());
    }
    return Status::Ok();
  }

  // Job i's result as it stands (final once it has left); forgets its wait.
  JobResult ResultOf(std::size_t i) {
    const JobId id(i);
    std::vector<double> gpu_seconds;
    for (int t = 0; t < setup_.layout.num_types(); ++t) {
      gpu_seconds.push_back(scheduler_->gpu_seconds(id, t));
    }
    JobResult job = internal::JobResultOf(setup_, *options_.throughputs, scheduler_->record(id),
                                          i, std::move(gpu_seconds));
    if (physics_ && physics_->Failed(id)) job.failed = true;
    if (const auto w = waits_.find(i); w != waits_.end()) {
      if (job.first_start) {
        job.queueing_delay = *job.first_start - job.arrival;
        job.fair_share_delay_seconds = w->second.fair_share;
        job.fragmentation_delay_seconds = w->second.fragmentation;
      }
      waits_.erase(w);
    }
    return job;
  }

  // The next job in id order: into the summary, to the sink, and kept if asked. A job that
  // left is forgotten by the scheduler when its result is not kept: nothing reads its record
  // again.
  Status Emit(JobResult job) {
    summary_.Add(job, scheduler_->record(job.id).utility.has_value());
    ++next_to_emit_;
    if (!options_.keep_jobs && !scheduler_->IsActive(job.id)) scheduler_->ForgetJob(job.id);
    if (options_.job_sink) GAVEL_RETURN_IF_ERROR(options_.job_sink(job));
    if (options_.keep_jobs) kept_jobs_.push_back(std::move(job));
    return Status::Ok();
  }

  // The window opens when its first job arrives; count the part of the round that just ended
  // which lies inside it.
  void StartWindow(Seconds start) {
    window_start_time_ = start;
    for (const BusyInterval& b : last_batch_) {
      window_busy_ += b.gpus * std::max(0.0, (b.finish - std::max(b.start, start)).value());
    }
    last_batch_.clear();
  }

  // Up to 10 unfinished window jobs, with their progress.
  std::string UnfinishedWindowJobs() const {
    std::string text;
    int listed = 0;
    for (std::size_t i = setup_.window_start;
         i < std::min(setup_.window_end, scheduler_->num_jobs()) && listed < 10; ++i) {
      if (!scheduler_->IsActive(JobId(i))) continue;  // left (its record may be forgotten)
      const mechanism::JobRecord& r = scheduler_->record(JobId(i));
      text += (listed++ ? "; job " : "job ") + std::to_string(i) + " (" +
              options_.throughputs->job_types()[static_cast<std::size_t>(r.table_key)].ToString() +
              ", " + std::to_string(r.steps_run) + " of " + std::to_string(r.total_steps) +
              " steps)";
    }
    return text;
  }

  Status Stuck() const {
    std::string jobs;
    int listed = 0;
    for (std::size_t i = 0; i < scheduler_->num_jobs() && listed < 10; ++i) {
      if (!scheduler_->IsActive(JobId(i))) continue;
      jobs += (listed++ ? ", " : "") + std::to_string(i);
    }
    return Status::FailedPrecondition(
        std::to_string(scheduler_->num_active_jobs()) +
        " jobs can never be scheduled on this cluster (e.g. job(s) " + jobs +
        "): they need more GPUs than a type has, or no GPU type runs them");
  }

  Result<SimulationResult> Finish() {
    SimulationResult result;
    internal::FillRunEcho(options_, setup_, now_, result);
    GAVEL_RETURN_IF_ERROR(PassOnLeftJobs());
    // The jobs still there, in id order between those that left.
    for (std::size_t i = next_to_emit_; i < scheduler_->num_jobs(); ++i) {
      if (const auto it = ready_.find(i); it != ready_.end()) {
        GAVEL_RETURN_IF_ERROR(Emit(std::move(it->second)));
        ready_.erase(it);
      } else {
        GAVEL_RETURN_IF_ERROR(Emit(ResultOf(i)));
      }
    }
    summary_.FillSummary(result);
    result.jobs = std::move(kept_jobs_);
    // The original's utilization: mean over GPUs of booked busy time / run time.
    const std::vector<double>& busy = scheduler_->worker_busy_seconds();
    if (now_.value() > 0.0 && !busy.empty()) {
      double sum = 0.0;
      for (double b : busy) sum += b / now_.value();
      result.utilization = sum / static_cast<double>(busy.size());
    }
    if (window_start_time_ && now_ > *window_start_time_) {
      result.window_utilization =
          window_busy_ / (static_cast<double>(total_gpus_) * (now_ - *window_start_time_).value());
    }
    const mechanism::SchedulerStats& stats = scheduler_->stats();
    result.lease_extensions = stats.lease_extensions;
    result.lease_extension_opportunities = stats.lease_extension_opportunities;
    result.rounds = stats.rounds;
    result.allocation_recomputations = stats.allocation_recomputations;
    result.policy_solves = stats.policy_solves;
    result.policy_solve_seconds = stats.policy_solve_seconds;
    result.micro_tasks = stats.micro_tasks;
    result.failed_micro_tasks = stats.failed_micro_tasks;
    FinishPhysics(result);
    if (estimation_) result.throughput_estimation = estimation_->Summary();
    return result;
  }

  void FinishPhysics(SimulationResult& result) {
    result.saturated = saturated_;
    if (physics_) result.physics = physics_->stats();
    for (double b : scheduler_->worker_busy_seconds()) result.busy_gpu_seconds += b;
    if (result.busy_gpu_seconds > 0.0) {
      result.restart_share =
          result.physics.restart_overhead_gpu_seconds / result.busy_gpu_seconds;
    }
    const Backlog backlog = summary_.BacklogAt(total_gpus_, now_);
    result.active_jobs_at_end = backlog.active_jobs;
    result.starved_jobs = backlog.starved_jobs;
    result.oldest_unfinished_window_job_age_seconds =
        backlog.oldest_unfinished_window_job_age_seconds;
    result.timeline_bucket_seconds = options_.timeline_bucket.value();
    const double capacity = static_cast<double>(total_gpus_) * options_.timeline_bucket.value();
    result.utilization_timeline.clear();
    for (double busy : timeline_) result.utilization_timeline.push_back(busy / capacity);
  }

  struct Wait {
    Seconds mark{0.0};  // booked up to here
    int gpus = 1;
    std::uint64_t types = 0;
    bool classified = false;
    bool fragmented = false;
    double fair_share = 0.0;
    double fragmentation = 0.0;
  };

  struct BusyInterval {
    Seconds start;
    Seconds finish;
    double gpus;
  };

  const SimulationOptions& options_;
  internal::RunSetup setup_;
  ManualClock clock_;
  EventQueue<MicroTaskEnd> queue_;
  std::optional<PhysicsModel> physics_;  // before executor_, which points at it
  SimExecutor executor_;
  std::shared_ptr<SimEstimation> estimation_;  // null unless estimating throughputs
  std::unique_ptr<RoundScheduler> scheduler_;
  // Release times of failed jobs' holds (physics), earliest first.
  std::priority_queue<Seconds, std::vector<Seconds>, std::greater<>> releases_;
  bool saturated_ = false;
  // By job id, from admission until the job's result is made (ResultOf).
  std::unordered_map<std::size_t, Wait> waits_;
  std::vector<JobId> waiting_;    // admitted, not yet started
  std::vector<int> free_;         // scratch: free GPUs per type after a plan
  std::vector<double> timeline_;  // busy GPU-seconds per bucket
  Seconds now_{0.0};
  Seconds round_end_{0.0};
  std::optional<Seconds> previous_round_end_;  // compat time booking
  std::size_t window_done_ = 0;
  std::optional<Seconds> window_start_time_;
  double window_busy_ = 0.0;
  std::vector<BusyInterval> last_batch_;
  // The jobs' results: those that left since the last PassOnLeftJobs, those made but waiting
  // for an earlier job to leave, the next id to pass on, the summary of those passed on, and
  // (options_.keep_jobs) the results themselves.
  std::vector<JobId> left_;
  std::map<std::size_t, JobResult> ready_;
  std::size_t next_to_emit_ = 0;
  JobSummarizer summary_{options_.compat.slo_quirks};
  std::vector<JobResult> kept_jobs_;
  int total_gpus_ = 0;
  // Scratch reused every round.
  std::vector<MicroTaskEnd> batch_;
  std::vector<std::size_t> order_;
  std::vector<mechanism::WorkerReport> reports_;
};

void AddFairness(const SimulationResult& isolated, SimulationResult& result) {
  std::vector<double> rhos;
  for (JobResult& job : result.jobs) {
    const std::size_t i = static_cast<std::size_t>(job.id.value());
    if (i >= isolated.jobs.size() || !job.jct || !isolated.jobs[i].jct) continue;
    if (!(isolated.jobs[i].jct->value() > 0.0)) continue;
    job.rho = job.jct->value() / isolated.jobs[i].jct->value();
    if (job.in_window) rhos.push_back(*job.rho);
  }
  FairnessSummary summary;
  summary.jobs = rhos.size();
  if (!rhos.empty()) {
    double sum = 0.0;
    std::size_t above = 0;
    for (double r : rhos) {
      sum += r;
      summary.max_rho = std::max(summary.max_rho, r);
      if (r > 1.0) ++above;
    }
    summary.mean_rho = sum / static_cast<double>(rhos.size());
    summary.fraction_above_one = static_cast<double>(above) / static_cast<double>(rhos.size());
  }
  summary.p50_rho = Percentile(rhos, 50.0);
  summary.p90_rho = Percentile(rhos, 90.0);
  summary.p99_rho = Percentile(rhos, 99.0);
  result.fairness = summary;
}

}  // namespace

double Percentile(std::vector<double> values, double percent) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double position = (static_cast<double>(values.size()) - 1.0) * percent / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(position));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (position - static_cast<double>(lo));
}

Result<SimulationResult> Simulate(const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  if ((options.job_sink || !options.keep_jobs) && (options.ideal || options.fairness)) {
    return Status::InvalidArgument(
        "streaming job results (job_sink, keep_jobs off) needs a round-based run without "
        "fairness: the fluid model and rho read the whole job list");
  }
  GAVEL_ASSIGN_OR_RETURN(internal::RunSetup setup, internal::PrepareRun(options));
  // The fluid model has no rounds to learn pairs in; SimEstimation refuses it when estimating.
  if (options.ideal) GAVEL_RETURN_IF_ERROR(SimEstimation::Create(options, setup.layout).status());
  Result<SimulationResult> result = options.ideal
                                        ? internal::SimulateIdeal(options, std::move(setup))
                                        : RoundSimulation(options, std::move(setup)).Run();
  if (!result.ok()) return result.status();
  if (options.fairness) {
    SimulationOptions isolated = options;
    isolated.policy = "isolated";
    isolated.fairness = false;
    GAVEL_ASSIGN_OR_RETURN(const SimulationResult reference, Simulate(isolated));
    AddFairness(reference, *result);
  }
  result->wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

std::string ResultToJson(const SimulationResult& r) {
  nlohmann::ordered_json j;
  j["policy"] = r.policy;
  j["seed"] = r.seed;
  if (r.compat.all()) {
    j["compat"] = "gavel";
  } else if (!r.compat.any()) {
    j["compat"] = "none";
  } else {
    j["compat"] = r.compat.Names();
  }
  j["ideal"] = r.ideal;
  nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
  for (std::size_t t = 0; t < r.gpu_types.size(); ++t) cluster[r.gpu_types[t]] = r.gpu_counts[t];
  j["cluster"] = cluster;
  j["window"] = {{"start", r.window_start},
                 {"end", r.window_end},
                 {"start_time_seconds", r.window_start_time
                                            ? nlohmann::ordered_json(r.window_start_time->value())
                                            : nlohmann::ordered_json(nullptr)},
                 {"jobs_completed", r.window_jobs_completed},
                 {"jobs_dropped", r.window_jobs_dropped}};
  j["average_jct_seconds"] = r.average_jct_seconds;
  j["jct_p50_seconds"] = r.jct_p50_seconds;
  j["jct_p90_seconds"] = r.jct_p90_seconds;
  j["jct_p99_seconds"] = r.jct_p99_seconds;
  j["makespan_seconds"] = r.makespan_seconds;
  j["utilization"] = r.utilization;
  j["window_utilization"] = r.window_utilization;
  j["total_cost"] = r.total_cost;
  j["slo_jobs"] = r.slo_jobs;
  j["slo_violations"] = r.slo_violations;
  j["lease_extensions"] = r.lease_extensions;
  j["lease_extension_opportunities"] = r.lease_extension_opportunities;
  j["lease_extension_percent"] = r.lease_extension_opportunities > 0
                                     ? 100.0 * static_cast<double>(r.lease_extensions) /
                                           static_cast<double>(r.lease_extension_opportunities)
                                     : 0.0;
  j["rounds"] = r.rounds;
  j["allocation_recomputations"] = r.allocation_recomputations;
  j["policy_solves"] = r.policy_solves;
  j["policy_solve_seconds"] = r.policy_solve_seconds;
  j["micro_tasks"] = r.micro_tasks;
  j["failed_micro_tasks"] = r.failed_micro_tasks;
  j["jobs_admitted"] = r.jobs_admitted;
  j["jobs_completed"] = r.jobs_completed;
  j["jobs_dropped"] = r.jobs_dropped;
  j["wall_seconds"] = r.wall_seconds;
  if (r.fairness) {
    const FairnessSummary& f = *r.fairness;
    j["fairness"] = {
        {"reference_policy", "isolated"}, {"jobs", f.jobs},
        {"mean_rho", f.mean_rho},         {"max_rho", f.max_rho},
        {"p50_rho", f.p50_rho},           {"p90_rho", f.p90_rho},
        {"p99_rho", f.p99_rho},           {"fraction_above_one", f.fraction_above_one}};
  }
  // The cluster's physics and the Philly study's metrics (docs/formats.md).
  j["saturated"] = r.saturated;
  j["restarts"] = r.physics.restarts;
  j["restart_overhead_gpu_seconds"] = r.physics.restart_overhead_gpu_seconds;
  j["busy_gpu_seconds"] = r.busy_gpu_seconds;
  j["restart_share"] = r.restart_share;
  j["allocation_share_mad"] = r.allocation_share_mad;
  j["active_jobs_at_end"] = r.active_jobs_at_end;
  j["starved_jobs"] = r.starved_jobs;
  j["oldest_unfinished_window_job_age_seconds"] = r.oldest_unfinished_window_job_age_seconds;
  j["placement_slowdown_gpu_seconds"] = r.physics.placement_slowdown_gpu_seconds;
  j["spread_micro_tasks"] = r.physics.spread_micro_tasks;
  j["user_errors"] = r.physics.user_errors;
  j["infra_failures"] = r.physics.infra_failures;
  j["failed_jobs"] = r.failed_jobs;
  j["wasted_gpu_seconds"] = r.physics.wasted_gpu_seconds;
  if (r.has_utility) {
    j["total_utility"] = r.total_utility;
    j["jobs_rejected"] = r.jobs_rejected;
  }
  j["queueing_delay_mean_seconds"] = r.queueing_delay_mean_seconds;
  j["queueing_delay_p50_seconds"] = r.queueing_delay_p50_seconds;
  j["queueing_delay_p90_seconds"] = r.queueing_delay_p90_seconds;
  j["fair_share_delay_mean_seconds"] = r.fair_share_delay_mean_seconds;
  j["fragmentation_delay_mean_seconds"] = r.fragmentation_delay_mean_seconds;
  nlohmann::ordered_json by_size = nlohmann::ordered_json::object();
  for (const SizeClassJct& c : r.jct_by_size) {
    by_size[c.name] = {{"jobs", c.jobs},
                       {"average_jct_seconds", c.mean},
                       {"jct_p50_seconds", c.p50},
                       {"jct_p90_seconds", c.p90},
                       {"jct_p99_seconds", c.p99}};
  }
  j["jct_by_size"] = by_size;
  if (r.throughput_estimation) {
    const ThroughputEstimationSummary& e = *r.throughput_estimation;
    j["throughput_estimation"] = {{"profiling_percentage", e.profiling_percentage},
                                  {"num_reference_models", e.num_reference_models},
                                  {"mean_absolute_error", e.mean_absolute_error},
                                  {"matched_true_type_fraction", e.matched_true_type_fraction},
                                  {"jobs_matched", e.jobs_matched},
                                  {"jobs_matched_true_type", e.jobs_matched_true_type},
                                  {"fallbacks", e.fallbacks},
                                  {"estimated_entries", e.estimated_entries},
                                  {"pairs_measured", e.pairs_measured}};
  } else {
    j["throughput_estimation"] = nullptr;
  }
  return j.dump(2) + "\n";
}

namespace {

// Whether `policy` is a name without options whose policy offers `stay`.
bool BareNameOfferingStay(const std::string& policy) {
  if (policy.find(':') != std::string::npos) return false;
  const Result<const policy::PolicyInfo*> info = policy::FindPolicy(policy);
  // An unknown policy: the scheduler names it.
  return info.ok() && policy::TakesOption(**info, "stay");
}

}  // namespace

std::string PolicyWithPhysicsDefaults(const std::string& policy, const PhysicsOptions& physics) {
  if (!physics.restart_overhead || !BareNameOfferingStay(policy)) return policy;
  std::ostringstream spelled;  // shortest form: "stay=0.05"
  spelled << policy << ":stay=" << kStayWhenRestartsCost;
  return spelled.str();
}

std::string PolicyAsServed(const std::string& policy) {
  return BareNameOfferingStay(policy) ? policy + ":stay=0" : policy;
}

double LagBoundFor(const std::string& policy, const PhysicsOptions& physics) {
  if (!physics.restart_overhead) return 0.0;
  if (physics.lag_bound_restarts) return *physics.lag_bound_restarts;
  const Result<const policy::PolicyInfo*> info = policy::FindPolicy(policy);
  if (!info.ok() || (*info)->capabilities.reallocates_every_round) return 0.0;
  return kLagBoundRestarts;
}

Backlog BacklogOf(const std::vector<JobResult>& jobs, int total_gpus, Seconds end,
                  double starved_below) {
  // N(t), the number of active jobs, is a step function; integral[k] is its integral from the
  // first change up to changes[k].
  std::vector<std::pair<double, int>> changes;
  changes.reserve(2 * jobs.size());
  for (const JobResult& job : jobs) {
    changes.emplace_back(job.arrival.value(), +1);
    if (job.finish) changes.emplace_back(job.finish->value(), -1);
  }
  std::sort(changes.begin(), changes.end());
  std::vector<double> integral(changes.size(), 0.0);
  std::vector<int> level(changes.size(), 0);  // N just after changes[k]
  int active = 0;
  for (std::size_t k = 0; k < changes.size(); ++k) {
    if (k > 0) integral[k] = integral[k - 1] + active * (changes[k].first - changes[k - 1].first);
    active += changes[k].second;
    level[k] = active;
  }
  // ∫ N dt over [t, end]: the integral up to end minus that up to t.
  const auto integral_to = [&](double t) {
    const auto after = std::upper_bound(changes.begin(), changes.end(),
                                        std::pair<double, int>{t, std::numeric_limits<int>::max()});
    if (after == changes.begin()) return 0.0;
    const std::size_t k = static_cast<std::size_t>(after - changes.begin()) - 1;
    return integral[k] + level[k] * (t - changes[k].first);
  };
  Backlog backlog;
  const double total_to_end = integral_to(end.value());
  for (const JobResult& job : jobs) {
    const bool gone = job.finish || job.dropped || job.rejected || job.failed;
    if (gone) continue;
    ++backlog.active_jobs;
    if (!job.in_window) continue;
    const double age = end.value() - job.arrival.value();
    backlog.oldest_unfinished_window_job_age_seconds =
        std::max(backlog.oldest_unfinished_window_job_age_seconds, age);
    if (age <= 0.0) continue;
    const double mean_active = (total_to_end - integral_to(job.arrival.value())) / age;
    const double equal_share =
        std::min(static_cast<double>(job.scale_factor),
                 static_cast<double>(total_gpus) / std::max(mean_active, 1.0));
    double received = 0.0;
    for (double g : job.gpu_seconds) received += g;
    if (received / age < starved_below * equal_share) ++backlog.starved_jobs;
  }
  return backlog;
}

std::string JobsToCsv(const SimulationResult& r) {
  std::ostringstream out;
  WriteJobsCsvHeader(r.gpu_types, out);
  for (const JobResult& job : r.jobs) WriteJobsCsvRow(job, out);
  return out.str();
}

void WriteJobsCsvHeader(const std::vector<std::string>& gpu_types, std::ostream& out) {
  out << "id,job_type,scale_factor,priority_weight,arrival,first_start,finish,jct,in_window,"
         "dropped";
  for (const std::string& t : gpu_types) out << ",gpu_seconds_" << t;
  out << ",cost,rho,failed,queueing_delay,fair_share_delay,fragmentation_delay,entitled_seconds,"
         "received_seconds\n";
}

void WriteJobsCsvRow(const JobResult& job, std::ostream& out) {
  // A fresh stream's format (JobsToCsv's), whatever the caller's stream had.
  const std::ios_base::fmtflags flags = out.flags(std::ios_base::dec | std::ios_base::skipws);
  const std::streamsize precision = out.precision(17);
  auto opt = [&](const std::optional<Seconds>& v) {
    if (v) out << v->value();
  };
  out << job.id.value() << ",\"" << job.job_type << "\"," << job.scale_factor << ","
      << job.priority_weight << "," << job.arrival.value() << ",";
  opt(job.first_start);
  out << ",";
  opt(job.finish);
  out << ",";
  opt(job.jct);
  out << "," << (job.in_window ? 1 : 0) << "," << (job.dropped ? 1 : 0);
  for (double g : job.gpu_seconds) out << "," << g;
  out << "," << job.cost << ",";
  if (job.rho) out << *job.rho;
  out << "," << (job.failed ? 1 : 0) << ",";
  opt(job.queueing_delay);
  out << ",";
  if (job.queueing_delay) {
    out << job.fair_share_delay_seconds << "," << job.fragmentation_delay_seconds;
  } else {
    out << ",";
  }
  out << ",";
  if (job.entitled_seconds) out << *job.entitled_seconds;
  out << ",";
  if (job.received_seconds) out << *job.received_seconds;
  out << "\n";
  out.precision(precision);
  out.flags(flags);
}

}  // namespace gavel::sim
