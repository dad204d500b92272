// JobSummarizer: a run's figures from its jobs' final results (JobResult), fed one at a time
// in id order: the window's counts, JCT mean and percentiles, cost, SLOs, utilities, queueing
// delays, JCT per size class, and the backlog at the end (BacklogOf). It keeps a few numbers
// per window job (the ones percentiles need), not the jobs, so a run can hand each job's
// result on (a CSV written as the run goes) and forget it: memory then no longer grows with
// the finished jobs' records.
//
// Every figure is computed with the same operations in the same order as from the whole
// per-job list, so a summary is bit-identical whether the run kept its jobs or not. The
// backlog's integral of the number of active jobs is folded in time order as the stream
// passes: a job's arrival and finish are changes of that step function, and every change
// earlier than the latest arrival fed is final (later jobs arrive, and finish, no earlier).
//
// Value type; not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "gavel/core/units.h"
#include "gavel/sim/simulator.h"

namespace gavel::sim {

class JobSummarizer {
 public:
  // `slo_quirks`: the original's SLO test (mechanism::Compat::slo_quirks).
  explicit JobSummarizer(bool slo_quirks = false) : slo_quirks_(slo_quirks) {}

  // The next job in id order. `has_utility_function`: the job had a utility (JobResult
  // carries its value only when it finished).
  void Add(const JobResult& job, bool has_utility_function);

  // What FinishResult fills from the list: jobs admitted, completed, dropped; the window's
  // counts, start time, JCT mean and percentiles, rejected jobs, utility; cost; SLOs; failed
  // window jobs; and FillQueueing's figures.
  void FillSummary(SimulationResult& result) const;
  // The window's queueing delays (mean, p50, p90, the split's means) and JCT per size class.
  void FillQueueing(SimulationResult& result) const;
  // BacklogOf(every job fed, total_gpus, end, starved_below), without the list. Every job
  // must have been fed, and `end` must be no earlier than any arrival or finish.
  Backlog BacklogAt(int total_gpus, Seconds end,
                    double starved_below = kStarvedBelowEqualShare);

 private:
  // A change of the number of active jobs, ordered as BacklogOf sorts them.
  using Change = std::pair<double, int>;
  // Folds every pending change earlier than `before` into the running integral.
  void FoldBefore(double before);
  // ∫ N dt from the first change to `t`, once every change up to `t` is folded.
  double IntegralTo(double t) const;

  bool slo_quirks_;
  std::size_t admitted_ = 0;
  std::size_t completed_ = 0;
  std::size_t dropped_ = 0;
  double total_cost_ = 0.0;
  bool has_utility_ = false;
  double total_utility_ = 0.0;
  double share_deviation_ = 0.0;  // sum of |received - entitled| / JCT over completed window jobs
  std::size_t window_dropped_ = 0;
  std::size_t window_rejected_ = 0;
  std::size_t window_failed_ = 0;
  std::optional<Seconds> window_start_time_;
  std::size_t slo_jobs_ = 0;
  std::size_t slo_violations_ = 0;
  // Window jobs that finished, in id order: JCT and size class.
  std::vector<double> window_jcts_;
  std::vector<std::uint8_t> window_jct_classes_;
  // Window jobs that started: queueing delay, and the sums of its split.
  std::vector<double> delays_;
  double fair_share_ = 0.0;
  double fragmentation_ = 0.0;

  // The backlog: changes not yet folded (earliest first), the running integral and level.
  std::priority_queue<Change, std::vector<Change>, std::greater<>> pending_;
  bool folded_any_ = false;
  double last_change_ = 0.0;
  double integral_ = 0.0;
  int level_ = 0;
  double latest_arrival_ = 0.0;
  // Unfinished jobs (no finish, not dropped, rejected or failed).
  struct Unfinished {
    bool in_window = false;
    double arrival = 0.0;
    int scale_factor = 1;
    double received = 0.0;  // GPU-seconds
    std::optional<double> integral_to_arrival;
  };
  std::vector<Unfinished> unfinished_;
  std::size_t unanswered_ = 0;  // unfinished_[unanswered_..] lack integral_to_arrival
};

}  // namespace gavel::sim
