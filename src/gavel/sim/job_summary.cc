#include "gavel/sim/job_summary.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "gavel/sim/physics.h"

namespace gavel::sim {

void JobSummarizer::Add(const JobResult& job, bool has_utility_function) {
  ++admitted_;
  total_cost_ += job.cost;
  if (job.dropped) ++dropped_;
  if (has_utility_function) has_utility_ = true;
  if (job.jct) ++completed_;
  if (job.in_window) {
    if (!window_start_time_) window_start_time_ = job.arrival;
    if (job.dropped) ++window_dropped_;
    if (job.rejected) ++window_rejected_;
    if (job.failed) ++window_failed_;
    if (job.utility) total_utility_ += *job.utility;
    if (job.jct) {
      window_jcts_.push_back(job.jct->value());
      window_jct_classes_.push_back(static_cast<std::uint8_t>(SizeClass(job.scale_factor)));
      if (job.jct->value() > 0.0 && job.received_seconds && job.entitled_seconds) {
        share_deviation_ +=
            std::abs(*job.received_seconds - *job.entitled_seconds) / job.jct->value();
      }
    }
    if (job.queueing_delay) {
      delays_.push_back(job.queueing_delay->value());
      fair_share_ += job.fair_share_delay_seconds;
      fragmentation_ += job.fragmentation_delay_seconds;
    }
  }
  const bool gone = job.finish || job.dropped || job.rejected || job.failed;
  if (job.deadline && gone) {
    ++slo_jobs_;
    bool violated;
    if (slo_quirks_) {
      // The original compares the JCT (a duration) with the deadline (a point in time).
      violated = job.jct && job.jct->value() > job.deadline->value();
    } else {
      violated = job.dropped || (job.finish && *job.finish > *job.deadline);
    }
    if (violated) ++slo_violations_;
  }

  // The backlog's changes. Jobs come in arrival order, and no job finishes before it
  // arrives: every change before this arrival is final.
  latest_arrival_ = job.arrival.value();
  pending_.emplace(job.arrival.value(), +1);
  if (job.finish) pending_.emplace(job.finish->value(), -1);
  if (!gone) {
    Unfinished u;
    u.in_window = job.in_window;
    u.arrival = job.arrival.value();
    u.scale_factor = job.scale_factor;
    for (double g : job.gpu_seconds) u.received += g;
    unfinished_.push_back(u);
  }
  FoldBefore(latest_arrival_);
}

double JobSummarizer::IntegralTo(double t) const {
  if (!folded_any_) return 0.0;
  return integral_ + level_ * (t - last_change_);
}

void JobSummarizer::FoldBefore(double before) {
  while (!pending_.empty() && pending_.top().first < before) {
    const Change change = pending_.top();
    // An unfinished job's integral up to its arrival: every change up to it is folded, none
    // after it.
    while (unanswered_ < unfinished_.size() && unfinished_[unanswered_].arrival < change.first) {
      unfinished_[unanswered_].integral_to_arrival = IntegralTo(unfinished_[unanswered_].arrival);
      ++unanswered_;
    }
    pending_.pop();
    if (folded_any_) integral_ = integral_ + level_ * (change.first - last_change_);
    folded_any_ = true;
    last_change_ = change.first;
    level_ += change.second;
  }
}

Backlog JobSummarizer::BacklogAt(int total_gpus, Seconds end, double starved_below) {
  FoldBefore(std::numeric_limits<double>::infinity());
  for (; unanswered_ < unfinished_.size(); ++unanswered_) {
    unfinished_[unanswered_].integral_to_arrival = IntegralTo(unfinished_[unanswered_].arrival);
  }
  Backlog backlog;
  const double total_to_end = IntegralTo(end.value());
  for (const Unfinished& job : unfinished_) {
    ++backlog.active_jobs;
    if (!job.in_window) continue;
    const double age = end.value() - job.arrival;
    backlog.oldest_unfinished_window_job_age_seconds =
        std::max(backlog.oldest_unfinished_window_job_age_seconds, age);
    if (age <= 0.0) continue;
    const double mean_active = (total_to_end - *job.integral_to_arrival) / age;
    const double equal_share =
        std::min(static_cast<double>(job.scale_factor),
                 static_cast<double>(total_gpus) / std::max(mean_active, 1.0));
    if (job.received / age < starved_below * equal_share) ++backlog.starved_jobs;
  }
  return backlog;
}

void JobSummarizer::FillSummary(SimulationResult& result) const {
  result.jobs_admitted = admitted_;
  result.jobs_completed = completed_;
  result.jobs_dropped = dropped_;
  result.total_cost = total_cost_;
  result.has_utility = has_utility_;
  result.total_utility = total_utility_;
  result.window_jobs_dropped = window_dropped_;
  result.window_jobs_completed = window_jcts_.size();
  result.jobs_rejected = window_rejected_;
  result.failed_jobs = window_failed_;
  result.window_start_time = window_start_time_;
  result.slo_jobs = slo_jobs_;
  result.slo_violations = slo_violations_;
  if (!window_jcts_.empty()) {
    double sum = 0.0;
    for (double v : window_jcts_) sum += v;
    result.average_jct_seconds = sum / static_cast<double>(window_jcts_.size());
    result.allocation_share_mad = share_deviation_ / static_cast<double>(window_jcts_.size());
  }
  result.jct_p50_seconds = Percentile(window_jcts_, 50.0);
  result.jct_p90_seconds = Percentile(window_jcts_, 90.0);
  result.jct_p99_seconds = Percentile(window_jcts_, 99.0);
  FillQueueing(result);
}

void JobSummarizer::FillQueueing(SimulationResult& result) const {
  if (!delays_.empty()) {
    const double n = static_cast<double>(delays_.size());
    double sum = 0.0;
    for (double d : delays_) sum += d;
    result.queueing_delay_mean_seconds = sum / n;
    result.fair_share_delay_mean_seconds = fair_share_ / n;
    result.fragmentation_delay_mean_seconds = fragmentation_ / n;
  }
  result.queueing_delay_p50_seconds = Percentile(delays_, 50.0);
  result.queueing_delay_p90_seconds = Percentile(delays_, 90.0);
  result.jct_by_size.clear();
  for (std::size_t c = 0; c < kSizeClassNames.size(); ++c) {
    std::vector<double> jcts;
    for (std::size_t i = 0; i < window_jcts_.size(); ++i) {
      if (window_jct_classes_[i] == c) jcts.push_back(window_jcts_[i]);
    }
    SizeClassJct s;
    s.name = kSizeClassNames[c];
    s.jobs = jcts.size();
    double sum = 0.0;
    for (double j : jcts) sum += j;
    s.mean = jcts.empty() ? 0.0 : sum / static_cast<double>(jcts.size());
    s.p50 = Percentile(jcts, 50.0);
    s.p90 = Percentile(jcts, 90.0);
    s.p99 = Percentile(jcts, 99.0);
    result.jct_by_size.push_back(std::move(s));
  }
}

}  // namespace gavel::sim
