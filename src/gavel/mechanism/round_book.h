// RoundBook: the round's last phase and what follows it — emits the plan (which combination
// runs on which GPUs, with its lease: a step budget and a duration), then keeps the record of
// the micro-tasks it started until they end: which run, their GPUs' reports gathered into one
// result, and the round and lease statistics.
//
// Who owns what: it owns the round counter, the count of running micro-tasks, last round's
// combinations (for the lease statistics: a pair's slot may be gone by the next round while a
// member is still active) and the plan and micro-task counters. It writes the placement
// fields of the table's combinations (last round, type and GPUs; running; reports) and each
// record's first start. It books nothing: the coordinator books a finished micro-task's
// progress and time (JobTable::BookProgress, TimeAccounting::Book).
//
// Thread-safety: none; owned by one RoundScheduler and used on its thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/mechanism/job_table.h"
#include "gavel/mechanism/placer.h"
#include "gavel/mechanism/round_plan.h"
#include "gavel/mechanism/time_accounting.h"

namespace gavel::mechanism {

// A whole micro-task's result, for callers that gather every GPU's report themselves (the
// daemon). Steps are the job's total over its GPUs, so integer counts add up exactly.
struct MicroTaskResult {
  Combination combination;
  std::vector<double> steps;     // per member: steps the micro-task completed (0 = failed)
  std::vector<Seconds> elapsed;  // per member: how long it ran
  Seconds finished_at{0.0};
};

// A micro-task every GPU of which reported (or that failed as a whole), totalled per member
// as MicroTaskResult (entries past the combination's size are 0). Fixed arrays: one is made
// per micro-task, on the simulator's hot path.
struct FinishedMicroTask {
  ComboState* combo = nullptr;
  std::array<double, 2> steps{};
  std::array<Seconds, 2> elapsed{};
  Seconds finished_at{0.0};
  bool succeeded = false;  // every active member made progress
};

struct RoundCounters {
  std::int64_t rounds = 0;
  std::int64_t lease_extensions = 0;
  std::int64_t lease_extension_opportunities = 0;
  std::int64_t micro_tasks = 0;
  std::int64_t failed_micro_tasks = 0;
};

class RoundBook {
 public:
  RoundBook(JobTable& table, TimeAccounting& accounting, Seconds round_length);

  // The number of the round the next plan starts (0 first).
  std::int64_t round() const { return counters_.rounds; }
  bool any_running() const { return num_running_ > 0; }
  int num_running() const { return num_running_; }
  const RoundCounters& counters() const { return counters_; }

  // The plan for the round starting at `now`: every placed combination starts its micro-task.
  RoundPlan Emit(Seconds now, std::vector<Placed> placed, bool recomputed,
                 std::vector<JobId> rejected);

  // ---- Reports (errors: no such micro-task runs, or the report does not fit it) ----
  // One GPU's report; nullopt until every GPU of the micro-task reported.
  Result<std::optional<FinishedMicroTask>> Gather(const WorkerReport& report);
  // The whole micro-task at once (no GPU of it may have reported on its own).
  Result<FinishedMicroTask> Whole(const MicroTaskResult& result);
  // The whole micro-task failed: no progress, whatever its GPUs reported so far.
  Result<FinishedMicroTask> Failed(const Combination& combination, Seconds at);
  // The micro-task is over: its combination no longer runs. `failed`: it failed for an
  // active member (counted).
  void Finish(ComboState& c, bool failed);
  // A running micro-task abandoned (its job left): nothing of it is booked.
  void Abandon(ComboState& c);

 private:
  Result<ComboState*> Running(const Combination& c);
  // Sums a micro-task's GPU reports (in worker-id order): the members' steps add up over the
  // GPUs, their elapsed times are the longest.
  FinishedMicroTask Total(ComboState& c, std::span<const GpuReport> reports) const;

  JobTable* table_;
  TimeAccounting* accounting_;
  Seconds round_length_;
  int num_running_ = 0;
  std::vector<Combination> last_round_combos_;
  RoundCounters counters_;
};

}  // namespace gavel::mechanism
