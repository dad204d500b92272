// JobTable: the round mechanism's record of who is there — every admitted job's record
// (finished or not, for metrics, until a caller that read it has it forgotten), the active
// jobs, and their combinations: each active job alone (a single) and, for policies that
// space-share, every pair of active jobs of the same size (docs/architecture.md, "the round
// mechanism").
//
// Who owns what: the table owns the storage of every combination's state (ComboState) in
// slots, the insertion order that breaks the queues' ties, the cluster layout, the throughput
// table and each combination's throughputs (the table's, an online estimate, or the pairs'
// co-located source), the jobs' progress, costs and GPU-seconds, and the holds. A combination's
// per-type time accounting, allocation and priority live in its ComboState for locality (a
// round reads them together), but are written only by their owners: TimeAccounting
// (job_time, deficit, priority, tracked), AllocationStep (allocation, in_allocation) and
// RoundBook (the last round's placement, running, reports). The table never decides anything
// about a round.
//
// Thread-safety: none; owned by one RoundScheduler and used on its thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gavel/core/elastic.h"
#include "gavel/core/ids.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/core/utility.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/mechanism/combination.h"
#include "gavel/mechanism/policy_input_builder.h"
#include "gavel/mechanism/ports.h"
#include "gavel/mechanism/record_store.h"
#include "gavel/mechanism/round_plan.h"

namespace gavel::mechanism {

// A job as it arrives.
struct JobDescription {
  JobTypeKey type;  // throughput-table key (model, scale factor)
  double total_steps = 0.0;
  // Steps already done before admission (a daemon re-admitting a job after a restart);
  // in [0, total_steps).
  double steps_done = 0.0;
  double priority_weight = 1.0;
  Seconds arrival{0.0};
  std::optional<Seconds> deadline;  // absolute SLO deadline; none = no SLO
  std::string entity;                // hierarchical policies' entity; empty = none
  std::optional<Seconds> held_until;  // admitted held (HoldJob) until then
  // Host resources per GPU (worker), for topology-aware placement; 0 = none.
  double cpus_per_gpu = 0.0;
  double mem_gb_per_gpu = 0.0;
  int app = -1;  // Themis' app (policy::PolicyJob::app); -1 = an app of its own
  // An elastic job (core/elastic.h): it runs at its declared scale factor until a policy with
  // the resizes_elastic_jobs capability picks another count in the range. Elastic jobs are
  // never space-sharing pair members. nullopt = fixed size.
  std::optional<ElasticSpec> elastic;
  // Its utility of completion time, handed to the policy (admission control reads it).
  std::optional<UtilityFunction> utility;
  // GPU-seconds it already ran on each layout type before admission (a daemon re-admitting a
  // job after a restart: the attained service the queue disciplines rank by); empty = none.
  std::vector<double> gpu_seconds_done;
  // What one restart (a resume or a move to other GPUs) costs the job: the time from launch
  // to its first step. Read by the restart-cost scorer (restart_cost_scorer.h); 0 = free.
  Seconds restart_cost{0.0};
};

// Everything the scheduler remembers about a job, finished or not (for metrics).
struct JobRecord {
  int table_key = -1;  // index into ThroughputTable::job_types()
  int scale_factor = 1;
  double priority_weight = 1.0;
  double total_steps = 0.0;
  double steps_run = 0.0;  // including JobDescription::steps_done
  Seconds arrival{0.0};
  std::string entity;
  std::optional<Seconds> deadline;
  std::optional<Seconds> first_start;  // start of the first round it was placed in
  std::optional<Seconds> finish;       // end of the micro-task that completed it
  bool dropped = false;                // removed after too many failed micro-tasks
  bool removed = false;                // removed by RemoveJob (cancelled, failed by the caller)
  bool rejected = false;               // refused by the policy's admission control
  std::optional<UtilityFunction> utility;  // JobDescription::utility
  double cost = 0.0;                   // $ (only with instance costs)
  double cpus_per_gpu = 0.0;           // host demands (JobDescription)
  double mem_gb_per_gpu = 0.0;
  int app = -1;                        // JobDescription::app
  Seconds restart_cost{0.0};           // JobDescription::restart_cost
  // The time the allocation entitled it to (each round: its combinations' allocation × the
  // round length, summed over types) and the time its micro-tasks ran, in seconds: what the
  // realised-vs-allocated share (the simulator's allocation_share_mad) compares.
  double entitled_seconds = 0.0;
  double received_seconds = 0.0;
  bool done() const { return finish.has_value() || dropped || removed || rejected; }
  std::optional<Seconds> jct() const {
    if (!finish || dropped || removed || rejected) return std::nullopt;
    return *finish - arrival;
  }
};

// An admitted job that has not finished.
struct ActiveJob {
  JobId id;
  std::size_t record = 0;  // its place in the records (JobTable::Index)
  int table_key = -1;
  int scale_factor = 1;
  int failures = 0;  // consecutive failed micro-tasks
  int single_slot = -1;
  std::vector<int> pair_slots;  // pairs containing this job
  // UpdateThroughput's estimates by layout type; NaN = none (the table's value applies).
  std::vector<double> tput_estimate;
  Seconds last_ran_until{0.0};  // end of its last micro-task (arrival before the first)
  // Elastic jobs: the range, the count it runs at now (= scale_factor for fixed jobs) and
  // its throughput per count (row workers − min_workers) and layout type, unzeroed.
  int min_workers = 1;
  int max_workers = 1;
  int workers = 1;
  std::vector<std::vector<double>> elastic_tput;
  std::optional<UtilityFunction> utility;
  bool elastic() const { return max_workers > min_workers; }
};

// One GPU's report of a micro-task, per member (a single's second entries unused): what a
// multi-GPU micro-task keeps until its other GPUs report. Fixed arrays: no allocation per
// report on the simulator's hot path.
struct GpuReport {
  WorkerId worker;
  std::array<double, 2> steps{};
  std::array<Seconds, 2> elapsed{};
  Seconds finished_at{0.0};
};

// A single job or a pair, with its per-type state. Vectors are indexed by layout type.
// `tput_b` is empty for singles. The header comment says which part writes which field.
struct ComboState {
  Combination id;
  // Its members' places in the records (JobTable::Index), looked up once: the round's choice
  // checks every candidate's members, a hash lookup each otherwise.
  std::array<std::size_t, 2> member_index{};
  bool alive = false;
  int scale_factor = 1;
  bool in_allocation = false;  // present in the last computed allocation
  std::vector<double> tput_a;
  std::vector<double> tput_b;
  std::vector<double> allocation;
  std::vector<double> job_time;  // seconds run on each type since the last reset (+ credit)
  std::vector<double> deficit;
  std::vector<double> priority;
  // The time it is owed on each type over its life: at each round's plan, its allocation ×
  // the round length (for that round, ahead of it), less the time it ran there. Never reset;
  // the chooser's bounded lag reads it.
  std::vector<double> lag;
  // Placement: the last round it ran in (-1 = none), on which type and GPUs. While its
  // micro-task runs, `running` is set and multi-GPU reports wait in `reports`.
  std::int64_t last_round = -1;
  int last_type = 0;
  std::vector<WorkerId> last_workers;
  bool running = false;
  std::vector<GpuReport> reports;
  std::int64_t placed_round = -1;  // the placer's mark: placed in this round
  // Creation order (the queues' tie-break: the insertion order is sorted by it).
  std::uint64_t seq = 0;
  // Its time accounting is stored (TimeAccounting::Track). An untracked combination (a pair
  // never allocated, never run) has priority 0, allocation 0, and job_time = deficit = half a
  // round on every type if it existed at the last reset, else 0; its stored job_time/deficit
  // are stale until tracked.
  bool tracked = false;
  // Whether it ran in the round before `round` on `type` with as many GPUs as it needs now:
  // the placement it could keep.
  bool RanBefore(std::int64_t round, int type) const {
    return last_round >= 0 && last_round == round - 1 && last_type == type &&
           static_cast<int>(last_workers.size()) == scale_factor;
  }
};

struct JobTableOptions {
  bool packing = false;  // the policy space-shares: every same-size pair is a combination
  bool raw_policy_input = false;  // Compat::raw_policy_input: oversized types keep throughputs
  // Where pairs' co-located throughputs come from; null = the throughput table.
  std::shared_ptr<ColocatedThroughputSource> colocated;
  // $/GPU-hour per layout type; empty = no prices.
  std::vector<double> instance_costs;
};

class JobTable {
 public:
  JobTable(ClusterLayout layout, std::shared_ptr<const ThroughputTable> throughputs,
           std::vector<int> table_types, JobTableOptions options);

  // ---- Admission and departure ----
  // Checks a job before admission (RoundScheduler::AddJob lists the errors); its throughput
  // table row on success.
  Result<int> Validate(JobId id, const JobDescription& job) const;
  // Admits a validated job: its record, its single (with the table's throughputs) and, for
  // packing policies, its pairs with every earlier active job of its size, in the original's
  // insertion order. Returns the active job (its single_slot and pair_slots are the new
  // combinations).
  ActiveJob& Admit(JobId id, const JobDescription& job, int table_key);
  // Takes an active job and its combinations out (none of them may be running).
  void Erase(JobId job, bool dropped);
  // Dead slots pile up in the insertion order until compacted; the parts that list slots
  // drop the dead ones first (RoundScheduler::EraseJob).
  bool CompactionDue() const { return dead_in_order_ > 64 && dead_in_order_ * 2 > order_.size(); }
  void CompactOrder();

  // ---- Throughputs ----
  // The single's throughputs (elastic count, estimate or table; 0 where oversized).
  void RefreshThroughputs(const ActiveJob& job);
  // The pair's co-located throughputs from the source or the table.
  void RefreshPairThroughputs(ComboState& pair);
  Status RefreshPair(JobId a, JobId b);
  Status UpdateThroughput(JobId job, int type, double steps_per_s);
  Status UpdateRestartCost(JobId job, Seconds cost);
  double ComboThroughput(const ComboState& c, int member, int type) const {
    const auto t = static_cast<std::size_t>(type);
    return member == 0 ? c.tput_a[t] : c.tput_b[t];
  }
  // Whether pairs' co-located throughputs come from the dense copy of the throughput table:
  // packing policies without a co-located source (whose estimates replace the table's).
  bool ReadsColocatedTable() const { return options_.packing && !options_.colocated; }
  const ColocatedMatrix* colocated_table() const {
    return ReadsColocatedTable() ? &colocated_table_ : nullptr;
  }
  const std::shared_ptr<ColocatedThroughputSource>& colocated_source() const {
    return options_.colocated;
  }

  // ---- Progress ----
  // Books a successful micro-task's share for member `job`: steps, cost, GPU-seconds. True
  // when the job finished its last step (its record then says when).
  bool BookProgress(JobId job, int type, double steps, double elapsed, double max_elapsed,
                    int gpus, Seconds finished_at);

  // ---- Holds ----
  Status Hold(JobId job, Seconds until);
  Status Release(JobId job);
  bool IsHeld(JobId job) const { return held_.contains(job); }
  void ExpireHolds(Seconds now);
  const std::map<JobId, Seconds>& held() const { return held_; }

  // ---- A changed cluster (RoundScheduler::ChangeCluster validated it) ----
  // Every live combination's per-type vectors follow the types to the new layout (a new type:
  // `fresh_job_time` received, nothing else), last round's GPUs are renamed (or forgotten
  // when one left), the GPU-seconds and estimates follow their types, and the throughputs are
  // refreshed for the new GPU counts. `old_of_new[t]` is new type t's old index or -1.
  void ChangeLayout(ClusterLayout layout, std::vector<int> table_types,
                    std::span<const int> old_of_new,
                    std::span<const std::optional<WorkerId>> successor, double fresh_job_time,
                    std::vector<double> instance_costs);

  // ---- Lookups ----
  const ClusterLayout& layout() const { return layout_; }
  const ThroughputTable& throughputs() const { return *throughputs_; }
  const std::vector<int>& table_types() const { return table_types_; }
  const std::vector<double>& instance_costs() const { return options_.instance_costs; }
  int num_types() const { return num_types_; }
  const std::map<JobId, ActiveJob>& active() const { return active_; }
  std::map<JobId, ActiveJob>& active() { return active_; }
  bool IsActive(JobId job) const { return FindActive(job) != nullptr; }
  ActiveJob* FindActive(JobId job);
  const ActiveJob* FindActive(JobId job) const;
  const RecordStore<JobRecord>& records() const { return records_; }
  JobRecord& record(std::size_t index) { return records_[index]; }
  // Frees a departed job's record, GPU-seconds and id (a simulator that passed them on);
  // neither may be read again. Precondition: the job is not active.
  void Forget(JobId job);
  // Dense position of an admitted job in the records (admission order); throws
  // std::out_of_range for an id never admitted or forgotten.
  std::size_t Index(JobId job) const;
  double gpu_seconds(std::size_t index, int type) const {
    return gpu_seconds_[index * static_cast<std::size_t>(num_types_) +
                        static_cast<std::size_t>(type)];
  }
  ComboState& combo(int slot) { return combos_[static_cast<std::size_t>(slot)]; }
  const ComboState& combo(int slot) const { return combos_[static_cast<std::size_t>(slot)]; }
  // Live and dead slots in insertion order (the original's dict order).
  const std::vector<int>& order() const { return order_; }
  std::size_t num_alive() const { return order_.size() - dead_in_order_; }
  // The slot of a live combination; -1 when there is none.
  int SlotOf(const Combination& c) const;
  int PairSlot(JobId a, JobId b) const;
  // Sequence number the next combination gets.
  std::uint64_t next_seq() const { return next_seq_; }

 private:
  int NewCombo(const Combination& id, int scale_factor);
  // The record index of an admitted, unforgotten job; nullopt otherwise.
  std::optional<std::size_t> FindIndex(JobId job) const {
    if (ids_are_indices_) {
      const std::uint64_t v = job.value();
      if (v < records_.size() && !records_.forgotten(v)) return static_cast<std::size_t>(v);
      return std::nullopt;
    }
    const auto it = index_of_.find(job);
    if (it == index_of_.end()) return std::nullopt;
    return it->second;
  }
  // Ends the identity numbering: every remembered id goes into index_of_.
  void MapIds();

  ClusterLayout layout_;
  std::shared_ptr<const ThroughputTable> throughputs_;
  std::vector<int> table_types_;  // table GPU type index per layout type
  // The active jobs' co-located throughputs by layout type, dense (read for every candidate
  // pair at every reallocation). Empty unless ReadsColocatedTable().
  ColocatedMatrix colocated_table_;
  JobTableOptions options_;
  int num_types_;

  // Active jobs by id (ordered: the policy's row order).
  std::map<JobId, ActiveJob> active_;
  // Every combination ever created lives in a slot; dead slots are reused once compacted.
  std::vector<ComboState> combos_;
  std::vector<int> free_slots_;
  std::vector<int> order_;
  std::size_t dead_in_order_ = 0;
  std::unordered_map<Combination, int> pair_slots_;
  std::uint64_t next_seq_ = 0;
  // Jobs held out of the plans, with the time they come back.
  std::map<JobId, Seconds> held_;
  // Every job ever admitted, in admission order. A caller's id is found there without a map
  // while every admission gave the id equal to its index (0, 1, 2, ...: the simulator numbers
  // its jobs so, and looks them up several times per micro-task); the first admission that
  // breaks the pattern (another id, or a forgotten id coming back) moves to index_of_, which
  // is empty until then.
  RecordStore<JobRecord> records_;
  bool ids_are_indices_ = true;
  std::unordered_map<JobId, std::size_t> index_of_;
  RecordStore<double> gpu_seconds_;  // by Index(job) × type
  // By record index: the job's entry in active_ while it is active, else null (a tree walk
  // per lookup otherwise). Set by Admit, cleared by Erase, forgotten with the record.
  RecordStore<ActiveJob*> active_at_;
};

// A combination's restart cost: the largest of its members' (JobRecord::restart_cost), since a
// pair restarts both. The restart-cost scorer keeps GPUs for it; the chooser's bounded lag
// scales its bound by it.
inline double CombinationRestartCost(const JobTable& table, const ComboState& c) {
  double restart = 0.0;
  for (int i = 0; i < c.id.size(); ++i) {
    const JobRecord& r = table.records()[c.member_index[static_cast<std::size_t>(i)]];
    restart = std::max(restart, r.restart_cost.value());
  }
  return restart;
}

}  // namespace gavel::mechanism
