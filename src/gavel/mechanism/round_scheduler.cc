#include "gavel/mechanism/round_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "gavel/mechanism/placement.h"
#include "gavel/policy/registry.h"

namespace gavel::mechanism {

namespace {

double HalfRound(const SchedulerOptions& options) { return options.round_length.value() / 2.0; }

// Spec §3.4: priority = allocation / share of the type's time received since the last reset,
// for a combination in the allocation (0 for the others).
// `owed`: the time the combination was owed at past resets and has not received (its deficit's
// positive part; 0 under Compat::forgets_deficit). It counts against the time received, so a
// combination whose share per reset interval is below one round (a large gang among many jobs)
// still reaches the head of its queue once its debt outgrows the half-round credit; with the
// time received alone, every reset forgot the debt and such a gang could starve for good. A
// net time under a thousandth of the time received is floored there (the debt is then first).
double PriorityOf(double allocation, double job_time, double owed, double worker_time,
                  bool runnable) {
  const double net = owed > 0.0 ? std::max(job_time - owed, job_time * 1e-3) : job_time;
  const double fraction = worker_time == 0.0 ? 0.0 : net / worker_time;
  if (allocation == 0.0 || !runnable) return 0.0;
  if (fraction > 0.0) return allocation / fraction;
  return allocation * 1e9;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Construction.

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
  if (!options.instance_costs.empty() &&
      options.instance_costs.size() != static_cast<std::size_t>(layout.num_types())) {
    return Status::InvalidArgument("instance costs: expected one price per GPU type (" +
                                   std::to_string(layout.num_types()) + "), got " +
                                   std::to_string(options.instance_costs.size()));
  }
  for (double price : options.instance_costs) {
    if (!std::isfinite(price) || price < 0.0) {
      return Status::InvalidArgument("instance costs must be non-negative numbers");
    }
  }
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

RoundScheduler::RoundScheduler(ClusterLayout layout,
                               std::shared_ptr<const ThroughputTable> throughputs,
                               std::vector<int> table_types, SchedulerOptions options,
                               const Clock* clock, std::unique_ptr<policy::Policy> policy,
                               PolicyTraits traits)
    : layout_(std::move(layout)),
      throughputs_(std::move(throughputs)),
      table_types_(std::move(table_types)),
      colocated_table_(*throughputs_, table_types_),
      options_(std::move(options)),
      clock_(clock),
      policy_(std::move(policy)),
      traits_(traits),
      type_shuffler_(options_.seed + 5),
      num_types_(layout_.num_types()),
      worker_time_(static_cast<std::size_t>(num_types_), 0.0),
      worker_busy_(static_cast<std::size_t>(layout_.num_workers()), 0.0) {}

RoundScheduler::~RoundScheduler() = default;

RoundScheduler::ComboState& RoundScheduler::combo(int slot) {
  return combos_[static_cast<std::size_t>(slot)];
}
const RoundScheduler::ComboState& RoundScheduler::combo(int slot) const {
  return combos_[static_cast<std::size_t>(slot)];
}

RoundScheduler::ActiveJob* RoundScheduler::FindActive(JobId job) {
  const auto it = active_.find(job);
  return it == active_.end() ? nullptr : &it->second;
}

int RoundScheduler::SlotOf(const Combination& c) const {
  if (c.is_pair()) {
    const auto it = pair_slots_.find(c);
    return it == pair_slots_.end() ? -1 : it->second;
  }
  const auto it = active_.find(c.member(0));
  return it == active_.end() ? -1 : it->second.single_slot;
}

double RoundScheduler::ComboThroughput(const ComboState& c, int member, int type) const {
  const auto t = static_cast<std::size_t>(type);
  return member == 0 ? c.tput_a[t] : c.tput_b[t];
}

// ------------------------------------------------------------------------------------------
// Events.

Status RoundScheduler::AddJob(JobId id, const JobDescription& job) {
  if (active_.contains(id)) {
    return Status::FailedPrecondition("job " + id.ToString() + " is already active");
  }
  const auto key = throughputs_->KeyIndex(job.type);
  if (!key) {
    return Status::NotFound("job type " + job.type.ToString() + " is not in the throughput table");
  }
  if (job.type.scale_factor < 1) return Status::InvalidArgument("scale factor must be >= 1");
  if (!std::isfinite(job.total_steps) || !(job.total_steps > 0.0)) {
    return Status::InvalidArgument("job of type " + job.type.ToString() +
                                   ": total steps must be a positive number");
  }
  if (!std::isfinite(job.steps_done) || job.steps_done < 0.0 ||
      job.steps_done >= job.total_steps) {
    return Status::InvalidArgument("job " + id.ToString() +
                                   ": steps done must be in [0, total steps)");
  }
  if (!job.gpu_seconds_done.empty()) {
    bool valid = job.gpu_seconds_done.size() == static_cast<std::size_t>(num_types_);
    for (double v : job.gpu_seconds_done) valid = valid && std::isfinite(v) && v >= 0.0;
    if (!valid) {
      return Status::InvalidArgument("job " + id.ToString() +
                                     ": GPU-seconds done must be one non-negative number per "
                                     "GPU type of the cluster");
    }
  }
  if (job.elastic) {
    const Status elastic = ValidateElastic(*job.elastic, job.type.scale_factor);
    if (!elastic.ok()) return elastic.WithContext("job " + id.ToString());
  }
  if (!std::isfinite(job.priority_weight) || !(job.priority_weight > 0.0)) {
    return Status::InvalidArgument("job of type " + job.type.ToString() +
                                   ": priority weight must be a positive number");
  }
  {
    // A job no GPU type can run would wait forever (the original hangs or crashes on it).
    const std::vector<double> tput = IsolatedThroughputs(*throughputs_, table_types_, *key);
    bool runnable = false;
    for (int t = 0; t < num_types_; ++t) {
      runnable = runnable || (tput[static_cast<std::size_t>(t)] > 0.0 &&
                              job.type.scale_factor <= layout_.gpu_count(t));
    }
    if (!runnable) {
      return Status::FailedPrecondition(
          "job " + id.ToString() + " of type " + job.type.ToString() +
          " can never run on this cluster: no GPU type has " +
          std::to_string(job.type.scale_factor) + " GPUs and a positive throughput for it");
    }
  }
  JobRecord record;
  record.table_key = *key;
  record.scale_factor = job.type.scale_factor;
  record.priority_weight = job.priority_weight;
  record.total_steps = job.total_steps;
  record.steps_run = job.steps_done;
  record.arrival = job.arrival;
  record.deadline = job.deadline;
  record.entity = job.entity;
  record.cpus_per_gpu = job.cpus_per_gpu;
  record.mem_gb_per_gpu = job.mem_gb_per_gpu;
  record.app = job.app;
  record.utility = job.utility;
  if (const auto known = index_of_.find(id); known != index_of_.end()) {
    // Back after leaving: a fresh record in the same place.
    const std::size_t index = known->second;
    records_[index] = std::move(record);
    const auto nt = static_cast<std::size_t>(num_types_);
    std::fill_n(gpu_seconds_.begin() + static_cast<std::ptrdiff_t>(index * nt), nt, 0.0);
  } else {
    index_of_.emplace(id, records_.size());
    records_.push_back(std::move(record));
    job_stamp_.push_back(0);
    gpu_seconds_.resize(gpu_seconds_.size() + static_cast<std::size_t>(num_types_), 0.0);
  }
  if (!job.gpu_seconds_done.empty()) {
    const std::size_t first = Index(id) * static_cast<std::size_t>(num_types_);
    for (int t = 0; t < num_types_; ++t) {
      gpu_seconds_[first + static_cast<std::size_t>(t)] = job.gpu_seconds_done[static_cast<std::size_t>(t)];
    }
  }
  if (job.held_until) held_[id] = *job.held_until;

  ActiveJob& active = active_[id];
  active.id = id;
  active.record = Index(id);
  active.table_key = *key;
  active.scale_factor = job.type.scale_factor;
  active.last_ran_until = job.arrival;
  active.workers = job.type.scale_factor;
  active.min_workers = job.elastic ? job.elastic->min_workers : job.type.scale_factor;
  active.max_workers = job.elastic ? job.elastic->max_workers : job.type.scale_factor;
  active.elastic_tput.clear();
  if (job.elastic) {
    active.elastic_tput = ElasticThroughputs(*throughputs_, table_types_, *key, *job.elastic);
  }
  active.utility = job.utility;

  // The job itself first, then its pairs with every earlier active job of the same scale
  // factor: the original's insertion order, which breaks ties in the per-type queues.
  active.tput_estimate.assign(static_cast<std::size_t>(num_types_),
                              std::numeric_limits<double>::quiet_NaN());
  const int single = NewCombo(Combination::Single(id), active.scale_factor);
  active.single_slot = single;
  RefreshThroughputs(active);
  Track(single);  // singles start with the credit, which untracked combinations lack
  ComboState& s = combo(single);
  std::fill(s.job_time.begin(), s.job_time.end(), HalfRound(options_));

  if (traits_.packing && !active.elastic()) {
    if (ReadsColocatedTable()) colocated_table_.Add(active.table_key);
    for (auto& [other_id, other] : active_) {
      if (other_id == id || other.scale_factor != active.scale_factor || other.elastic()) continue;
      const Combination pair = Combination::Pair(other_id, id);
      const int slot = NewCombo(pair, active.scale_factor);
      RefreshPairThroughputs(combo(slot));
      pair_slots_[pair] = slot;
      other.pair_slots.push_back(slot);
      active.pair_slots.push_back(slot);
    }
  }
  need_reallocation_ = true;
  return Status::Ok();
}

int RoundScheduler::NewCombo(const Combination& id, int scale_factor) {
  int slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int>(combos_.size());
    combos_.emplace_back();
  }
  ComboState& c = combo(slot);
  const auto n = static_cast<std::size_t>(num_types_);
  c.id = id;
  for (int i = 0; i < id.size(); ++i) c.member_index[static_cast<std::size_t>(i)] = Index(id.member(i));
  c.alive = true;
  c.scale_factor = scale_factor;
  c.in_allocation = false;
  c.tput_a.assign(n, 0.0);
  c.tput_b.assign(id.is_pair() ? n : 0, 0.0);
  c.allocation.assign(n, 0.0);
  c.job_time.assign(n, 0.0);
  c.deficit.assign(n, 0.0);
  c.priority.assign(n, 0.0);
  c.last_round = -1;
  c.last_workers.clear();
  c.running = false;
  c.reports.clear();
  c.placed_round = -1;
  c.seq = next_seq_++;
  c.tracked = false;
  order_.push_back(slot);
  if (options_.exhaustive_scans) Track(slot);  // the plain scans read every stored value
  return slot;
}

void RoundScheduler::Track(int slot) {
  ComboState& c = combo(slot);
  if (c.tracked) return;
  c.tracked = true;
  // What ResetTimeAccounting would have made of it: a combination that neither ran nor was
  // allocated books received = job_time - half = -half at its first reset (pairs start
  // without the credit), so deficit = 0 + half, job_time = half, and nothing after that.
  const double implicit = c.seq < reset_seq_ ? HalfRound(options_) : 0.0;
  std::fill(c.job_time.begin(), c.job_time.end(), implicit);
  std::fill(c.deficit.begin(), c.deficit.end(), implicit);
  tracked_.push_back(slot);
}

void RoundScheduler::RefreshThroughputs(const ActiveJob& job) {
  ComboState& s = combo(job.single_slot);
  const bool resized = job.workers != job.scale_factor;
  s.scale_factor = job.workers;
  s.tput_a = resized ? job.elastic_tput[static_cast<std::size_t>(job.workers - job.min_workers)]
                     : IsolatedThroughputs(*throughputs_, table_types_, job.table_key);
  for (int t = 0; t < num_types_; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    // Online estimates are of the declared count.
    if (!resized && !std::isnan(job.tput_estimate[ut])) s.tput_a[ut] = job.tput_estimate[ut];
    if (!options_.compat.raw_policy_input && job.workers > layout_.gpu_count(t)) {
      s.tput_a[ut] = 0.0;
    }
  }
}

void RoundScheduler::RefreshPairThroughputs(ComboState& p) {
  const auto key_of = [&](JobId j) {
    return records_[Index(j)].table_key;
  };
  std::span<const std::array<double, 2>> table_row;
  if (ReadsColocatedTable()) {
    table_row =
        ColocatedThroughputs(colocated_table_, key_of(p.id.member(0)), key_of(p.id.member(1)));
  }
  for (int t = 0; t < num_types_; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    // The source is asked about every type, oversized ones included: it may keep state.
    const std::array<double, 2> co =
        options_.colocated
            ? options_.colocated->Colocated(p.id.member(0), p.id.member(1), table_types_[ut])
            : table_row[ut];
    const bool oversized =
        !options_.compat.raw_policy_input && p.scale_factor > layout_.gpu_count(t);
    p.tput_a[ut] = oversized ? 0.0 : co[0];
    p.tput_b[ut] = oversized ? 0.0 : co[1];
  }
}

void RoundScheduler::EraseJob(JobId job, bool dropped) {
  ActiveJob* active = FindActive(job);
  GAVEL_CHECK(active != nullptr);
  records_[Index(job)].dropped = dropped;
  held_.erase(job);
  auto kill = [&](int slot) {
    GAVEL_CHECK_MSG(!combo(slot).running, "a combination was removed while it ran");
    combo(slot).alive = false;
    ++dead_in_order_;
  };
  kill(active->single_slot);
  for (int slot : active->pair_slots) {
    const Combination pair = combo(slot).id;
    const JobId other = pair.member(pair.member(0) == job ? 1 : 0);
    ActiveJob* partner = FindActive(other);
    GAVEL_CHECK(partner != nullptr);
    auto& list = partner->pair_slots;
    list.erase(std::find(list.begin(), list.end(), slot));
    pair_slots_.erase(pair);
    kill(slot);
  }
  active_.erase(job);
  need_reallocation_ = true;
  if (dead_in_order_ > 64 && dead_in_order_ * 2 > order_.size()) CompactOrder();
}

// Drops dead slots from the insertion order; only then may they be reused (a reused slot
// must not appear twice in the order).
void RoundScheduler::CompactOrder() {
  const auto dead = [&](int slot) { return !combo(slot).alive; };
  std::erase_if(allocated_, dead);
  std::erase_if(tracked_, dead);
  std::erase_if(stale_priority_, dead);
  std::vector<int> live;
  live.reserve(order_.size() - dead_in_order_);
  for (int slot : order_) {
    if (combo(slot).alive) {
      live.push_back(slot);
    } else {
      free_slots_.push_back(slot);
    }
  }
  order_ = std::move(live);
  dead_in_order_ = 0;
}

Result<RoundScheduler::ComboState*> RoundScheduler::RunningCombo(const Combination& c) {
  const int slot = SlotOf(c);
  if (slot < 0 || !combo(slot).running) {
    return Status::FailedPrecondition("no micro-task of " + c.ToString() + " is running");
  }
  return &combo(slot);
}

Result<ReportOutcome> RoundScheduler::OnWorkerDone(const WorkerReport& report) {
  GAVEL_ASSIGN_OR_RETURN(ComboState* const running, RunningCombo(report.combination));
  ComboState& c = *running;
  const int members = report.combination.size();
  if (std::find(c.last_workers.begin(), c.last_workers.end(), report.worker) ==
      c.last_workers.end()) {
    return Status::InvalidArgument("worker " + report.worker.ToString() + " does not run " +
                                   report.combination.ToString());
  }
  for (const WorkerReport& earlier : c.reports) {
    if (earlier.worker == report.worker) {
      return Status::InvalidArgument("worker " + report.worker.ToString() + " reported twice for " +
                                     report.combination.ToString());
    }
  }
  if (static_cast<int>(report.steps.size()) != members ||
      static_cast<int>(report.elapsed.size()) != members) {
    return Status::InvalidArgument("report for " + report.combination.ToString() +
                                   " must give steps and elapsed time per member");
  }
  // A one-GPU micro-task completes with its only report; others wait for every GPU.
  if (c.last_workers.size() == 1) return CompleteMicroTask(c, std::span(&report, 1));
  c.reports.push_back(report);
  if (c.reports.size() < c.last_workers.size()) return ReportOutcome{};
  std::sort(c.reports.begin(), c.reports.end(),
            [](const WorkerReport& a, const WorkerReport& b) { return a.worker < b.worker; });
  std::vector<WorkerReport> reports = std::move(c.reports);
  c.reports.clear();
  return CompleteMicroTask(c, reports);
}

Result<ReportOutcome> RoundScheduler::OnMicroTaskFailed(const Combination& combination,
                                                        Seconds at) {
  GAVEL_ASSIGN_OR_RETURN(ComboState* const running, RunningCombo(combination));
  ComboState& c = *running;
  c.reports.clear();
  std::vector<WorkerReport> reports(c.last_workers.size());
  for (std::size_t g = 0; g < reports.size(); ++g) {
    reports[g].combination = combination;
    reports[g].worker = c.last_workers[g];
    reports[g].steps.assign(static_cast<std::size_t>(combination.size()), 0.0);
    reports[g].elapsed.assign(static_cast<std::size_t>(combination.size()), Seconds(0.0));
    reports[g].finished_at = at;
  }
  return CompleteMicroTask(c, reports);
}

Result<ReportOutcome> RoundScheduler::OnMicroTaskDone(const MicroTaskResult& result) {
  GAVEL_ASSIGN_OR_RETURN(ComboState* const running, RunningCombo(result.combination));
  ComboState& c = *running;
  const auto members = static_cast<std::size_t>(result.combination.size());
  if (!c.reports.empty()) {
    return Status::FailedPrecondition("a GPU of " + result.combination.ToString() +
                                      " already reported on its own");
  }
  if (result.steps.size() != members || result.elapsed.size() != members) {
    return Status::InvalidArgument("result for " + result.combination.ToString() +
                                   " must give steps and elapsed time per member");
  }
  bool succeeded = true;
  for (std::size_t i = 0; i < members; ++i) {
    if (IsActive(result.combination.member(static_cast<int>(i))) &&
        (result.steps[i] <= 0.0 || result.elapsed[i].value() <= 0.0)) {
      succeeded = false;
    }
  }
  return BookMicroTask(c, result, succeeded);
}

// Spec §3.8, once every GPU of the micro-task reported (`reports` in worker-id order): the
// members' steps add up over the GPUs, their elapsed times are the longest.
Result<ReportOutcome> RoundScheduler::CompleteMicroTask(ComboState& c,
                                                        std::span<const WorkerReport> reports) {
  const int members = c.id.size();
  MicroTaskResult total;
  total.combination = c.id;
  total.steps.assign(static_cast<std::size_t>(members), 0.0);
  total.elapsed.assign(static_cast<std::size_t>(members), Seconds(0.0));
  total.finished_at = reports.front().finished_at;
  bool succeeded = true;
  for (const WorkerReport& r : reports) {
    for (int i = 0; i < members; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      if (IsActive(c.id.member(i)) && (r.steps[ui] <= 0.0 || r.elapsed[ui].value() <= 0.0)) {
        succeeded = false;
      }
      total.steps[ui] += r.steps[ui];
      total.elapsed[ui] = std::max(total.elapsed[ui], r.elapsed[ui]);
    }
    total.finished_at = std::max(total.finished_at, r.finished_at);
  }
  return BookMicroTask(c, total, succeeded);
}

ReportOutcome RoundScheduler::BookMicroTask(ComboState& c, const MicroTaskResult& result,
                                            bool succeeded) {
  c.running = false;
  --num_running_;
  ReportOutcome outcome;
  outcome.micro_task_complete = true;
  const Combination id = c.id;
  const int members = id.size();
  const int type = c.last_type;
  const auto ut = static_cast<std::size_t>(type);

  std::array<bool, 2> is_active{false, false};
  bool any_active = false;
  for (int i = 0; i < members; ++i) {
    is_active[static_cast<std::size_t>(i)] = IsActive(id.member(i));
    any_active = any_active || is_active[static_cast<std::size_t>(i)];
  }
  if (!any_active) return outcome;
  outcome.succeeded = succeeded;
  const std::vector<double>& steps = result.steps;
  std::array<double, 2> elapsed{0.0, 0.0};
  for (int i = 0; i < members; ++i) {
    elapsed[static_cast<std::size_t>(i)] = result.elapsed[static_cast<std::size_t>(i)].value();
  }
  const Seconds finished_at = result.finished_at;
  for (int i = 0; i < members; ++i) {
    if (is_active[static_cast<std::size_t>(i)]) active_.at(id.member(i)).last_ran_until = finished_at;
  }

  std::array<JobId, 2> to_remove;
  int num_to_remove = 0;
  if (!succeeded) {
    ++stats_.failed_micro_tasks;
    if (!id.is_pair() && is_active[0]) {
      ActiveJob& job = active_.at(id.member(0));
      if (options_.max_failed_attempts && ++job.failures >= *options_.max_failed_attempts) {
        to_remove[static_cast<std::size_t>(num_to_remove++)] = job.id;
        outcome.dropped.push_back(job.id);
      }
    }
    need_reallocation_ = true;
  } else {
    const int scale_factor = static_cast<int>(c.last_workers.size());
    if (!id.is_pair()) active_.at(id.member(0)).failures = 0;
    const double max_elapsed = members == 2 ? std::max(elapsed[0], elapsed[1]) : elapsed[0];
    for (int i = 0; i < members; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      if (!is_active[ui]) continue;
      const JobId job = id.member(i);
      JobRecord& record = records_[Index(job)];
      if (!options_.instance_costs.empty()) {
        record.cost += options_.instance_costs[ut] * elapsed[ui] / 3600.0 * scale_factor;
      }
      gpu_seconds_[Index(job) * static_cast<std::size_t>(num_types_) + ut] +=
          max_elapsed * scale_factor;
      record.steps_run += steps[ui];
      if (record.total_steps - record.steps_run <= 0.0) {
        record.finish = finished_at;
        to_remove[static_cast<std::size_t>(num_to_remove++)] = job;
        outcome.completed.push_back(job);
      }
    }
    c.job_time[ut] += max_elapsed;
    worker_time_[ut] += max_elapsed;
    for (WorkerId w : c.last_workers) {
      worker_busy_[static_cast<std::size_t>(w.value())] += max_elapsed;
    }
  }
  for (int k = 0; k < num_to_remove; ++k) {
    EraseJob(to_remove[static_cast<std::size_t>(k)], /*dropped=*/!succeeded);
  }
  return outcome;
}

void RoundScheduler::OpenResetGate() {
  // The original sets its last reset time to 0, which also makes the next reset book the whole
  // run so far as elapsed time.
  if (options_.compat.reset_at_zero_means_never) {
    sentinel_last_reset_ = 0.0;
  } else {
    force_reset_ = true;
  }
}

std::vector<double> RoundScheduler::AllocationOf(JobId job) const {
  const auto it = active_.find(job);
  if (it == active_.end()) return std::vector<double>(static_cast<std::size_t>(num_types_), 0.0);
  const ComboState& c = combo(it->second.single_slot);
  if (!c.in_allocation) return std::vector<double>(static_cast<std::size_t>(num_types_), 0.0);
  return c.allocation;
}

std::optional<JobAccounting> RoundScheduler::AccountingOf(JobId job) const {
  const auto it = active_.find(job);
  if (it == active_.end()) return std::nullopt;
  const ComboState& c = combo(it->second.single_slot);
  JobAccounting accounting;
  accounting.time_received = c.job_time;
  accounting.deficit = c.deficit;
  accounting.priority = c.priority;
  accounting.throughput = c.tput_a;
  return accounting;
}

// ------------------------------------------------------------------------------------------
// Changes from a live cluster.

Status RoundScheduler::RemoveJob(JobId job) {
  ActiveJob* active = FindActive(job);
  if (active == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  // A running micro-task of the job is abandoned: its GPUs are free for the next plan and
  // nothing it did is booked (the job is leaving; its partner in a pair loses that round).
  auto abandon = [&](int slot) {
    ComboState& c = combo(slot);
    if (!c.running) return;
    c.running = false;
    c.reports.clear();
    --num_running_;
  };
  abandon(active->single_slot);
  for (int slot : active->pair_slots) abandon(slot);
  records_[Index(job)].removed = true;
  EraseJob(job, /*dropped=*/false);
  return Status::Ok();
}

Status RoundScheduler::RefreshPair(JobId a, JobId b) {
  const auto it = a == b ? pair_slots_.end() : pair_slots_.find(Combination::Pair(a, b));
  if (it == pair_slots_.end()) {
    return Status::NotFound("no pair of jobs " + a.ToString() + " and " + b.ToString());
  }
  RefreshPairThroughputs(combo(it->second));
  return Status::Ok();
}

Status RoundScheduler::UpdateThroughput(JobId job, int type, double steps_per_s) {
  ActiveJob* active = FindActive(job);
  if (active == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  if (type < 0 || type >= num_types_) {
    return Status::InvalidArgument("GPU type index " + std::to_string(type) + " is not one of " +
                                   std::to_string(num_types_));
  }
  if (!std::isfinite(steps_per_s) || steps_per_s < 0.0) {
    return Status::InvalidArgument("job " + job.ToString() +
                                   ": a throughput must be a non-negative number of steps/s");
  }
  active->tput_estimate[static_cast<std::size_t>(type)] = steps_per_s;
  RefreshThroughputs(*active);
  return Status::Ok();
}

Status RoundScheduler::HoldJob(JobId job, Seconds until) {
  if (FindActive(job) == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  held_[job] = until;
  return Status::Ok();
}

Status RoundScheduler::ReleaseJob(JobId job) {
  if (FindActive(job) == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  held_.erase(job);
  return Status::Ok();
}

Status RoundScheduler::ChangeCluster(ClusterLayout layout,
                                     std::span<const std::optional<WorkerId>> successor,
                                     std::vector<double> instance_costs) {
  // ---- Validate everything first: an error changes nothing. ----
  if (num_running_ > 0) {
    return Status::FailedPrecondition("the cluster can change only between rounds (" +
                                      std::to_string(num_running_) + " micro-tasks still run)");
  }
  if (successor.size() != static_cast<std::size_t>(layout_.num_workers())) {
    return Status::InvalidArgument("successor list: expected one entry per old GPU (" +
                                   std::to_string(layout_.num_workers()) + "), got " +
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
    if (layout.type_name(layout.TypeOf(to)) != layout_.type_name(layout_.TypeOf(WorkerId(w)))) {
      return Status::InvalidArgument("successor of GPU " + std::to_string(w) + ": " +
                                     to.ToString() + " is of another GPU type");
    }
    if (taken[static_cast<std::size_t>(to.value())] != 0) {
      return Status::InvalidArgument("successor list: " + to.ToString() + " is given twice");
    }
    taken[static_cast<std::size_t>(to.value())] = 1;
  }
  GAVEL_ASSIGN_OR_RETURN(std::vector<int> table_types, TableTypesOf(layout, *throughputs_));
  const int new_types = layout.num_types();
  const auto nt = static_cast<std::size_t>(new_types);
  std::vector<int> old_of_new(nt, -1);  // new type index -> old one, or -1 for a new type
  for (int t = 0; t < new_types; ++t) {
    old_of_new[static_cast<std::size_t>(t)] = layout_.TypeIndex(layout.type_name(t));
  }
  if (!instance_costs.empty()) {
    if (instance_costs.size() != nt) {
      return Status::InvalidArgument("instance costs: expected one price per GPU type (" +
                                     std::to_string(new_types) + "), got " +
                                     std::to_string(instance_costs.size()));
    }
    for (double price : instance_costs) {
      if (!std::isfinite(price) || price < 0.0) {
        return Status::InvalidArgument("instance costs must be non-negative numbers");
      }
    }
  } else if (!options_.instance_costs.empty()) {
    for (int t = 0; t < new_types; ++t) {
      const int old = old_of_new[static_cast<std::size_t>(t)];
      if (old < 0) {
        return Status::InvalidArgument("instance costs: no price for the new GPU type " +
                                       layout.type_name(t));
      }
      instance_costs.push_back(options_.instance_costs[static_cast<std::size_t>(old)]);
    }
  }

  // ---- Carry every per-type and per-worker quantity over. ----
  // New types start every combination as after a reset, which untracked ones cannot express.
  for (int slot : order_) {
    if (combo(slot).alive) Track(slot);
  }
  const double half = HalfRound(options_);
  auto remap = [&](const std::vector<double>& old, double fresh) {
    std::vector<double> out(nt, fresh);
    for (std::size_t t = 0; t < nt; ++t) {
      if (old_of_new[t] >= 0) out[t] = old[static_cast<std::size_t>(old_of_new[t])];
    }
    return out;
  };
  std::size_t alive = 0;
  for (ComboState& c : combos_) {
    if (!c.alive) continue;
    ++alive;
    c.allocation = remap(c.allocation, 0.0);
    c.job_time = remap(c.job_time, half);  // a new type starts as after a reset
    c.deficit = remap(c.deficit, 0.0);
    c.priority = remap(c.priority, 0.0);
    c.tput_a.assign(nt, 0.0);
    if (c.id.is_pair()) c.tput_b.assign(nt, 0.0);
    // Last round's GPUs, renamed; if any of them left, the combination is placed afresh.
    bool kept = c.last_round >= 0;
    for (WorkerId& w : c.last_workers) {
      const auto& to = successor[static_cast<std::size_t>(w.value())];
      kept = kept && to.has_value();
      if (to) w = *to;
    }
    if (kept && !c.last_workers.empty()) {
      c.last_type = layout.TypeOf(c.last_workers.front());
    } else {
      c.last_round = -1;
      c.last_workers.clear();
    }
  }
  std::vector<double> worker_time = remap(worker_time_, half * static_cast<double>(alive));
  std::vector<double> busy(static_cast<std::size_t>(layout.num_workers()), 0.0);
  for (std::size_t w = 0; w < successor.size(); ++w) {
    if (successor[w]) busy[static_cast<std::size_t>(successor[w]->value())] = worker_busy_[w];
  }
  std::vector<double> gpu_seconds(records_.size() * nt, 0.0);
  for (std::size_t j = 0; j < records_.size(); ++j) {
    for (std::size_t t = 0; t < nt; ++t) {
      if (old_of_new[t] < 0) continue;
      gpu_seconds[j * nt + t] = gpu_seconds_[j * static_cast<std::size_t>(num_types_) +
                                             static_cast<std::size_t>(old_of_new[t])];
    }
  }
  for (auto& [id, job] : active_) {
    job.tput_estimate = remap(job.tput_estimate, std::numeric_limits<double>::quiet_NaN());
  }

  layout_ = std::move(layout);
  table_types_ = std::move(table_types);
  num_types_ = new_types;
  options_.instance_costs = std::move(instance_costs);
  worker_time_ = std::move(worker_time);
  worker_busy_ = std::move(busy);
  gpu_seconds_ = std::move(gpu_seconds);
  colocated_table_ = ColocatedMatrix(*throughputs_, table_types_);
  for (const auto& [id, job] : active_) {
    if (ReadsColocatedTable() && !job.elastic()) colocated_table_.Add(job.table_key);
  }
  for (const auto& [id, job] : active_) RefreshThroughputs(job);
  for (const auto& [pair, slot] : pair_slots_) RefreshPairThroughputs(combo(slot));
  // Dead slots get vectors of the new size when reused (NewCombo).
  need_reallocation_ = true;
  return Status::Ok();
}

// ------------------------------------------------------------------------------------------
// The round.

Result<RoundPlan> RoundScheduler::PlanRound() {
  GAVEL_CHECK_MSG(num_running_ == 0, "PlanRound while micro-tasks of the last round still run");
  const Seconds now = clock_->Now();
  std::erase_if(held_, [&](const auto& hold) { return hold.second <= now; });
  // Queue disciplines (Tiresias) move jobs as their service grows: a fresh allocation each round.
  if (traits_.reallocates_every_round && !active_.empty()) need_reallocation_ = true;
  GAVEL_ASSIGN_OR_RETURN(const bool recomputed, MaybeRecomputeAllocation(now));
  UpdatePriorities();
  const std::vector<int> type_order = RoundTypeOrder();
  const std::vector<Chosen> chosen = ChooseCombinations(type_order);
  GAVEL_ASSIGN_OR_RETURN(std::vector<Placed> placed, PlaceOnGpus(type_order, chosen));
  return EmitPlan(now, std::move(placed), recomputed);
}

// Spec §3.3. With compat.gated_reallocation the original's rule: recompute only when the
// reset is due. Otherwise recompute whenever something changed, resetting the time
// accounting only when it is due.
Result<bool> RoundScheduler::MaybeRecomputeAllocation(Seconds now) {
  if (!need_reallocation_) return false;
  const bool reset_due = ResetDue(now);
  if (options_.compat.gated_reallocation && !reset_due) return false;
  if (reset_due) ResetTimeAccounting(now);
  GAVEL_RETURN_IF_ERROR(RecomputeAllocation(now));
  return true;
}

bool RoundScheduler::ResetDue(Seconds now) const {
  if (force_reset_) return true;
  const double interval = options_.min_reset_interval.value();
  if (options_.compat.reset_at_zero_means_never) {
    return now.value() - sentinel_last_reset_ >= interval || sentinel_last_reset_ == 0.0;
  }
  return !last_reset_ || (now - *last_reset_).value() >= interval;
}

void RoundScheduler::ResetTimeAccounting(Seconds now) {
  const double last = options_.compat.reset_at_zero_means_never
                          ? sentinel_last_reset_
                          : last_reset_.value_or(Seconds(0.0)).value();
  const double elapsed = now.value() - last;
  const double half = HalfRound(options_);
  // Untracked combinations change only implicitly (reset_seq_ below); every live one adds
  // half a round to each type's total, in the same sequence of additions as visiting them.
  const std::vector<int>& visit = options_.exhaustive_scans ? order_ : tracked_;
  const std::size_t alive = order_.size() - dead_in_order_;
  for (int t = 0; t < num_types_; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    double total = 0.0;
    for (int slot : visit) {
      ComboState& c = combo(slot);
      if (!c.alive) continue;
      const double received = c.job_time[ut] - half;
      const double should = c.in_allocation ? c.allocation[ut] * elapsed : 0.0;
      c.deficit[ut] += should - received;
      c.job_time[ut] = half;
      if (options_.exhaustive_scans) total += half;
    }
    if (!options_.exhaustive_scans) {
      for (std::size_t k = 0; k < alive; ++k) total += half;
    }
    worker_time_[ut] = total;
  }
  reset_seq_ = next_seq_;
  sentinel_last_reset_ = now.value();
  last_reset_ = now;
  force_reset_ = false;
}

policy::PolicyInput RoundScheduler::PolicyInputAt(Seconds now,
                                                std::span<const JobId> without) const {
  std::vector<const ActiveJob*> rows;
  rows.reserve(active_.size());
  for (const auto& [id, job] : active_) {
    if (std::find(without.begin(), without.end(), id) == without.end()) rows.push_back(&job);
  }
  return PolicyInputOf(now, rows);
}

policy::PolicyInput RoundScheduler::PolicyInputOf(Seconds now,
                                                std::span<const ActiveJob* const> rows) const {
  std::vector<ActiveJobInfo> jobs;
  jobs.reserve(rows.size());
  for (const ActiveJob* row : rows) {
    const ActiveJob& job = *row;
    const JobId id = job.id;
    const JobRecord& record = records_[job.record];
    // The single's throughputs: the table's, or UpdateThroughput's estimates.
    jobs.push_back(ActiveJobInfo{id, job.table_key, job.workers, record.priority_weight,
                                 record.total_steps - record.steps_run, record.arrival,
                                 record.deadline, combo(job.single_slot).tput_a,
                                 /*unpairable=*/job.elastic()});
  }
  PolicyInputOptions input_options;
  input_options.pairs = traits_.packing;
  input_options.keep_unusable_pairs = options_.compat.raw_policy_input;
  input_options.zero_oversized = !options_.compat.raw_policy_input;
  input_options.instance_costs = options_.instance_costs;
  if (ReadsColocatedTable()) input_options.colocated_table = &colocated_table_;
  if (options_.colocated) {
    // The policy sees the pairs' throughputs the scheduler holds (estimates until measured).
    input_options.colocated = [&](std::size_t a, std::size_t b) {
      std::vector<std::array<double, 2>> co(static_cast<std::size_t>(num_types_), {0.0, 0.0});
      const auto it = pair_slots_.find(Combination::Pair(jobs[a].id, jobs[b].id));
      if (it == pair_slots_.end()) return co;
      const ComboState& c = combo(it->second);
      for (std::size_t t = 0; t < co.size(); ++t) co[t] = {c.tput_a[t], c.tput_b[t]};
      return co;
    };
  }
  policy::PolicyInput input =
      BuildPolicyInputForJobs(layout_, *throughputs_, table_types_, jobs, now, input_options);
  AddEntities(input, rows);
  AddHistory(input, now, rows);
  return input;
}

// What the queue-discipline policies read (attained service, who runs, how long each waits)
// and DRF's host resources. Plain facts of the job table; the LP policies ignore them.
void RoundScheduler::AddHistory(policy::PolicyInput& input, Seconds now,
                                std::span<const ActiveJob* const> rows) const {
  const HostResources& host = layout_.host_resources();
  const int servers = layout_.num_servers();
  input.host_cpus = host.cpus_per_server * servers;
  input.host_mem_gb = host.mem_gb_per_server * servers;
  input.now_seconds = now.value();
  for (std::size_t i = 0; i < input.jobs.size(); ++i) {
    policy::PolicyJob& row = input.jobs[i];
    const ActiveJob& job = *rows[i];
    row.min_workers = job.min_workers;
    row.max_workers = job.max_workers;
    row.utility = job.utility;
    if (job.elastic()) {
      row.throughput_by_workers = Matrix(job.elastic_tput.size(), static_cast<std::size_t>(num_types_));
      for (std::size_t c = 0; c < job.elastic_tput.size(); ++c) {
        const int workers = job.min_workers + static_cast<int>(c);
        for (int t = 0; t < num_types_; ++t) {
          const bool fits = options_.compat.raw_policy_input || workers <= layout_.gpu_count(t);
          row.throughput_by_workers(c, static_cast<std::size_t>(t)) =
              fits ? job.elastic_tput[c][static_cast<std::size_t>(t)] : 0.0;
        }
      }
    }
    const std::size_t index = job.record;
    const JobRecord& record = records_[index];
    const auto nt = static_cast<std::size_t>(num_types_);
    for (std::size_t t = 0; t < nt; ++t) row.attained_gpu_seconds += gpu_seconds_[index * nt + t];
    const ComboState& single = combo(job.single_slot);
    const bool ran_last_round = single.last_round >= 0 && single.last_round == stats_.rounds - 1;
    row.running_type = ran_last_round && single.last_type < num_types_ ? single.last_type : -1;
    row.waiting = row.running_type >= 0 ? Seconds(0.0) : now - job.last_ran_until;
    if (single.in_allocation) row.current_allocation = single.allocation;
    row.cpus_per_gpu = record.cpus_per_gpu;
    row.mem_gb_per_gpu = record.mem_gb_per_gpu;
    row.app = record.app;
  }
}

// The hierarchical policies' entities: those of the jobs in the problem, sorted, with the
// weights the caller set (1 where it set none).
void RoundScheduler::AddEntities(policy::PolicyInput& input,
                                 std::span<const ActiveJob* const> rows) const {
  std::vector<std::string> names;
  for (const ActiveJob* row : rows) {
    const std::string& entity = records_[row->record].entity;
    if (!entity.empty()) names.push_back(entity);
  }
  if (names.empty()) return;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  input.entities = names;
  input.entity_weights.clear();
  for (const std::string& name : names) {
    const auto weight = options_.entity_weights.find(name);
    input.entity_weights.push_back(weight == options_.entity_weights.end() ? 1.0
                                                                           : weight->second);
  }
  for (std::size_t i = 0; i < input.jobs.size(); ++i) {
    policy::PolicyJob& job = input.jobs[i];
    const std::string& entity = records_[rows[i]->record].entity;
    if (entity.empty()) continue;
    job.entity = static_cast<int>(std::lower_bound(names.begin(), names.end(), entity) -
                                  names.begin());
  }
}

Status RoundScheduler::RecomputeAllocation(Seconds now) {
  ++stats_.allocation_recomputations;
  need_reallocation_ = false;
  std::vector<ActiveJob*> rows;
  rows.reserve(active_.size());
  for (auto& [id, job] : active_) rows.push_back(&job);
  // Built before the old allocation is cleared: it carries each job's current allocation.
  const policy::PolicyInput input =
      active_.empty()
          ? policy::PolicyInput{}
          : PolicyInputOf(now, std::span<const ActiveJob* const>(rows.data(), rows.size()));
  for (int slot : options_.exhaustive_scans ? order_ : allocated_) {
    ComboState& c = combo(slot);
    if (c.in_allocation) stale_priority_.push_back(slot);
    c.in_allocation = false;
    std::fill(c.allocation.begin(), c.allocation.end(), 0.0);
  }
  allocated_.clear();
  if (active_.empty()) return Status::Ok();

  const auto start = std::chrono::steady_clock::now();
  Result<policy::PolicyOutput> output = policy_->Allocate(input);
  stats_.policy_solve_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++stats_.policy_solves;
  if (!output.ok()) {
    return output.status().WithContext("policy " + options_.policy +
                                       " at t=" + std::to_string(now.value()) + " s");
  }
  const Matrix& x = output->allocation;
  if (x.rows() != input.num_jobs() || x.cols() != input.num_types()) {
    return Status::Internal("policy " + options_.policy + " returned a " +
                            std::to_string(x.rows()) + "x" + std::to_string(x.cols()) +
                            " allocation for " + std::to_string(input.num_jobs()) + " jobs");
  }
  const auto n = static_cast<std::size_t>(num_types_);
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    const int slot = rows[i]->single_slot;
    ComboState& c = combo(slot);
    c.in_allocation = true;
    for (std::size_t j = 0; j < n; ++j) c.allocation[j] = x(i, j);
    allocated_.push_back(slot);
  }
  const Matrix& xp = output->pair_allocation;
  const bool has_pairs = xp.rows() == input.pairs.size() && xp.cols() == n;
  for (std::size_t p = 0; p < input.pairs.size(); ++p) {
    // A pair the policy gave nothing is, outside the original's placement rule
    // (unallocated_stay_idle), the same as one left out of the allocation: priority 0, no time
    // owed. Skipping it spares a hash lookup per candidate pair per recomputation, which made
    // the O(n^2) pairs of packing policies that reallocate every round (gandiva_introspective)
    // the simulator's hot spot when a few hundred jobs wait (issue 12).
    bool given = false;
    for (std::size_t j = 0; has_pairs && !given && j < n; ++j) given = xp(p, j) != 0.0;
    if (!given && !options_.compat.unallocated_stay_idle) continue;
    const policy::JobPair& pair = input.pairs[p];
    const Combination id = Combination::Pair(input.jobs[static_cast<std::size_t>(pair.first)].id,
                                             input.jobs[static_cast<std::size_t>(pair.second)].id);
    const int slot = pair_slots_.at(id);
    Track(slot);  // its deficit now grows with its allocation
    ComboState& c = combo(slot);
    c.in_allocation = true;
    for (std::size_t j = 0; j < n; ++j) c.allocation[j] = has_pairs ? xp(p, j) : 0.0;
    allocated_.push_back(slot);
  }
  return ApplyResizingAndAdmission(input, *output, rows);
}

Status RoundScheduler::ApplyResizingAndAdmission(const policy::PolicyInput& input,
                                                 const policy::PolicyOutput& output,
                                                 std::span<ActiveJob* const> rows) {
  const std::size_t m = input.num_jobs();
  if ((!output.workers.empty() && output.workers.size() != m) ||
      (!output.rejected.empty() && output.rejected.size() != m)) {
    return Status::Internal("policy " + options_.policy +
                            " returned worker counts or rejections for the wrong number of jobs");
  }
  for (std::size_t i = 0; i < m; ++i) {
    ActiveJob& job = *rows[i];
    const int workers = output.workers.empty() ? job.scale_factor : output.workers[i];
    if (workers == job.workers) continue;
    if (workers < job.min_workers || workers > job.max_workers) {
      return Status::Internal("policy " + options_.policy + " runs job " + job.id.ToString() +
                              " on " + std::to_string(workers) + " workers, outside [" +
                              std::to_string(job.min_workers) + ", " +
                              std::to_string(job.max_workers) + "]");
    }
    job.workers = workers;
    RefreshThroughputs(job);
  }
  for (std::size_t i = 0; i < output.rejected.size(); ++i) {
    if (output.rejected[i] == 0) continue;
    const JobId id = input.jobs[i].id;
    records_[Index(id)].rejected = true;
    EraseJob(id, /*dropped=*/false);
    rejected_.push_back(id);
  }
  return Status::Ok();
}

// Only combinations in the allocation can have a priority other than 0, so only they, and
// those that just left it, are visited: here those that left it; the allocation's own in
// ChooseCombinations' pass over its candidates (UpdateAllocatedPriority), which visits every
// live combination in the allocation (PlanRound calls the two in turn), so that a round
// reads each combination's scattered state once rather than twice (issue 12).
void RoundScheduler::UpdatePriorities() {
  if (options_.exhaustive_scans) return UpdatePrioritiesExhaustive();
  for (int slot : stale_priority_) {
    ComboState& c = combo(slot);
    if (c.alive && !c.in_allocation) std::fill(c.priority.begin(), c.priority.end(), 0.0);
  }
  stale_priority_.clear();
}

double RoundScheduler::Owed(const ComboState& c, std::size_t type) const {
  return options_.compat.forgets_deficit ? 0.0 : std::max(c.deficit[type], 0.0);
}

void RoundScheduler::UpdateAllocatedPriority(ComboState& c) const {
  for (int t = 0; t < num_types_; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    const bool runnable = !(c.tput_a[ut] == 0.0 || (c.id.is_pair() && c.tput_b[ut] == 0.0));
    c.priority[ut] = PriorityOf(c.allocation[ut], c.job_time[ut], Owed(c, ut), worker_time_[ut],
                                runnable);
  }
}

void RoundScheduler::UpdatePrioritiesExhaustive() {
  stale_priority_.clear();
  for (int t = 0; t < num_types_; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    const double worker_time = worker_time_[ut];
    for (int slot : order_) {
      ComboState& c = combo(slot);
      if (!c.alive) continue;
      const bool runnable = !(c.tput_a[ut] == 0.0 || (c.id.is_pair() && c.tput_b[ut] == 0.0));
      c.priority[ut] = c.in_allocation ? PriorityOf(c.allocation[ut], c.job_time[ut], Owed(c, ut),
                                                    worker_time, runnable)
                                       : 0.0;
    }
  }
}

// The user's type order (the original's ["v100", "p100", "k80"]), shuffled every round for
// the policies that do (spec §3.5).
std::vector<int> RoundScheduler::RoundTypeOrder() {
  std::vector<int> order = layout_.preference_order();
  if (traits_.shuffles_gpu_type_order) type_shuffler_.Shuffle(order);
  return order;
}

RoundScheduler::Capacity RoundScheduler::BeginChoice() {
  Capacity capacity;
  capacity.left.resize(static_cast<std::size_t>(num_types_));
  for (int t = 0; t < num_types_; ++t) {
    capacity.left[static_cast<std::size_t>(t)] = layout_.gpu_count(t);
    capacity.total_left += layout_.gpu_count(t);
  }
  ++stamp_;
  for (const auto& [job, until] : held_) job_stamp_[Index(job)] = stamp_;
  return capacity;
}

bool RoundScheduler::Blocked(const ComboState& c, const Capacity& capacity,
                             std::size_t type) const {
  const auto taken = [&](std::size_t member) { return job_stamp_[c.member_index[member]] == stamp_; };
  return c.scale_factor > capacity.left[type] || taken(0) || (c.id.is_pair() && taken(1));
}

void RoundScheduler::Take(int slot, int type, Capacity& capacity, std::vector<Chosen>& chosen) {
  const ComboState& c = combo(slot);
  capacity.left[static_cast<std::size_t>(type)] -= c.scale_factor;
  capacity.total_left -= c.scale_factor;
  for (int i = 0; i < c.id.size(); ++i) job_stamp_[c.member_index[static_cast<std::size_t>(i)]] = stamp_;
  chosen.push_back(Chosen{slot, type, c.scale_factor});
}

// Spec §3.5: per-type queues sorted by (priority, deficit, allocation) descending, ties in
// insertion order, concatenated in type order; a greedy scan takes what fits.
//
// The queue is visited lazily, in that order, until the type is full. Its candidates are the
// tracked combinations (a heap) and, for policies that run priority-0 combinations, the
// untracked ones: all of key (0, half or 0, 0), those that existed at the last reset (half)
// before the younger ones (0) in insertion order, so insertion order is their queue order
// and a cursor over order_ merges them in. Policies that skip priority 0 need only the
// allocation.
std::vector<RoundScheduler::Chosen> RoundScheduler::ChooseCombinations(
    const std::vector<int>& type_order) {
  if (options_.exhaustive_scans) return ChooseCombinationsExhaustive(type_order);
  struct Entry {
    double priority;
    double deficit;
    double allocation;
    std::uint64_t seq;
    int slot;
  };
  Capacity capacity = BeginChoice();
  const bool skips_zero = traits_.skips_zero_priority;
  const std::vector<int>& pool = skips_zero ? allocated_ : tracked_;
  const double half = HalfRound(options_);
  const auto nt = static_cast<std::size_t>(num_types_);
  // One pass over the pool gathers every live candidate's queue keys for all types into flat
  // scratch (candidates_ and, per candidate and type, candidate_keys_): the per-type scans
  // read that instead of each visiting the combinations' scattered per-type vectors, which
  // with a saturated queue's thousands of jobs was a tenth of the simulation (issue 12).
  candidates_.clear();
  candidate_keys_.clear();
  // Every live combination in the allocation is in the pool: the allocation itself, or the
  // tracked ones (singles from admission, pairs once allocated).
  for (int slot : pool) {
    ComboState& c = combo(slot);
    if (!c.alive) continue;
    if (c.in_allocation) UpdateAllocatedPriority(c);
    candidates_.push_back(
        Candidate{c.seq, slot, c.scale_factor, c.id.is_pair(), c.member_index});
    for (std::size_t t = 0; t < nt; ++t) {
      const bool runs = !(c.tput_a[t] <= 0.0 || (c.id.is_pair() && c.tput_b[t] <= 0.0));
      candidate_keys_.push_back(CandidateKey{c.priority[t], c.deficit[t],
                                             c.in_allocation ? c.allocation[t] : 0.0, runs});
    }
  }
  // Untracked combinations are candidates too unless priority 0 is skipped; the cursor over
  // order_ that finds them is skipped when every live one is tracked (always so without pairs).
  const std::size_t alive = order_.size() - dead_in_order_;
  const bool untracked_candidates = !skips_zero && candidates_.size() < alive;
  std::vector<Chosen> chosen;
  std::vector<Entry> entries;
  entries.reserve(candidates_.size());
  const auto after = [](const Entry& a, const Entry& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.deficit != b.deficit) return a.deficit < b.deficit;
    if (a.allocation != b.allocation) return a.allocation < b.allocation;
    return a.seq > b.seq;
  };
  for (int t : type_order) {
    const auto ut = static_cast<std::size_t>(t);
    const auto runs_here = [&](const ComboState& c) {
      return !(c.tput_a[ut] <= 0.0 || (c.id.is_pair() && c.tput_b[ut] <= 0.0));
    };
    const auto taken = [&](std::size_t index) { return job_stamp_[index] == stamp_; };
    entries.clear();
    for (std::size_t k = 0; k < candidates_.size(); ++k) {
      const Candidate& c = candidates_[k];
      const CandidateKey& key = candidate_keys_[k * nt + ut];
      // Blocked (as Blocked), cannot run here, or skipped at priority 0.
      if (c.scale_factor > capacity.left[ut] || taken(c.member_index[0]) ||
          (c.pair && taken(c.member_index[1]))) {
        continue;
      }
      if (!key.runs || (skips_zero && key.priority <= 0.0)) continue;
      entries.push_back(Entry{key.priority, key.deficit, key.allocation, c.seq, c.slot});
    }
    // A heap yields the order lazily: a full sort of n²/2 entries each round dominated whole
    // simulations (gandiva at 6 jobs/h: 891 s), while a round needs only the first few.
    std::make_heap(entries.begin(), entries.end(), after);
    auto unvisited = entries.end();
    std::size_t cursor = 0;  // in order_: the next untracked candidate
    const auto next_untracked = [&]() -> const ComboState* {
      for (; untracked_candidates && cursor < order_.size(); ++cursor) {
        const ComboState& c = combo(order_[cursor]);
        if (c.alive && !c.tracked && !Blocked(c, capacity, ut) && runs_here(c)) return &c;
      }
      return nullptr;
    };
    while (capacity.left[ut] > 0) {
      const ComboState* untracked = next_untracked();
      bool from_heap = unvisited != entries.begin();
      if (from_heap && untracked != nullptr) {
        const Entry candidate{0.0, untracked->seq < reset_seq_ ? half : 0.0, 0.0,
                              untracked->seq, -1};
        from_heap = !after(entries.front(), candidate);
      }
      int slot;
      if (from_heap) {
        std::pop_heap(entries.begin(), unvisited, after);
        --unvisited;
        slot = unvisited->slot;
      } else if (untracked != nullptr) {
        slot = order_[cursor++];
      } else {
        break;
      }
      const ComboState& c = combo(slot);
      if (Blocked(c, capacity, ut)) continue;
      Take(slot, t, capacity, chosen);
    }
    if (capacity.total_left == 0) break;
  }
  return chosen;
}

// The plain scan: every live combination is a candidate on every type.
std::vector<RoundScheduler::Chosen> RoundScheduler::ChooseCombinationsExhaustive(
    const std::vector<int>& type_order) {
  struct Entry {
    double priority;
    double deficit;
    double allocation;
    int position;  // in order_
  };
  Capacity capacity = BeginChoice();
  std::vector<Chosen> chosen;
  std::vector<Entry> entries;
  entries.reserve(order_.size());
  for (int t : type_order) {
    const auto ut = static_cast<std::size_t>(t);
    // The candidates: what can run on this type now.
    entries.clear();
    for (std::size_t pos = 0; pos < order_.size(); ++pos) {
      const ComboState& c = combo(order_[pos]);
      if (!c.alive || Blocked(c, capacity, ut)) continue;
      if (c.tput_a[ut] <= 0.0 || (c.id.is_pair() && c.tput_b[ut] <= 0.0)) continue;
      if (traits_.skips_zero_priority && c.priority[ut] <= 0.0) continue;
      entries.push_back(Entry{c.priority[ut], c.deficit[ut],
                              c.in_allocation ? c.allocation[ut] : 0.0, static_cast<int>(pos)});
    }
    // Visited in (priority, deficit, allocation, position) order, a total order, until the
    // type is full. A heap yields that order lazily: with space sharing there are n²/2 pair
    // entries and a full sort of them each round dominated whole simulations (gandiva at
    // 6 jobs/h: 891 s), while a round needs only the first few.
    const auto after = [](const Entry& a, const Entry& b) {
      if (a.priority != b.priority) return a.priority < b.priority;
      if (a.deficit != b.deficit) return a.deficit < b.deficit;
      if (a.allocation != b.allocation) return a.allocation < b.allocation;
      return a.position > b.position;
    };
    std::make_heap(entries.begin(), entries.end(), after);
    for (auto unvisited = entries.end();
         unvisited != entries.begin() && capacity.left[ut] > 0;) {
      std::pop_heap(entries.begin(), unvisited, after);
      --unvisited;
      const Entry& e = *unvisited;
      const int slot = order_[static_cast<std::size_t>(e.position)];
      const ComboState& c = combo(slot);
      if (Blocked(c, capacity, ut)) continue;
      Take(slot, t, capacity, chosen);
    }
    if (capacity.total_left == 0) break;
  }
  return chosen;
}

// Spec §3.6: per type, largest scale factor first; keep last round's GPUs where they are all
// still free, then fill from the first server with free GPUs onwards (consolidation).
Result<std::vector<RoundScheduler::Placed>> RoundScheduler::PlaceOnGpus(
    const std::vector<int>& type_order, const std::vector<Chosen>& chosen) {
  if (options_.topology_aware_placement) return PlaceByTopology(type_order, chosen);
  const std::int64_t round = stats_.rounds;
  std::vector<Placed> placed;
  worker_assigned_.assign(static_cast<std::size_t>(layout_.num_workers()), 0);
  auto is_assigned = [&](WorkerId w) {
    return worker_assigned_[static_cast<std::size_t>(w.value())] != 0;
  };
  auto mark = [&](WorkerId w) { worker_assigned_[static_cast<std::size_t>(w.value())] = 1; };

  std::vector<Chosen> list;
  for (int t : type_order) {
    list.clear();
    for (const Chosen& c : chosen) {
      if (c.type == t) list.push_back(c);
    }
    if (list.empty()) continue;
    std::stable_sort(list.begin(), list.end(), [](const Chosen& a, const Chosen& b) {
      return a.scale_factor > b.scale_factor;
    });
    const auto& servers = layout_.servers(t);
    std::vector<std::size_t> next(servers.size(), 0);  // first unexamined GPU of each server
    std::size_t server = 0;

    for (std::size_t begin = 0; begin < list.size();) {
      const int sf = list[begin].scale_factor;
      std::size_t end = begin;
      while (end < list.size() && list[end].scale_factor == sf) ++end;
      // Keep last round's GPUs.
      for (std::size_t k = begin; k < end; ++k) {
        ComboState& c = combo(list[k].slot);
        if (c.last_round < 0 || c.last_round != round - 1 || c.last_type != t) continue;
        // An elastic job resized since: its old GPUs are the wrong number.
        if (static_cast<int>(c.last_workers.size()) != c.scale_factor) continue;
        if (std::any_of(c.last_workers.begin(), c.last_workers.end(), is_assigned)) continue;
        for (WorkerId w : c.last_workers) mark(w);
        c.placed_round = round;
        placed.push_back(Placed{list[k].slot, t, c.last_workers});
      }
      // Fill the rest.
      for (std::size_t k = begin; k < end; ++k) {
        ComboState& c = combo(list[k].slot);
        if (c.placed_round == round) continue;
        // The original silently leaves jobs that are not in the allocation unplaced.
        if (options_.compat.unallocated_stay_idle && !c.in_allocation) continue;
        std::vector<WorkerId> workers;
        workers.reserve(static_cast<std::size_t>(sf));
        while (static_cast<int>(workers.size()) < sf && server < servers.size()) {
          if (next[server] == servers[server].size()) {
            ++server;
            continue;
          }
          const WorkerId w = servers[server][next[server]++];
          if (!is_assigned(w)) {
            mark(w);
            workers.push_back(w);
          }
        }
        if (static_cast<int>(workers.size()) != sf) {
          return Status::Internal("could not place " + c.id.ToString() + " on " +
                                  std::to_string(sf) + " " + layout_.type_name(t) + " GPUs");
        }
        c.placed_round = round;
        placed.push_back(Placed{list[k].slot, t, std::move(workers)});
      }
      begin = end;
    }
  }
  return placed;
}

// placement.h: as above (largest first, last round's GPUs kept where they still fit), but
// every resource must fit and new GPUs are chosen for consolidation; what does not fit waits.
std::vector<RoundScheduler::Placed> RoundScheduler::PlaceByTopology(
    const std::vector<int>& type_order, const std::vector<Chosen>& chosen) {
  const std::int64_t round = stats_.rounds;
  ResourcePool pool(layout_);
  std::vector<Placed> placed;
  std::vector<Chosen> list;
  const auto demand_of = [&](const ComboState& c) {
    WorkerDemand d;
    for (int i = 0; i < c.id.size(); ++i) {
      // By Index: the caller's ids are not record positions (the daemon's start at 1).
      const JobRecord& r = records_[Index(c.id.member(i))];
      d.cpus += r.cpus_per_gpu;
      d.mem_gb += r.mem_gb_per_gpu;
    }
    return d;
  };
  for (int t : type_order) {
    list.clear();
    for (const Chosen& c : chosen) {
      if (c.type == t) list.push_back(c);
    }
    std::stable_sort(list.begin(), list.end(), [](const Chosen& a, const Chosen& b) {
      return a.scale_factor > b.scale_factor;
    });
    for (std::size_t begin = 0; begin < list.size();) {
      std::size_t end = begin;
      while (end < list.size() && list[end].scale_factor == list[begin].scale_factor) ++end;
      for (std::size_t k = begin; k < end; ++k) {
        ComboState& c = combo(list[k].slot);
        if (c.last_round < 0 || c.last_round != round - 1 || c.last_type != t) continue;
        // An elastic job resized since: its old GPUs are the wrong number.
        if (static_cast<int>(c.last_workers.size()) != c.scale_factor) continue;
        if (!pool.TryTake(c.last_workers, demand_of(c))) continue;
        c.placed_round = round;
        placed.push_back(Placed{list[k].slot, t, c.last_workers});
      }
      for (std::size_t k = begin; k < end; ++k) {
        ComboState& c = combo(list[k].slot);
        if (c.placed_round == round) continue;
        if (options_.compat.unallocated_stay_idle && !c.in_allocation) continue;
        std::optional<std::vector<WorkerId>> workers =
            pool.Take(t, list[k].scale_factor, demand_of(c));
        if (!workers) continue;
        c.placed_round = round;
        placed.push_back(Placed{list[k].slot, t, std::move(*workers)});
      }
      begin = end;
    }
  }
  return placed;
}

RoundPlan RoundScheduler::EmitPlan(Seconds now, std::vector<Placed> placed, bool recomputed) {
  const std::int64_t round = stats_.rounds;
  // Lease statistics (spec §3.6): last round's combinations that still have an active member
  // could have kept their GPUs; count those that did.
  for (const Combination& id : last_round_combos_) {
    if (IsActive(id.member(0)) || (id.is_pair() && IsActive(id.member(1)))) {
      ++stats_.lease_extension_opportunities;
    }
  }
  last_round_combos_.clear();

  RoundPlan plan;
  plan.start = now;
  plan.allocation_recomputed = recomputed;
  plan.rejected = std::move(rejected_);
  rejected_.clear();
  plan.assignments.reserve(placed.size());
  const double round_seconds = options_.round_length.value();
  for (Placed& p : placed) {
    Track(p.slot);  // its micro-task books time received
    ComboState& c = combo(p.slot);
    Assignment a;
    a.combination = c.id;
    a.gpu_type = p.type;
    a.lease_duration = options_.round_length;
    a.lease_extended =
        c.last_round >= 0 && c.last_round == round - 1 &&
        c.last_workers.size() == p.workers.size() &&
        std::is_permutation(p.workers.begin(), p.workers.end(), c.last_workers.begin());
    if (a.lease_extended) ++stats_.lease_extensions;
    for (int i = 0; i < c.id.size(); ++i) {
      JobRecord& record = records_[Index(c.id.member(i))];
      const double tput = ComboThroughput(c, i, p.type);
      const double remaining = record.total_steps - record.steps_run;
      a.max_steps.push_back(std::min(std::trunc(tput * round_seconds), remaining));
      a.expected_throughput.push_back(tput);
      if (!record.first_start) record.first_start = now;
    }
    c.last_round = round;
    c.last_type = p.type;
    c.last_workers = p.workers;
    c.running = true;
    ++num_running_;
    last_round_combos_.push_back(c.id);
    a.workers = std::move(p.workers);
    plan.assignments.push_back(std::move(a));
  }
  ++stats_.rounds;
  stats_.micro_tasks += static_cast<std::int64_t>(plan.assignments.size());
  return plan;
}

}  // namespace gavel::mechanism
