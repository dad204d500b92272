#include "gavel/workload/job_stream.h"

#include <cmath>
#include <string>
#include <utility>

#include "gavel/core/check.h"

namespace gavel::workload {

Status ValidateArrivalOrder(const std::vector<TraceJob>& jobs) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const double t = jobs[i].arrival_time.value();
    if (!std::isfinite(t) || t < 0.0) {
      return Status::InvalidArgument("job " + std::to_string(i) + ": arrival time " +
                                     std::to_string(t) + " is not a finite non-negative number");
    }
    if (i > 0 && jobs[i].arrival_time < jobs[i - 1].arrival_time) {
      return Status::InvalidArgument("job " + std::to_string(i) + ": arrival time " +
                                     std::to_string(t) + " is earlier than the previous job's " +
                                     std::to_string(jobs[i - 1].arrival_time.value()));
    }
  }
  return Status::Ok();
}

TraceJobStream::TraceJobStream(std::vector<TraceJob> jobs) : jobs_(std::move(jobs)) {
  const Status status = ValidateArrivalOrder(jobs_);
  GAVEL_CHECK_MSG(status.ok(), status.ToString().c_str());
}

std::optional<Seconds> TraceJobStream::PeekArrival() const {
  if (next_ >= jobs_.size()) return std::nullopt;
  return jobs_[next_].arrival_time;
}

TraceJob TraceJobStream::Pop() {
  GAVEL_CHECK_MSG(next_ < jobs_.size(), "Pop() on an exhausted TraceJobStream");
  return std::move(jobs_[next_++]);
}

}  // namespace gavel::workload
