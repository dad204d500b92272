// JobStream: the jobs of a workload in arrival order, handed out one at a time. The simulator
// peeks at the next arrival time and pops every job whose arrival time has come; the round
// scheduler numbers popped jobs 0, 1, 2, ... so stream order is job-id order.
//
// Two implementations: TraceJobStream (a fixed list, e.g. read from a trace file) and
// GeneratedJobStream (generator.h: the original's synthetic workload, drawn lazily).
// A stream owns its jobs; popped jobs are moved to the caller. Not thread-safe: one consumer.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/core/units.h"
#include "gavel/workload/trace_job.h"

namespace gavel::workload {

class JobStream {
 public:
  virtual ~JobStream() = default;

  // Arrival time of the next job; nullopt once the stream is exhausted. Successive values
  // are non-decreasing. Calling it any number of times draws nothing and changes nothing.
  virtual std::optional<Seconds> PeekArrival() const = 0;

  // Removes and returns the next job (its arrival_time equals the last PeekArrival()).
  // Precondition: PeekArrival() has a value (checked; aborts otherwise).
  virtual TraceJob Pop() = 0;
};

// Returns InvalidArgument naming the first job (0-based index) whose arrival time is
// earlier than its predecessor's, or whose arrival time is negative or not finite.
Status ValidateArrivalOrder(const std::vector<TraceJob>& jobs);

// A stream over a fixed list of jobs, in the given order.
class TraceJobStream final : public JobStream {
 public:
  // Precondition: ValidateArrivalOrder(jobs).ok() (checked; aborts otherwise). The trace
  // readers in trace_io.h already guarantee it.
  explicit TraceJobStream(std::vector<TraceJob> jobs);

  std::optional<Seconds> PeekArrival() const override;
  TraceJob Pop() override;

  // Jobs not yet popped.
  std::size_t remaining() const { return jobs_.size() - next_; }

 private:
  std::vector<TraceJob> jobs_;
  std::size_t next_ = 0;
};

}  // namespace gavel::workload
