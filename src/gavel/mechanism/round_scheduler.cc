#include "gavel/mechanism/round_scheduler.h"

#include <algorithm>
#include <cmath>

#include "gavel/policy/registry.h"

namespace gavel::mechanism {

namespace {

Status ValidatePrices(std::span<const double> prices, int num_types) {
  if (!prices.empty() && prices.size() != static_cast<std::size_t>(num_types)) {
    return Status::InvalidArgument("instance costs: expected one price per GPU type (" +
                                   std::to_string(num_types) + "), got " +
                                   std::to_string(prices.size()));
  }
  for (double price : prices) {
    if (!std::isfinite(price) || price < 0.0) {
      return Status::InvalidArgument("instance costs must be non-negative numbers");
    }
  }
  return Status::Ok();
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Construction: the parts, wired.

Result<std::unique_ptr<RoundScheduler>> RoundScheduler::Create(
    ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
    SchedulerOptions options, const Clock* clock) {
  GAVEL_ASSIGN_OR_RETURN(const policy::PolicyInfo* info, policy::FindPolicy(options.policy));
  policy::PolicyOptions policy_options;
  policy_options.compat_gavel = options.compat.policy;
  policy_options.seed = options.seed;
  policy_options.lp_solver = options.lp_solver;
  policy_options.milp_solver = options.milp_solver;
  policy_options.solve_path = options.solve_path;
  GAVEL_ASSIGN_OR_RETURN(std::unique_ptr<policy::Policy> policy,
                         policy::MakePolicy(options.policy, policy_options));
  return CreateWithPolicy(std::move(layout), std::move(throughputs), std::move(options), clock,
                          std::move(policy), info->capabilities);
}

Result<std::unique_ptr<RoundScheduler>> RoundScheduler::CreateWithPolicy(
    ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
    SchedulerOptions options, const Clock* clock, std::unique_ptr<policy::Policy> policy,
    PolicyTraits traits) {
  GAVEL_CHECK(clock != nullptr && policy != nullptr && throughputs != nullptr);
  if (!(options.round_length.value() > 0.0) || !std::isfinite(options.round_length.value())) {
    return Status::InvalidArgument("the round length must be a positive number of seconds");
  }
  if (options.min_reset_interval.value() < 0.0) {
    return Status::InvalidArgument("the minimum time between allocation resets is negative");
  }
  if (options.max_failed_attempts && *options.max_failed_attempts < 1) {
    return Status::InvalidArgument("max_failed_attempts must be at least 1");
  }
  GAVEL_RETURN_IF_ERROR(ValidatePrices(options.instance_costs, layout.num_types()));
  for (const auto& [entity, weight] : options.entity_weights) {
    if (!std::isfinite(weight) || !(weight > 0.0)) {
      return Status::InvalidArgument("entity weights: the weight of \"" + entity +
                                     "\" must be a positive number");
    }
  }
  if (traits.needs_instance_costs && options.instance_costs.empty()) {
    return Status::InvalidArgument("policy \"" + options.policy +
                                   "\" needs instance prices for every GPU type");
  }
  GAVEL_ASSIGN_OR_RETURN(std::vector<int> table_types, TableTypesOf(layout, *throughputs));
  return std::unique_ptr<RoundScheduler>(
      new RoundScheduler(std::move(layout), std::move(throughputs), std::move(table_types),
                         std::move(options), clock, std::move(policy), traits));
}

namespace {

RealisationOptions RealisationOf(const SchedulerOptions& options, const PolicyTraits& traits) {
  RealisationOptions realisation = options.realisation;
  realisation.topology_aware_placement = options.topology_aware_placement;
  realisation.space_sharing = traits.packing;
  return realisation;
}

}  // namespace

RoundScheduler::RoundScheduler(ClusterLayout layout,
                               std::shared_ptr<const ThroughputTable> throughputs,
                               std::vector<int> table_types, SchedulerOptions options,
                               const Clock* clock, std::unique_ptr<policy::Policy> policy,
                               PolicyTraits traits)
    : clock_(clock),
      round_length_(options.round_length),
      max_failed_attempts_(options.max_failed_attempts),
      table_(std::move(layout), std::move(throughputs), std::move(table_types),
             JobTableOptions{.packing = traits.packing,
                             .raw_policy_input = options.compat.raw_policy_input,
                             .colocated = options.colocated,
                             .instance_costs = options.instance_costs}),
      accounting_(table_,
                  TimeAccountingOptions{
                      .round_length = options.round_length,
                      .min_reset_interval = options.min_reset_interval,
                      .reset_at_zero_means_never = options.compat.reset_at_zero_means_never,
                      .exhaustive_scans = options.exhaustive_scans,
                      .forgets_deficit = options.compat.forgets_deficit}),
      allocation_(table_, accounting_, std::move(policy), traits,
                  AllocationStepOptions{.policy_name = options.policy,
                                        .compat = options.compat,
                                        .entity_weights = options.entity_weights,
                                        .exhaustive_scans = options.exhaustive_scans}),
      scorers_(MakeScorers(RealisationOf(options, traits))),
      chooser_(table_, accounting_,
               ChooserOptions{.seed = options.seed,
                              .shuffles_gpu_type_order = traits.shuffles_gpu_type_order,
                              .skips_zero_priority = traits.skips_zero_priority,
                              .exhaustive_scans = options.exhaustive_scans,
                              .lag_bound_restarts = options.realisation.lag_bound_restarts},
               ChoiceFilters(scorers_)),
      placer_(table_, PlacerOptions{.unallocated_stay_idle = options.compat.unallocated_stay_idle},
              AllScorers(scorers_)),
      book_(table_, accounting_, options.round_length) {}

RoundScheduler::~RoundScheduler() = default;

ScoreContext RoundScheduler::Context() const {
  return ScoreContext{.table = table_, .round = book_.round(), .round_length = round_length_};
}

// ------------------------------------------------------------------------------------------
// The round.

Result<RoundPlan> RoundScheduler::PlanRound() {
  GAVEL_CHECK_MSG(!book_.any_running(), "PlanRound while micro-tasks of the last round still run");
  const Seconds now = clock_->Now();
  table_.ExpireHolds(now);
  GAVEL_ASSIGN_OR_RETURN(const bool recomputed, allocation_.MaybeRecompute(now, book_.round()));
  CompactIfDue();  // admission control may have rejected jobs
  accounting_.UpdatePriorities();
  const ScoreContext context = Context();
  const std::vector<int> type_order = chooser_.TypeOrder();
  const std::vector<Chosen> chosen = chooser_.Choose(type_order, allocation_.allocated(), context);
  std::vector<Placed> placed = placer_.Place(type_order, chosen, context);
  return book_.Emit(now, std::move(placed), recomputed, allocation_.TakeRejected());
}

// ------------------------------------------------------------------------------------------
// Events.

Status RoundScheduler::AddJob(JobId id, const JobDescription& job) {
  GAVEL_ASSIGN_OR_RETURN(const int table_key, table_.Validate(id, job));
  accounting_.Admitted(table_.Admit(id, job, table_key));
  allocation_.Request();
  return Status::Ok();
}

Result<ReportOutcome> RoundScheduler::OnWorkerDone(const WorkerReport& report) {
  GAVEL_ASSIGN_OR_RETURN(const std::optional<FinishedMicroTask> finished, book_.Gather(report));
  if (!finished) return ReportOutcome{};
  return Book(*finished);
}

Result<ReportOutcome> RoundScheduler::OnMicroTaskDone(const MicroTaskResult& result) {
  GAVEL_ASSIGN_OR_RETURN(const FinishedMicroTask finished, book_.Whole(result));
  return Book(finished);
}

Result<ReportOutcome> RoundScheduler::OnMicroTaskFailed(const Combination& combination,
                                                        Seconds at) {
  GAVEL_ASSIGN_OR_RETURN(const FinishedMicroTask finished, book_.Failed(combination, at));
  return Book(finished);
}

Result<ReportOutcome> RoundScheduler::OnMicroTaskCarried(const MicroTaskResult& result) {
  GAVEL_ASSIGN_OR_RETURN(FinishedMicroTask finished, book_.Whole(result));
  finished.succeeded = true;
  return Book(finished);
}

Result<bool> RoundScheduler::BookLateSteps(JobId job, double steps, Seconds at) {
  if (!table_.IsActive(job)) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  // No time and no GPU: the time was booked with the micro-task.
  if (!table_.BookProgress(job, /*type=*/0, steps, 0.0, 0.0, /*gpus=*/0, at)) return false;
  // While a later micro-task of it runs, the job leaves when that one is booked (or when
  // the caller removes it); a running combination cannot be erased.
  const ActiveJob& active = *table_.FindActive(job);
  bool running = table_.combo(active.single_slot).running;
  for (int slot : active.pair_slots) running = running || table_.combo(slot).running;
  if (running) return true;
  EraseJob(job, /*dropped=*/false);
  return true;
}

ReportOutcome RoundScheduler::Book(const FinishedMicroTask& finished) {
  ComboState& c = *finished.combo;
  const Combination id = c.id;
  const int members = id.size();
  std::array<bool, 2> is_active{false, false};
  for (int i = 0; i < members; ++i) is_active[static_cast<std::size_t>(i)] = IsActive(id.member(i));
  const bool any_active = is_active[0] || is_active[1];
  book_.Finish(c, /*failed=*/any_active && !finished.succeeded);
  ReportOutcome outcome;
  outcome.micro_task_complete = true;
  if (!any_active) return outcome;
  outcome.succeeded = finished.succeeded;
  for (int i = 0; i < members; ++i) {
    if (is_active[static_cast<std::size_t>(i)]) {
      table_.FindActive(id.member(i))->last_ran_until = finished.finished_at;
    }
  }
  std::vector<JobId> leaving;
  if (!finished.succeeded) {
    if (!id.is_pair() && is_active[0]) {
      ActiveJob& job = *table_.FindActive(id.member(0));
      if (max_failed_attempts_ && ++job.failures >= *max_failed_attempts_) {
        leaving.push_back(job.id);
        outcome.dropped.push_back(job.id);
      }
    }
    allocation_.Request();
  } else {
    const int gpus = static_cast<int>(c.last_workers.size());
    if (!id.is_pair()) table_.FindActive(id.member(0))->failures = 0;
    const double elapsed[2] = {finished.elapsed[0].value(),
                               members == 2 ? finished.elapsed[1].value() : 0.0};
    const double max_elapsed = members == 2 ? std::max(elapsed[0], elapsed[1]) : elapsed[0];
    for (int i = 0; i < members; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      if (!is_active[ui]) continue;
      if (table_.BookProgress(id.member(i), c.last_type, finished.steps[ui], elapsed[ui],
                              max_elapsed, gpus, finished.finished_at)) {
        leaving.push_back(id.member(i));
        outcome.completed.push_back(id.member(i));
      }
    }
    accounting_.Book(c, c.last_type, max_elapsed, c.last_workers);
  }
  for (JobId job : leaving) EraseJob(job, /*dropped=*/!finished.succeeded);
  return outcome;
}

void RoundScheduler::EraseJob(JobId job, bool dropped) {
  table_.Erase(job, dropped);
  allocation_.Request();
  CompactIfDue();
}

void RoundScheduler::CompactIfDue() {
  if (!table_.CompactionDue()) return;
  accounting_.ForgetDead();
  allocation_.ForgetDead();
  table_.CompactOrder();
}

// ------------------------------------------------------------------------------------------
// Changes from a live cluster.

Status RoundScheduler::RemoveJob(JobId job) {
  ActiveJob* active = table_.FindActive(job);
  if (active == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  // A running micro-task of the job is abandoned: its GPUs are free for the next plan and
  // nothing it did is booked (the job is leaving; its partner in a pair loses that round).
  book_.Abandon(table_.combo(active->single_slot));
  for (int slot : active->pair_slots) book_.Abandon(table_.combo(slot));
  table_.record(table_.Index(job)).removed = true;
  EraseJob(job, /*dropped=*/false);
  return Status::Ok();
}

Status RoundScheduler::ChangeCluster(ClusterLayout layout,
                                     std::span<const std::optional<WorkerId>> successor,
                                     std::vector<double> instance_costs) {
  // ---- Validate everything first: an error changes nothing. ----
  const ClusterLayout& old = table_.layout();
  if (book_.any_running()) {
    return Status::FailedPrecondition("the cluster can change only between rounds (" +
                                      std::to_string(book_.num_running()) +
                                      " micro-tasks still run)");
  }
  if (successor.size() != static_cast<std::size_t>(old.num_workers())) {
    return Status::InvalidArgument("successor list: expected one entry per old GPU (" +
                                   std::to_string(old.num_workers()) + "), got " +
                                   std::to_string(successor.size()));
  }
  std::vector<char> taken(static_cast<std::size_t>(layout.num_workers()), 0);
  for (std::size_t w = 0; w < successor.size(); ++w) {
    if (!successor[w]) continue;
    const WorkerId to = *successor[w];
    if (to.value() >= static_cast<std::uint64_t>(layout.num_workers())) {
      return Status::InvalidArgument("successor of GPU " + std::to_string(w) + ": " +
                                     to.ToString() + " is not a GPU of the new cluster");
    }
    if (layout.type_name(layout.TypeOf(to)) != old.type_name(old.TypeOf(WorkerId(w)))) {
      return Status::InvalidArgument("successor of GPU " + std::to_string(w) + ": " +
                                     to.ToString() + " is of another GPU type");
    }
    if (taken[static_cast<std::size_t>(to.value())] != 0) {
      return Status::InvalidArgument("successor list: " + to.ToString() + " is given twice");
    }
    taken[static_cast<std::size_t>(to.value())] = 1;
  }
  GAVEL_ASSIGN_OR_RETURN(std::vector<int> table_types,
                         TableTypesOf(layout, table_.throughputs()));
  const int new_types = layout.num_types();
  std::vector<int> old_of_new(static_cast<std::size_t>(new_types), -1);  // -1: a new type
  for (int t = 0; t < new_types; ++t) {
    old_of_new[static_cast<std::size_t>(t)] = old.TypeIndex(layout.type_name(t));
  }
  if (!instance_costs.empty()) {
    GAVEL_RETURN_IF_ERROR(ValidatePrices(instance_costs, new_types));
  } else if (!table_.instance_costs().empty()) {
    for (int t = 0; t < new_types; ++t) {
      const int was = old_of_new[static_cast<std::size_t>(t)];
      if (was < 0) {
        return Status::InvalidArgument("instance costs: no price for the new GPU type " +
                                       layout.type_name(t));
      }
      instance_costs.push_back(table_.instance_costs()[static_cast<std::size_t>(was)]);
    }
  }

  // ---- Carry every per-type and per-worker quantity over. ----
  // New types start every combination as after a reset, which untracked ones cannot express.
  accounting_.TrackAll();
  const int new_workers = layout.num_workers();
  accounting_.ChangeLayout(old_of_new, successor, new_workers);
  table_.ChangeLayout(std::move(layout), std::move(table_types), old_of_new, successor,
                      accounting_.half_round(), std::move(instance_costs));
  allocation_.Request();
  return Status::Ok();
}

// ------------------------------------------------------------------------------------------
// Queries.

SchedulerStats RoundScheduler::stats() const {
  const RoundCounters& rounds = book_.counters();
  const AllocationCounters& allocation = allocation_.counters();
  SchedulerStats stats;
  stats.rounds = rounds.rounds;
  stats.allocation_recomputations = allocation.recomputations;
  stats.policy_solves = allocation.solves;
  stats.policy_solve_seconds = allocation.solve_seconds;
  stats.lease_extensions = rounds.lease_extensions;
  stats.lease_extension_opportunities = rounds.lease_extension_opportunities;
  stats.micro_tasks = rounds.micro_tasks;
  stats.failed_micro_tasks = rounds.failed_micro_tasks;
  return stats;
}

std::vector<double> RoundScheduler::AllocationOf(JobId job) const {
  const auto it = table_.active().find(job);
  const auto nt = static_cast<std::size_t>(table_.num_types());
  if (it == table_.active().end()) return std::vector<double>(nt, 0.0);
  const ComboState& c = table_.combo(it->second.single_slot);
  if (!c.in_allocation) return std::vector<double>(nt, 0.0);
  return c.allocation;
}

std::optional<JobAccounting> RoundScheduler::AccountingOf(JobId job) const {
  const auto it = table_.active().find(job);
  if (it == table_.active().end()) return std::nullopt;
  const ComboState& c = table_.combo(it->second.single_slot);
  JobAccounting accounting;
  accounting.time_received = c.job_time;
  accounting.deficit = c.deficit;
  accounting.priority = c.priority;
  accounting.throughput = c.tput_a;
  return accounting;
}

}  // namespace gavel::mechanism
