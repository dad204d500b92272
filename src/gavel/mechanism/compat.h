// Compat: which of the original implementation's quirks to reproduce, one switch per
// behaviour (docs/differences.md keeps the same list with measured effects). `--compat gavel`
// turns every switch on, which reproduces the original's published numbers; the default turns
// them all off. Single switches exist so that each difference can be measured on its own.
// Plain value type; thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gavel/core/status.h"

namespace gavel::mechanism {

struct Compat {
  // The policies' own quirks (policy::PolicyOptions::compat_gavel): FIFO's stale type,
  // central LP solutions, the agnostic policies' throughput views, ...
  bool policy = false;
  // The allocation is recomputed (and the time accounting reset) only when something changed
  // and min_reset_interval passed since the last reset; in between, new jobs have no
  // allocation. Off: recompute at every round boundary where something changed.
  bool gated_reallocation = false;
  // A last reset at time 0 counts as "never reset", so every event at time 0 and the first
  // one after it reset. Off: the interval runs from the first reset.
  bool reset_at_zero_means_never = false;
  // Combinations the greedy scan chose but that are not in the allocation are not placed;
  // their GPUs idle for the round. Off: they run (on GPUs nothing else wanted).
  bool unallocated_stay_idle = false;
  // The policy sees the table's throughput even where a job needs more GPUs than the type
  // has, and every same-scale-factor pair, even those that can never share a GPU.
  bool raw_policy_input = false;
  // A round's micro-tasks are all delivered at the round's end, latest-finishing first.
  // Off: in the order they end.
  bool latest_first_delivery = false;
  // A micro-task's elapsed time counts from the end of the previous round that ran anything,
  // so an idle gap inflates the next round's time accounting. Off: from its real start.
  bool idle_gap_booking = false;
  // Multi-GPU steps are split floor(steps / GPUs) per GPU, the rest to the last, so a job
  // with fewer steps left than GPUs fails its last micro-task (and is dropped after 5).
  // Off: an even split.
  bool floor_step_split = false;
  // An SLO deadline counts from when the job was admitted (a round boundary), and a
  // violation compares the JCT (a duration) with the deadline (a time). Off: from arrival,
  // comparing the finish time with the deadline.
  bool slo_quirks = false;
  // A combination's priority on a type is its allocation over its share of the time booked
  // since the last reset alone: what it was owed at earlier resets (the deficit) only breaks
  // ties, so a gang whose share per reset interval is below one round can starve. Off: the
  // owed time counts against the time received (time_accounting.cc, PriorityOf).
  bool forgets_deficit = false;
  // The throughput estimator as the original's (estimator/throughput_estimator.h): single-GPU
  // jobs only, the profiling column quirk, random fallbacks, its generators; and `gavel
  // simulate` ignores --num-reference-models, as the original's single-run driver does.
  bool estimator = false;

  static Compat None() { return Compat{}; }
  static Compat Gavel();
  bool any() const;
  bool all() const;
  // The names of the switches that are on (the names Parse accepts).
  std::vector<std::string> Names() const;
  // A comma-separated list applied left to right: "gavel" (all on), "none" (all off), a switch
  // name (on) or a switch name after '-' (off); e.g. "gavel,-floor_step_split".
  static Result<Compat> Parse(std::string_view text);
  // Every switch name, for help texts.
  static std::vector<std::string> AllNames();
};

}  // namespace gavel::mechanism
