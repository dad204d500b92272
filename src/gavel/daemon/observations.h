// Observations: what the daemon's metrics and dashboard need that no owner keeps — how long
// rounds and policy solves took (histograms), the recent events, and the per-type utilisation
// over time. Everything else the metrics show is read from the owners (JobBook, AgentRegistry,
// MechanismSeam) through the core's query API at scrape time (observe_http.h); nothing here copies
// a fact that an owner holds.
//
// Fed by: the core thread (CoreLoop's after-batch hook: round starts and utilisation samples;
// the event hook: committed events) and the policy solver's thread (AllocationService's solve
// observer). Read by the HTTP threads.
// Thread-safety: every method may be called from any thread (one mutex, a leaf: no call out
// while it is held).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/daemon/store.h"

namespace gavel::daemon {

// A Prometheus histogram's state: cumulative counts per upper bound, plus sum and count.
struct HistogramData {
  std::vector<double> bounds;  // ascending upper bounds (le), +Inf implied
  std::vector<std::uint64_t> counts;  // observations <= bounds[i] (cumulative)
  double sum = 0.0;
  std::uint64_t count = 0;
  void Observe(double value);
};

// One utilisation sample: GPUs alive and busy per type at a moment.
struct UtilisationSample {
  std::int64_t unix_ms = 0;
  std::map<std::string, int> alive;  // per GPU type
  std::map<std::string, int> busy;
};

class Observations {
 public:
  static constexpr std::size_t kMaxEvents = 100;
  static constexpr std::size_t kMaxSamples = 720;  // 1 h at one sample per 5 s
  static constexpr std::int64_t kSampleIntervalMs = 5000;

  Observations();

  // A round started at `unix_ms` (the core's clock): the previous round lasted until then.
  void RoundStarted(std::int64_t unix_ms) GAVEL_EXCLUDES(mu_);
  void SolveFinished(double seconds) GAVEL_EXCLUDES(mu_);
  void Event(const EventRow& event) GAVEL_EXCLUDES(mu_);
  // Keeps the sample unless the previous one is less than kSampleIntervalMs older; `force`
  // keeps it anyway (the daemon samples at every round start, when allocations change).
  void Sample(UtilisationSample sample, bool force) GAVEL_EXCLUDES(mu_);
  // Whether a sample taken at `unix_ms` would be kept (saves building one).
  bool WantsSample(std::int64_t unix_ms) const GAVEL_EXCLUDES(mu_);

  HistogramData round_durations() const GAVEL_EXCLUDES(mu_);
  HistogramData solve_durations() const GAVEL_EXCLUDES(mu_);
  std::vector<EventRow> events() const GAVEL_EXCLUDES(mu_);  // oldest first
  std::vector<UtilisationSample> samples() const GAVEL_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  HistogramData rounds_ GAVEL_GUARDED_BY(mu_);
  HistogramData solves_ GAVEL_GUARDED_BY(mu_);
  std::int64_t last_round_start_ms_ GAVEL_GUARDED_BY(mu_) = 0;
  std::deque<EventRow> events_ GAVEL_GUARDED_BY(mu_);
  std::deque<UtilisationSample> samples_ GAVEL_GUARDED_BY(mu_);
};

}  // namespace gavel::daemon
