#include "gavel/mechanism/allocation_step.h"

#include <algorithm>
#include <chrono>

namespace gavel::mechanism {

AllocationStep::AllocationStep(JobTable& table, TimeAccounting& accounting,
                               std::unique_ptr<policy::Policy> policy,
                               policy::PolicyCapabilities traits, AllocationStepOptions options)
    : table_(&table),
      accounting_(&accounting),
      policy_(std::move(policy)),
      traits_(traits),
      options_(std::move(options)) {}

Result<bool> AllocationStep::MaybeRecompute(Seconds now, std::int64_t round) {
  // Queue disciplines (Tiresias) move jobs as their service grows: a fresh allocation each round.
  if (traits_.reallocates_every_round && !table_->active().empty()) need_reallocation_ = true;
  if (!need_reallocation_) return false;
  const bool reset_due = accounting_->ResetDue(now);
  if (options_.compat.gated_reallocation && !reset_due) return false;
  if (reset_due) accounting_->Reset(now);
  GAVEL_RETURN_IF_ERROR(Recompute(now, round));
  return true;
}

std::vector<JobId> AllocationStep::TakeRejected() {
  std::vector<JobId> rejected = std::move(rejected_);
  rejected_.clear();
  return rejected;
}

void AllocationStep::ForgetDead() {
  std::erase_if(allocated_, [&](int slot) { return !table_->combo(slot).alive; });
}

policy::PolicyInput AllocationStep::InputAt(Seconds now, std::int64_t round,
                                            std::span<const JobId> without) const {
  std::vector<const ActiveJob*> rows;
  rows.reserve(table_->active().size());
  for (const auto& [id, job] : table_->active()) {
    if (std::find(without.begin(), without.end(), id) == without.end()) rows.push_back(&job);
  }
  return InputOf(now, round, rows);
}

policy::PolicyInput AllocationStep::InputOf(Seconds now, std::int64_t round,
                                            std::span<const ActiveJob* const> rows) const {
  const JobTable& table = *table_;
  std::vector<ActiveJobInfo> jobs;
  jobs.reserve(rows.size());
  for (const ActiveJob* row : rows) {
    const ActiveJob& job = *row;
    const JobRecord& record = table.records()[job.record];
    // The single's throughputs: the table's, or UpdateThroughput's estimates.
    jobs.push_back(ActiveJobInfo{job.id, job.table_key, job.workers, record.priority_weight,
                                 record.total_steps - record.steps_run, record.arrival,
                                 record.deadline, table.combo(job.single_slot).tput_a,
                                 /*unpairable=*/job.elastic()});
  }
  PolicyInputOptions input_options;
  input_options.pairs = traits_.packing;
  input_options.keep_unusable_pairs = options_.compat.raw_policy_input;
  input_options.zero_oversized = !options_.compat.raw_policy_input;
  input_options.instance_costs = table.instance_costs();
  input_options.colocated_table = table.colocated_table();
  if (table.colocated_source()) {
    // The policy sees the pairs' throughputs the scheduler holds (estimates until measured).
    input_options.colocated = [&](std::size_t a, std::size_t b) {
      std::vector<std::array<double, 2>> co(static_cast<std::size_t>(table.num_types()),
                                            {0.0, 0.0});
      const int slot = table.PairSlot(jobs[a].id, jobs[b].id);
      if (slot < 0) return co;
      const ComboState& c = table.combo(slot);
      for (std::size_t t = 0; t < co.size(); ++t) co[t] = {c.tput_a[t], c.tput_b[t]};
      return co;
    };
  }
  policy::PolicyInput input = BuildPolicyInputForJobs(table.layout(), table.throughputs(),
                                                      table.table_types(), jobs, now,
                                                      input_options);
  AddEntities(input, rows);
  AddHistory(input, now, round, rows);
  return input;
}

void AllocationStep::AddHistory(policy::PolicyInput& input, Seconds now, std::int64_t round,
                                std::span<const ActiveJob* const> rows) const {
  const JobTable& table = *table_;
  const ClusterLayout& layout = table.layout();
  const int num_types = table.num_types();
  const HostResources& host = layout.host_resources();
  const int servers = layout.num_servers();
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
      row.throughput_by_workers =
          Matrix(job.elastic_tput.size(), static_cast<std::size_t>(num_types));
      for (std::size_t c = 0; c < job.elastic_tput.size(); ++c) {
        const int workers = job.min_workers + static_cast<int>(c);
        for (int t = 0; t < num_types; ++t) {
          const bool fits = options_.compat.raw_policy_input || workers <= layout.gpu_count(t);
          row.throughput_by_workers(c, static_cast<std::size_t>(t)) =
              fits ? job.elastic_tput[c][static_cast<std::size_t>(t)] : 0.0;
        }
      }
    }
    const std::size_t index = job.record;
    const JobRecord& record = table.records()[index];
    for (int t = 0; t < num_types; ++t) row.attained_gpu_seconds += table.gpu_seconds(index, t);
    const ComboState& single = table.combo(job.single_slot);
    const bool ran_last_round = single.last_round >= 0 && single.last_round == round - 1;
    row.running_type = ran_last_round && single.last_type < num_types ? single.last_type : -1;
    row.waiting = row.running_type >= 0 ? Seconds(0.0) : now - job.last_ran_until;
    if (single.in_allocation) row.current_allocation = single.allocation;
    row.cpus_per_gpu = record.cpus_per_gpu;
    row.mem_gb_per_gpu = record.mem_gb_per_gpu;
    row.app = record.app;
  }
}

// The hierarchical policies' entities: those of the jobs in the problem, sorted, with the
// weights the caller set (1 where it set none).
void AllocationStep::AddEntities(policy::PolicyInput& input,
                                 std::span<const ActiveJob* const> rows) const {
  const auto entity_of = [&](std::size_t i) -> const std::string& {
    return table_->records()[rows[i]->record].entity;
  };
  std::vector<std::string> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!entity_of(i).empty()) names.push_back(entity_of(i));
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
    const std::string& entity = entity_of(i);
    if (entity.empty()) continue;
    input.jobs[i].entity = static_cast<int>(
        std::lower_bound(names.begin(), names.end(), entity) - names.begin());
  }
}

Status AllocationStep::Recompute(Seconds now, std::int64_t round) {
  ++counters_.recomputations;
  need_reallocation_ = false;
  std::vector<ActiveJob*> rows;
  rows.reserve(table_->active().size());
  for (auto& [id, job] : table_->active()) rows.push_back(&job);
  // Built before the old allocation is cleared: it carries each job's current allocation (the
  // policies' `stay` option keeps close to it).
  const policy::PolicyInput input =
      rows.empty() ? policy::PolicyInput{}
                   : InputOf(now, round, std::span<const ActiveJob* const>(rows.data(), rows.size()));
  for (int slot : options_.exhaustive_scans ? table_->order() : allocated_) {
    ComboState& c = table_->combo(slot);
    if (c.in_allocation) accounting_->MarkStale(slot);
    c.in_allocation = false;
    std::fill(c.allocation.begin(), c.allocation.end(), 0.0);
  }
  allocated_.clear();
  if (table_->active().empty()) return Status::Ok();

  const auto start = std::chrono::steady_clock::now();
  Result<policy::PolicyOutput> output = policy_->Allocate(input);
  counters_.solve_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++counters_.solves;
  if (!output.ok()) {
    return output.status().WithContext("policy " + options_.policy_name +
                                       " at t=" + std::to_string(now.value()) + " s");
  }
  const Matrix& x = output->allocation;
  if (x.rows() != input.num_jobs() || x.cols() != input.num_types()) {
    return Status::Internal("policy " + options_.policy_name + " returned a " +
                            std::to_string(x.rows()) + "x" + std::to_string(x.cols()) +
                            " allocation for " + std::to_string(input.num_jobs()) + " jobs");
  }
  const auto n = static_cast<std::size_t>(table_->num_types());
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    const int slot = rows[i]->single_slot;
    ComboState& c = table_->combo(slot);
    c.in_allocation = true;
    for (std::size_t j = 0; j < n; ++j) c.allocation[j] = x(i, j);
    allocated_.push_back(slot);
  }
  const Matrix& xp = output->pair_allocation;
  const bool has_pairs = xp.rows() == input.pairs.size() && xp.cols() == n;
  for (std::size_t p = 0; p < input.pairs.size(); ++p) {
    // A pair the policy gave nothing is, outside the original's placement rule
    // (unallocated_stay_idle), the same as one left out of the allocation: priority 0, no time
    // owed. Skipping it spares a hash lookup per candidate pair per recomputation, the
    // simulator's hot spot for packing policies that reallocate every round
    // (gandiva_introspective) when a few hundred jobs wait.
    bool given = false;
    for (std::size_t j = 0; has_pairs && !given && j < n; ++j) given = xp(p, j) != 0.0;
    if (!given && !options_.compat.unallocated_stay_idle) continue;
    const policy::JobPair& pair = input.pairs[p];
    const int slot = table_->PairSlot(input.jobs[static_cast<std::size_t>(pair.first)].id,
                                      input.jobs[static_cast<std::size_t>(pair.second)].id);
    GAVEL_CHECK(slot >= 0);
    accounting_->Track(slot);  // its deficit now grows with its allocation
    ComboState& c = table_->combo(slot);
    c.in_allocation = true;
    for (std::size_t j = 0; j < n; ++j) c.allocation[j] = has_pairs ? xp(p, j) : 0.0;
    allocated_.push_back(slot);
  }
  return ApplyResizingAndAdmission(input, *output, rows);
}

Status AllocationStep::ApplyResizingAndAdmission(const policy::PolicyInput& input,
                                                 const policy::PolicyOutput& output,
                                                 std::span<ActiveJob* const> rows) {
  const std::size_t m = input.num_jobs();
  if ((!output.workers.empty() && output.workers.size() != m) ||
      (!output.rejected.empty() && output.rejected.size() != m)) {
    return Status::Internal("policy " + options_.policy_name +
                            " returned worker counts or rejections for the wrong number of jobs");
  }
  for (std::size_t i = 0; i < m; ++i) {
    ActiveJob& job = *rows[i];
    const int workers = output.workers.empty() ? job.scale_factor : output.workers[i];
    if (workers == job.workers) continue;
    if (workers < job.min_workers || workers > job.max_workers) {
      return Status::Internal("policy " + options_.policy_name + " runs job " +
                              job.id.ToString() + " on " + std::to_string(workers) +
                              " workers, outside [" + std::to_string(job.min_workers) + ", " +
                              std::to_string(job.max_workers) + "]");
    }
    job.workers = workers;
    table_->RefreshThroughputs(job);
  }
  for (std::size_t i = 0; i < output.rejected.size(); ++i) {
    if (output.rejected[i] == 0) continue;
    const JobId id = input.jobs[i].id;
    table_->record(table_->Index(id)).rejected = true;
    table_->Erase(id, /*dropped=*/false);
    // The job's departure is a change like any other: the next round recomputes.
    need_reallocation_ = true;
    rejected_.push_back(id);
  }
  return Status::Ok();
}

}  // namespace gavel::mechanism
