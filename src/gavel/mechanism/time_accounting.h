// TimeAccounting: how much time each combination received on each GPU type, what it was owed
// (its deficit), its priority, and when the accounting resets (docs/architecture.md, "the
// round mechanism"; the rules are Gavel's: priority = allocation / share of the type's time
// received since the last reset, every combination starting each period with half a round of
// credit).
//
// Who owns what: it owns the per-type totals (seconds booked since the last reset, the
// denominators of the priorities), each worker's busy seconds, the reset clock and gate, and
// the lists of tracked combinations and of those whose priority must return to 0. It writes
// the job_time, deficit, priority, lag and tracked fields of the JobTable's combinations and
// the records' entitled and received seconds, and nothing else. A combination is "tracked" once its accounting is stored: pairs never
// allocated and never run are not, and their accounting follows from when they were made
// (Track), which spares a round the O(n²) pairs of packing policies.
//
// Thread-safety: none; owned by one RoundScheduler and used on its thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gavel/core/units.h"
#include "gavel/mechanism/compat.h"
#include "gavel/mechanism/job_table.h"

namespace gavel::mechanism {

struct TimeAccountingOptions {
  Seconds round_length{360.0};
  Seconds min_reset_interval{1920.0};
  bool reset_at_zero_means_never = false;  // Compat::reset_at_zero_means_never
  bool exhaustive_scans = false;           // SchedulerOptions::exhaustive_scans
  bool forgets_deficit = false;            // Compat::forgets_deficit
};

class TimeAccounting {
 public:
  TimeAccounting(JobTable& table, TimeAccountingOptions options);

  // Half a round: the credit every combination starts a reset period with.
  double half_round() const { return options_.round_length.value() / 2.0; }

  // A job was admitted (JobTable::Admit): its single is tracked with the credit; under
  // exhaustive scans its pairs are tracked too.
  void Admitted(const ActiveJob& job);
  // Stores the accounting an untracked combination has implicitly. Before anything reads or
  // changes it.
  void Track(int slot);
  void TrackAll();  // every live combination (before the types change)
  // The queue key (deficit) an untracked combination has: half a round if it existed at the
  // last reset, else 0.
  double UntrackedDeficit(const ComboState& c) const {
    return c.seq < reset_seq_ ? half_round() : 0.0;
  }

  // ---- Resets ----
  bool ResetDue(Seconds now) const;
  // Books the period since the last reset into every deficit (what the allocation owed minus
  // what was received) and starts a new period: each combination's time received back to the
  // credit, the type totals to the sum of the credits.
  void Reset(Seconds now);
  // The original's trace-mode rule: the next recomputation may reset regardless of the minimum
  // interval.
  void OpenResetGate();

  // ---- Priorities ----
  // A combination left the allocation: the next UpdatePriorities sets its priority to 0.
  void MarkStale(int slot) { stale_priority_.push_back(slot); }
  // Zeroes the priorities of those that left the allocation (under exhaustive scans: every
  // priority, recomputed). The allocation's own are computed as the chooser gathers them
  // (UpdateAllocatedPriority), so a round reads each combination's state once.
  void UpdatePriorities();
  void UpdateAllocatedPriority(ComboState& c) const;
  // The round being planned entitles a combination in the allocation to its allocation × the
  // round length on each type: added to its lag and to its members' entitled seconds. Once per
  // round for every combination in the allocation (the chooser as it gathers them; under
  // exhaustive scans UpdatePriorities).
  void Entitle(ComboState& c);
  // The time c is owed on `type` from past resets (its deficit's positive part; 0 under
  // forgets_deficit), counted against its time received in its priority.
  double Owed(const ComboState& c, std::size_t type) const;

  // ---- Booking ----
  // A successful micro-task of `c` ran `seconds` on `type`, on `workers`.
  void Book(ComboState& c, int type, double seconds, std::span<const WorkerId> workers);

  // ---- Upkeep ----
  void ForgetDead();  // drops dead slots from its lists (before JobTable::CompactOrder)
  // The cluster changed (JobTable::ChangeLayout moved the combinations' vectors): the type
  // totals follow their types (a new type starts as after a reset), busy seconds their GPUs.
  void ChangeLayout(std::span<const int> old_of_new,
                    std::span<const std::optional<WorkerId>> successor, int new_workers);

  const std::vector<int>& tracked() const { return tracked_; }
  const std::vector<double>& type_time() const { return worker_time_; }
  const std::vector<double>& worker_busy() const { return worker_busy_; }

 private:
  JobTable* table_;
  TimeAccountingOptions options_;
  std::vector<double> worker_time_;  // per type, since the last reset
  std::vector<double> worker_busy_;  // per worker id, whole run
  double sentinel_last_reset_ = 0.0;  // reset_at_zero_means_never: 0 = "never"
  std::optional<Seconds> last_reset_;
  bool force_reset_ = false;  // OpenResetGate() without the sentinel
  // Combinations with seq below this existed at the last reset.
  std::uint64_t reset_seq_ = 0;
  // Slots of the tracked combinations and of those taken out of the allocation whose
  // priority the next UpdatePriorities zeroes. Any order; dead slots are skipped.
  std::vector<int> tracked_;
  std::vector<int> stale_priority_;
};

}  // namespace gavel::mechanism
