// The Philly-like workload (`gavel simulate --workload philly`): a synthetic job stream shaped
// after the Microsoft Philly study (Jeon et al., ATC'19) and its public trace. Each number and
// where it comes from is in docs/workloads.md; in short:
//
//  * size and duration: one uniform row of the Philly (duration, num_gpus) table shipped as
//    data/philly_job_distribution.csv (33,192 jobs of the public trace, as converted by the
//    original Gavel): GPU counts 1/2/4/8 = 76.2/2.0/9.3/12.5 %, durations heavy-tailed from
//    1 h to 60 days (median 4 h). The row's num_gpus is the scale factor (always; the
//    original generator's -m switch is implied), its duration the run time alone on the
//    reference GPU type.
//  * job type: a uniform template of the job table among those that support the scale factor
//    (all 26 for one GPU, the distributed ones otherwise).
//  * arrivals: a Poisson process whose rate follows the day,
//      rate(t) = (1 / mean_interarrival) × (1 + A cos(2π (t/86400 + start_hour/24 − peak_hour/24)))
//    drawn by thinning (Lewis–Shedler); its daily mean is 1 / mean_interarrival, so
//    --jobs-per-hour keeps its meaning. A = 0 gives the plain Poisson process; mean_interarrival
//    0 puts every job at time 0.
//  * outcome (job_outcome.h): completed / killed / unsuccessful in the study's job-count shares
//    (66.1 / 12.5 / 21.4 %, its Table 2); unsuccessful jobs split into user errors (early:
//    at_progress uniform in (0, user_error_max_progress]) and infrastructure failures (later:
//    uniform in (user_error_max_progress, 1]).
//
// Random streams (PyRandom, so a Python script can redraw them): attributes seed + 11 (row,
// then template), arrivals seed + 12, outcomes seed + 13. The streams are separate so that job
// i's size, type and outcome do not depend on the arrival process (changing the diurnal shape
// or the rate moves arrivals only).
//
// Ownership: the stream shares the (immutable) Philly table. Not thread-safe; one per run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gavel/core/py_random.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/workload/generator.h"
#include "gavel/workload/job_stream.h"
#include "gavel/workload/trace_job.h"

namespace gavel::workload {

// The shipped Philly table: <source dir>/data/philly_job_distribution.csv.
std::string DefaultPhillyDistributionFile();

struct PhillyWorkloadOptions {
  std::uint64_t seed = 0;
  // Daily mean inter-arrival time (seconds); 0 = every job at time 0 (no diurnal shape).
  Seconds mean_interarrival{0.0};
  std::optional<std::size_t> max_jobs;  // nullopt = endless
  std::string reference_gpu_type = "v100";
  // Required: the (duration, num_gpus) rows.
  std::shared_ptr<const PhillyJobDistribution> distribution;

  // Diurnal shape: relative amplitude A in [0, 1), hour of the peak in [0, 24), and the hour of
  // day at which simulated time 0 falls, in [0, 24).
  double diurnal_amplitude = 0.5;
  double peak_hour = 14.0;
  double start_hour = 0.0;

  // Outcome mix: job-count shares of killed and unsuccessful jobs (the rest complete), the
  // share of unsuccessful jobs that are user errors, and the progress bound between early
  // (user) and late (infrastructure) failures. All in [0, 1]; killed + unsuccessful <= 1;
  // user_error_max_progress in (0, 1).
  double killed_share = 0.125;
  double unsuccessful_share = 0.214;
  double user_error_share = 0.8;
  double user_error_max_progress = 0.1;
  // false: no outcome labels (TraceJob::outcome stays nullopt).
  bool label_outcomes = true;
};

// Checks every option against its documented bounds (InvalidArgument naming the option).
Status ValidatePhillyWorkloadOptions(const PhillyWorkloadOptions& options);

// The relative arrival rate rate(t) / mean rate at simulated time t (1 + A cos(...)).
double PhillyDiurnalFactor(const PhillyWorkloadOptions& options, Seconds t);

class PhillyJobStream final : public JobStream {
 public:
  // Fails (InvalidArgument) on options out of bounds, a missing reference GPU type, or a
  // (template, num_gpus) pair the table's rows need that has no positive throughput on it.
  static Result<std::unique_ptr<PhillyJobStream>> Create(const PhillyWorkloadOptions& options,
                                                         const ThroughputTable& throughputs);

  std::optional<Seconds> PeekArrival() const override;
  TraceJob Pop() override;

  std::size_t num_generated() const { return num_generated_; }

 private:
  PhillyJobStream(const PhillyWorkloadOptions& options,
                  std::map<JobTypeKey, double> reference_throughput);
  TraceJob DrawJob();
  JobOutcome DrawOutcome();
  Seconds DrawNextArrival(Seconds after);

  PhillyWorkloadOptions options_;
  std::map<JobTypeKey, double> reference_throughput_;
  std::vector<std::size_t> single_gpu_templates_;  // indices into JobTable()
  std::vector<std::size_t> distributed_templates_;
  PyRandom job_rng_;
  PyRandom arrival_rng_;
  PyRandom outcome_rng_;
  Seconds next_arrival_{0.0};
  std::size_t num_generated_ = 0;
};

// Convenience: the first `count` jobs (e.g. to write a trace or to test the distributions).
Result<std::vector<TraceJob>> GeneratePhillyJobs(const PhillyWorkloadOptions& options,
                                                 const ThroughputTable& throughputs,
                                                 std::size_t count);

}  // namespace gavel::workload
