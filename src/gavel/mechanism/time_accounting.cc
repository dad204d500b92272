#include "gavel/mechanism/time_accounting.h"

#include <algorithm>

namespace gavel::mechanism {

namespace {

// Priority = allocation / share of the type's time received since the last reset, for a
// combination in the allocation (0 for the others).
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

TimeAccounting::TimeAccounting(JobTable& table, TimeAccountingOptions options)
    : table_(&table),
      options_(options),
      worker_time_(static_cast<std::size_t>(table.num_types()), 0.0),
      worker_busy_(static_cast<std::size_t>(table.layout().num_workers()), 0.0) {}

void TimeAccounting::Admitted(const ActiveJob& job) {
  Track(job.single_slot);  // singles start with the credit, which untracked combinations lack
  ComboState& s = table_->combo(job.single_slot);
  std::fill(s.job_time.begin(), s.job_time.end(), half_round());
  // The plain scans read every stored value.
  if (options_.exhaustive_scans) {
    for (int slot : job.pair_slots) Track(slot);
  }
}

void TimeAccounting::Track(int slot) {
  ComboState& c = table_->combo(slot);
  if (c.tracked) return;
  c.tracked = true;
  // What Reset would have made of it: a combination that neither ran nor was allocated books
  // received = job_time - half = -half at its first reset (pairs start without the credit),
  // so deficit = 0 + half, job_time = half, and nothing after that.
  const double implicit = UntrackedDeficit(c);
  std::fill(c.job_time.begin(), c.job_time.end(), implicit);
  std::fill(c.deficit.begin(), c.deficit.end(), implicit);
  tracked_.push_back(slot);
}

void TimeAccounting::TrackAll() {
  for (int slot : table_->order()) {
    if (table_->combo(slot).alive) Track(slot);
  }
}

bool TimeAccounting::ResetDue(Seconds now) const {
  if (force_reset_) return true;
  const double interval = options_.min_reset_interval.value();
  if (options_.reset_at_zero_means_never) {
    return now.value() - sentinel_last_reset_ >= interval || sentinel_last_reset_ == 0.0;
  }
  return !last_reset_ || (now - *last_reset_).value() >= interval;
}

void TimeAccounting::Reset(Seconds now) {
  const double last = options_.reset_at_zero_means_never
                          ? sentinel_last_reset_
                          : last_reset_.value_or(Seconds(0.0)).value();
  const double elapsed = now.value() - last;
  const double half = half_round();
  // Untracked combinations change only implicitly (reset_seq_ below); every live one adds
  // half a round to each type's total, in the same sequence of additions as visiting them.
  const std::vector<int>& visit = options_.exhaustive_scans ? table_->order() : tracked_;
  const std::size_t alive = table_->num_alive();
  for (std::size_t t = 0; t < worker_time_.size(); ++t) {
    double total = 0.0;
    for (int slot : visit) {
      ComboState& c = table_->combo(slot);
      if (!c.alive) continue;
      const double received = c.job_time[t] - half;
      const double should = c.in_allocation ? c.allocation[t] * elapsed : 0.0;
      c.deficit[t] += should - received;
      c.job_time[t] = half;
      if (options_.exhaustive_scans) total += half;
    }
    if (!options_.exhaustive_scans) {
      for (std::size_t k = 0; k < alive; ++k) total += half;
    }
    worker_time_[t] = total;
  }
  reset_seq_ = table_->next_seq();
  sentinel_last_reset_ = now.value();
  last_reset_ = now;
  force_reset_ = false;
}

void TimeAccounting::OpenResetGate() {
  // The original sets its last reset time to 0, which also makes the next reset book the whole
  // run so far as elapsed time.
  if (options_.reset_at_zero_means_never) {
    sentinel_last_reset_ = 0.0;
  } else {
    force_reset_ = true;
  }
}

void TimeAccounting::UpdatePriorities() {
  if (options_.exhaustive_scans) {
    stale_priority_.clear();
    for (std::size_t t = 0; t < worker_time_.size(); ++t) {
      const double worker_time = worker_time_[t];
      for (int slot : table_->order()) {
        ComboState& c = table_->combo(slot);
        if (!c.alive) continue;
        const bool runnable = !(c.tput_a[t] == 0.0 || (c.id.is_pair() && c.tput_b[t] == 0.0));
        c.priority[t] = c.in_allocation ? PriorityOf(c.allocation[t], c.job_time[t], Owed(c, t),
                                                     worker_time, runnable)
                                        : 0.0;
      }
    }
    for (int slot : table_->order()) {
      ComboState& c = table_->combo(slot);
      if (c.alive && c.in_allocation) Entitle(c);
    }
    return;
  }
  for (int slot : stale_priority_) {
    ComboState& c = table_->combo(slot);
    if (c.alive && !c.in_allocation) std::fill(c.priority.begin(), c.priority.end(), 0.0);
  }
  stale_priority_.clear();
}

void TimeAccounting::UpdateAllocatedPriority(ComboState& c) const {
  for (std::size_t t = 0; t < worker_time_.size(); ++t) {
    const bool runnable = !(c.tput_a[t] == 0.0 || (c.id.is_pair() && c.tput_b[t] == 0.0));
    c.priority[t] = PriorityOf(c.allocation[t], c.job_time[t], Owed(c, t), worker_time_[t],
                               runnable);
  }
}

void TimeAccounting::Entitle(ComboState& c) {
  const double round = options_.round_length.value();
  double entitled = 0.0;
  for (std::size_t t = 0; t < c.lag.size(); ++t) {
    c.lag[t] += c.allocation[t] * round;
    entitled += c.allocation[t] * round;
  }
  for (int i = 0; i < c.id.size(); ++i) {
    table_->record(c.member_index[static_cast<std::size_t>(i)]).entitled_seconds += entitled;
  }
}

double TimeAccounting::Owed(const ComboState& c, std::size_t type) const {
  return options_.forgets_deficit ? 0.0 : std::max(c.deficit[type], 0.0);
}

void TimeAccounting::Book(ComboState& c, int type, double seconds,
                          std::span<const WorkerId> workers) {
  const auto ut = static_cast<std::size_t>(type);
  c.job_time[ut] += seconds;
  c.lag[ut] -= seconds;
  for (int i = 0; i < c.id.size(); ++i) {
    table_->record(c.member_index[static_cast<std::size_t>(i)]).received_seconds += seconds;
  }
  worker_time_[ut] += seconds;
  for (WorkerId w : workers) worker_busy_[static_cast<std::size_t>(w.value())] += seconds;
}

void TimeAccounting::ForgetDead() {
  const auto dead = [&](int slot) { return !table_->combo(slot).alive; };
  std::erase_if(tracked_, dead);
  std::erase_if(stale_priority_, dead);
}

void TimeAccounting::ChangeLayout(std::span<const int> old_of_new,
                                  std::span<const std::optional<WorkerId>> successor,
                                  int new_workers) {
  std::vector<double> worker_time(old_of_new.size(),
                                  half_round() * static_cast<double>(table_->num_alive()));
  for (std::size_t t = 0; t < old_of_new.size(); ++t) {
    if (old_of_new[t] >= 0) worker_time[t] = worker_time_[static_cast<std::size_t>(old_of_new[t])];
  }
  std::vector<double> busy(static_cast<std::size_t>(new_workers), 0.0);
  for (std::size_t w = 0; w < successor.size(); ++w) {
    if (successor[w]) busy[static_cast<std::size_t>(successor[w]->value())] = worker_busy_[w];
  }
  worker_time_ = std::move(worker_time);
  worker_busy_ = std::move(busy);
}

}  // namespace gavel::mechanism
