// AllocationStep: the round's first phase — decide whether the allocation is due, build the
// policy's problem from the job table, solve it, and apply the answer: every combination's
// allocation X[combination][type], the elastic jobs' worker counts, and admission control's
// rejections (docs/architecture.md, "the round mechanism").
//
// When it is due (SchedulerOptions::compat; RoundScheduler's header): with the original's
// gate, only when something changed AND the time accounting's reset is due; otherwise
// whenever something changed, resetting the accounting only when that is due. Policies
// declared reallocates_every_round (queue disciplines) are due every round.
//
// Who owns what: it owns the policy, the "something changed" flag, the list of combinations
// in the allocation, the rejections not yet reported in a plan, and the solve counters. It
// writes the allocation and in_allocation fields of the table's combinations, a resized job's
// worker count, and erases rejected jobs from the table.
//
// Thread-safety: none; owned by one RoundScheduler and used on its thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/mechanism/compat.h"
#include "gavel/mechanism/job_table.h"
#include "gavel/mechanism/time_accounting.h"
#include "gavel/policy/policy.h"

namespace gavel::mechanism {

struct AllocationStepOptions {
  std::string policy_name;  // for error messages
  Compat compat;
  // Weight per entity for the hierarchical policies (an entity not listed weighs 1).
  std::map<std::string, double> entity_weights;
  bool exhaustive_scans = false;
};

struct AllocationCounters {
  std::int64_t recomputations = 0;  // including those with no active job
  std::int64_t solves = 0;          // Policy::Allocate calls
  double solve_seconds = 0.0;
};

class AllocationStep {
 public:
  AllocationStep(JobTable& table, TimeAccounting& accounting,
                 std::unique_ptr<policy::Policy> policy, policy::PolicyCapabilities traits,
                 AllocationStepOptions options);

  // Something changed: the next round recomputes (subject to the gate).
  void Request() { need_reallocation_ = true; }
  // Recomputes if due for the round numbered `round` that starts at `now` (resetting the
  // time accounting first when its reset is due). True when it recomputed. Errors: the policy
  // failed, or answered in the wrong shape.
  Result<bool> MaybeRecompute(Seconds now, std::int64_t round);
  // The problem a recomputation for that round would hand the policy, without the jobs in
  // `without`.
  policy::PolicyInput InputAt(Seconds now, std::int64_t round,
                              std::span<const JobId> without = {}) const;
  // Jobs admission control rejected since the last call.
  std::vector<JobId> TakeRejected();

  const policy::PolicyCapabilities& traits() const { return traits_; }
  // Slots of the combinations in the allocation (dead ones skipped by readers).
  const std::vector<int>& allocated() const { return allocated_; }
  const AllocationCounters& counters() const { return counters_; }
  void ForgetDead();  // drops dead slots from its list (before JobTable::CompactOrder)

 private:
  Status Recompute(Seconds now, std::int64_t round);
  // The policy input whose rows are `rows` (active jobs in the table's order): the steps of a
  // recomputation read each row's job through one list, gathered by one walk of the active
  // jobs (a saturated queue holds thousands).
  policy::PolicyInput InputOf(Seconds now, std::int64_t round,
                              std::span<const ActiveJob* const> rows) const;
  void AddEntities(policy::PolicyInput& input, std::span<const ActiveJob* const> rows) const;
  // What the queue disciplines read (attained service, who runs, how long each waits) and
  // DRF's host resources: plain facts of the job table; the LP policies ignore them.
  void AddHistory(policy::PolicyInput& input, Seconds now, std::int64_t round,
                  std::span<const ActiveJob* const> rows) const;
  Status ApplyResizingAndAdmission(const policy::PolicyInput& input,
                                   const policy::PolicyOutput& output,
                                   std::span<ActiveJob* const> rows);

  JobTable* table_;
  TimeAccounting* accounting_;
  std::unique_ptr<policy::Policy> policy_;
  policy::PolicyCapabilities traits_;
  AllocationStepOptions options_;
  bool need_reallocation_ = false;
  std::vector<int> allocated_;
  std::vector<JobId> rejected_;
  AllocationCounters counters_;
};

}  // namespace gavel::mechanism
