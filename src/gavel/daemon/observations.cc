#include "gavel/daemon/observations.h"

#include <utility>

namespace gavel::daemon {

void HistogramData::Observe(double value) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (value <= bounds[i]) ++counts[i];
  }
  sum += value;
  ++count;
}

Observations::Observations() {
  // Rounds last minutes by default (--round-seconds 360) but seconds in tests and demos;
  // solves take milliseconds for small clusters and up to minutes for large LPs.
  rounds_.bounds = {1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 3600};
  solves_.bounds = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300};
  rounds_.counts.assign(rounds_.bounds.size(), 0);
  solves_.counts.assign(solves_.bounds.size(), 0);
}

void Observations::RoundStarted(std::int64_t unix_ms) {
  MutexLock lock(mu_);
  if (last_round_start_ms_ != 0 && unix_ms >= last_round_start_ms_) {
    rounds_.Observe(static_cast<double>(unix_ms - last_round_start_ms_) / 1000.0);
  }
  last_round_start_ms_ = unix_ms;
}

void Observations::SolveFinished(double seconds) {
  MutexLock lock(mu_);
  solves_.Observe(seconds);
}

void Observations::Event(const EventRow& event) {
  MutexLock lock(mu_);
  events_.push_back(event);
  if (events_.size() > kMaxEvents) events_.pop_front();
}

bool Observations::WantsSample(std::int64_t unix_ms) const {
  MutexLock lock(mu_);
  return samples_.empty() || unix_ms - samples_.back().unix_ms >= kSampleIntervalMs;
}

void Observations::Sample(UtilisationSample sample, bool force) {
  MutexLock lock(mu_);
  if (!force && !samples_.empty() && sample.unix_ms - samples_.back().unix_ms < kSampleIntervalMs) {
    return;
  }
  samples_.push_back(std::move(sample));
  if (samples_.size() > kMaxSamples) samples_.pop_front();
}

HistogramData Observations::round_durations() const {
  MutexLock lock(mu_);
  return rounds_;
}

HistogramData Observations::solve_durations() const {
  MutexLock lock(mu_);
  return solves_;
}

std::vector<EventRow> Observations::events() const {
  MutexLock lock(mu_);
  return {events_.begin(), events_.end()};
}

std::vector<UtilisationSample> Observations::samples() const {
  MutexLock lock(mu_);
  return {samples_.begin(), samples_.end()};
}

}  // namespace gavel::daemon
