#include "gavel/mechanism/job_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gavel::mechanism {

JobTable::JobTable(ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
                   std::vector<int> table_types, JobTableOptions options)
    : layout_(std::move(layout)),
      throughputs_(std::move(throughputs)),
      table_types_(std::move(table_types)),
      colocated_table_(*throughputs_, table_types_),
      options_(std::move(options)),
      num_types_(layout_.num_types()) {}

ActiveJob* JobTable::FindActive(JobId job) {
  const std::optional<std::size_t> index = FindIndex(job);
  return index ? active_at_[*index] : nullptr;
}

const ActiveJob* JobTable::FindActive(JobId job) const {
  const std::optional<std::size_t> index = FindIndex(job);
  return index ? active_at_[*index] : nullptr;
}

std::size_t JobTable::Index(JobId job) const {
  const std::optional<std::size_t> index = FindIndex(job);
  if (!index) throw std::out_of_range("job " + job.ToString() + " has no record");
  return *index;
}

void JobTable::MapIds() {
  if (!ids_are_indices_) return;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    if (!records_.forgotten(i)) index_of_.emplace(JobId(i), i);
  }
  ids_are_indices_ = false;
}

int JobTable::SlotOf(const Combination& c) const {
  if (c.is_pair()) {
    const auto it = pair_slots_.find(c);
    return it == pair_slots_.end() ? -1 : it->second;
  }
  const ActiveJob* job = FindActive(c.member(0));
  return job == nullptr ? -1 : job->single_slot;
}

int JobTable::PairSlot(JobId a, JobId b) const {
  if (a == b) return -1;
  const auto it = pair_slots_.find(Combination::Pair(a, b));
  return it == pair_slots_.end() ? -1 : it->second;
}

Result<int> JobTable::Validate(JobId id, const JobDescription& job) const {
  if (IsActive(id)) {
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
  if (!std::isfinite(job.restart_cost.value()) || job.restart_cost.value() < 0.0) {
    return Status::InvalidArgument("job " + id.ToString() +
                                   ": the restart cost must be a non-negative number of seconds");
  }
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
  return *key;
}

ActiveJob& JobTable::Admit(JobId id, const JobDescription& job, int table_key) {
  JobRecord record;
  record.table_key = table_key;
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
  record.restart_cost = job.restart_cost;
  const auto nt = static_cast<std::size_t>(num_types_);
  if (const std::optional<std::size_t> known = FindIndex(id)) {
    // Back after leaving: a fresh record in the same place.
    const std::size_t index = *known;
    records_[index] = std::move(record);
    for (std::size_t t = 0; t < nt; ++t) gpu_seconds_[index * nt + t] = 0.0;
  } else {
    if (id != JobId(records_.size())) MapIds();
    if (!ids_are_indices_) index_of_.emplace(id, records_.size());
    records_.push_back(std::move(record));
    active_at_.push_back(nullptr);
    for (std::size_t t = 0; t < nt; ++t) gpu_seconds_.push_back(0.0);
  }
  if (!job.gpu_seconds_done.empty()) {
    const std::size_t first = Index(id) * nt;
    for (std::size_t t = 0; t < nt; ++t) gpu_seconds_[first + t] = job.gpu_seconds_done[t];
  }
  if (job.held_until) held_[id] = *job.held_until;

  ActiveJob& active = active_[id];
  active_at_[Index(id)] = &active;
  active.id = id;
  active.record = Index(id);
  active.table_key = table_key;
  active.scale_factor = job.type.scale_factor;
  active.last_ran_until = job.arrival;
  active.workers = job.type.scale_factor;
  active.min_workers = job.elastic ? job.elastic->min_workers : job.type.scale_factor;
  active.max_workers = job.elastic ? job.elastic->max_workers : job.type.scale_factor;
  active.elastic_tput.clear();
  if (job.elastic) {
    active.elastic_tput = ElasticThroughputs(*throughputs_, table_types_, table_key, *job.elastic);
  }
  active.utility = job.utility;

  // The job itself first, then its pairs with every earlier active job of the same scale
  // factor: the original's insertion order, which breaks ties in the per-type queues.
  active.tput_estimate.assign(nt, std::numeric_limits<double>::quiet_NaN());
  active.single_slot = NewCombo(Combination::Single(id), active.scale_factor);
  RefreshThroughputs(active);
  if (options_.packing && !active.elastic()) {
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
  return active;
}

int JobTable::NewCombo(const Combination& id, int scale_factor) {
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
  for (int i = 0; i < id.size(); ++i) {
    c.member_index[static_cast<std::size_t>(i)] = Index(id.member(i));
  }
  c.alive = true;
  c.scale_factor = scale_factor;
  c.in_allocation = false;
  c.tput_a.assign(n, 0.0);
  c.tput_b.assign(id.is_pair() ? n : 0, 0.0);
  c.allocation.assign(n, 0.0);
  c.job_time.assign(n, 0.0);
  c.deficit.assign(n, 0.0);
  c.priority.assign(n, 0.0);
  c.lag.assign(n, 0.0);
  c.last_round = -1;
  c.last_workers.clear();
  c.running = false;
  c.reports.clear();
  c.placed_round = -1;
  c.seq = next_seq_++;
  c.tracked = false;
  order_.push_back(slot);
  return slot;
}

void JobTable::RefreshThroughputs(const ActiveJob& job) {
  ComboState& s = combo(job.single_slot);
  const bool resized = job.workers != job.scale_factor;
  s.scale_factor = job.workers;
  s.tput_a = resized ? job.elastic_tput[static_cast<std::size_t>(job.workers - job.min_workers)]
                     : IsolatedThroughputs(*throughputs_, table_types_, job.table_key);
  for (int t = 0; t < num_types_; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    // Online estimates are of the declared count.
    if (!resized && !std::isnan(job.tput_estimate[ut])) s.tput_a[ut] = job.tput_estimate[ut];
    if (!options_.raw_policy_input && job.workers > layout_.gpu_count(t)) s.tput_a[ut] = 0.0;
  }
}

void JobTable::RefreshPairThroughputs(ComboState& p) {
  const auto key_of = [&](JobId j) { return records_[Index(j)].table_key; };
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
    const bool oversized = !options_.raw_policy_input && p.scale_factor > layout_.gpu_count(t);
    p.tput_a[ut] = oversized ? 0.0 : co[0];
    p.tput_b[ut] = oversized ? 0.0 : co[1];
  }
}

Status JobTable::RefreshPair(JobId a, JobId b) {
  const int slot = PairSlot(a, b);
  if (slot < 0) {
    return Status::NotFound("no pair of jobs " + a.ToString() + " and " + b.ToString());
  }
  RefreshPairThroughputs(combo(slot));
  return Status::Ok();
}

Status JobTable::UpdateThroughput(JobId job, int type, double steps_per_s) {
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

Status JobTable::UpdateRestartCost(JobId job, Seconds cost) {
  if (FindActive(job) == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  if (!std::isfinite(cost.value()) || cost.value() < 0.0) {
    return Status::InvalidArgument("job " + job.ToString() +
                                   ": a restart cost must be a non-negative number of seconds");
  }
  records_[Index(job)].restart_cost = cost;
  return Status::Ok();
}

void JobTable::Erase(JobId job, bool dropped) {
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
  active_at_[Index(job)] = nullptr;
  active_.erase(job);
}

// Only a compacted slot may be reused: a reused slot must not appear twice in the order.
void JobTable::CompactOrder() {
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

void JobTable::Forget(JobId job) {
  GAVEL_CHECK(!IsActive(job));
  const std::optional<std::size_t> found = FindIndex(job);
  GAVEL_CHECK(found.has_value());
  const std::size_t index = *found;
  records_.Forget(index);
  active_at_.Forget(index);
  const auto nt = static_cast<std::size_t>(num_types_);
  for (std::size_t t = 0; t < nt; ++t) gpu_seconds_.Forget(index * nt + t);
  if (!ids_are_indices_) index_of_.erase(job);
}

bool JobTable::BookProgress(JobId job, int type, double steps, double elapsed,
                            double max_elapsed, int gpus, Seconds finished_at) {
  const std::size_t index = Index(job);
  JobRecord& record = records_[index];
  const auto ut = static_cast<std::size_t>(type);
  if (!options_.instance_costs.empty()) {
    record.cost += options_.instance_costs[ut] * elapsed / 3600.0 * gpus;
  }
  gpu_seconds_[index * static_cast<std::size_t>(num_types_) + ut] += max_elapsed * gpus;
  record.steps_run += steps;
  if (record.total_steps - record.steps_run > 0.0) return false;
  record.finish = finished_at;
  return true;
}

Status JobTable::Hold(JobId job, Seconds until) {
  if (FindActive(job) == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  held_[job] = until;
  return Status::Ok();
}

Status JobTable::Release(JobId job) {
  if (FindActive(job) == nullptr) {
    return Status::NotFound("job " + job.ToString() + " is not active");
  }
  held_.erase(job);
  return Status::Ok();
}

void JobTable::ExpireHolds(Seconds now) {
  std::erase_if(held_, [&](const auto& hold) { return hold.second <= now; });
}

void JobTable::ChangeLayout(ClusterLayout layout, std::vector<int> table_types,
                            std::span<const int> old_of_new,
                            std::span<const std::optional<WorkerId>> successor,
                            double fresh_job_time, std::vector<double> instance_costs) {
  const std::size_t nt = old_of_new.size();
  auto remap = [&](const std::vector<double>& old, double fresh) {
    std::vector<double> out(nt, fresh);
    for (std::size_t t = 0; t < nt; ++t) {
      if (old_of_new[t] >= 0) out[t] = old[static_cast<std::size_t>(old_of_new[t])];
    }
    return out;
  };
  for (ComboState& c : combos_) {
    if (!c.alive) continue;
    c.allocation = remap(c.allocation, 0.0);
    c.job_time = remap(c.job_time, fresh_job_time);
    c.deficit = remap(c.deficit, 0.0);
    c.priority = remap(c.priority, 0.0);
    c.lag = remap(c.lag, 0.0);
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
  RecordStore<double> gpu_seconds;
  for (std::size_t j = 0; j < records_.size(); ++j) {
    for (std::size_t t = 0; t < nt; ++t) {
      const bool kept = old_of_new[t] >= 0 && !records_.forgotten(j);
      gpu_seconds.push_back(kept ? gpu_seconds_[j * static_cast<std::size_t>(num_types_) +
                                                static_cast<std::size_t>(old_of_new[t])]
                                 : 0.0);
    }
  }
  for (std::size_t j = 0; j < records_.size(); ++j) {
    if (!records_.forgotten(j)) continue;
    for (std::size_t t = 0; t < nt; ++t) gpu_seconds.Forget(j * nt + t);
  }
  for (auto& [id, job] : active_) {
    job.tput_estimate = remap(job.tput_estimate, std::numeric_limits<double>::quiet_NaN());
  }
  layout_ = std::move(layout);
  table_types_ = std::move(table_types);
  num_types_ = static_cast<int>(nt);
  options_.instance_costs = std::move(instance_costs);
  gpu_seconds_ = std::move(gpu_seconds);
  colocated_table_ = ColocatedMatrix(*throughputs_, table_types_);
  for (const auto& [id, job] : active_) {
    if (ReadsColocatedTable() && !job.elastic()) colocated_table_.Add(job.table_key);
  }
  for (const auto& [id, job] : active_) RefreshThroughputs(job);
  for (const auto& [pair, slot] : pair_slots_) RefreshPairThroughputs(combo(slot));
  // Dead slots get vectors of the new size when reused (NewCombo).
}

}  // namespace gavel::mechanism
