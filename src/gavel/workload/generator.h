// The original's synthetic workload generator (`utils.generate_job` as called
// by `Scheduler.simulate`), bit-exact with CPython: with the same seed and options it yields
// the same job types, scale factors, durations, step counts, priorities, SLOs and arrival
// times as the Python Gavel (to the last bit; checked against the reference runs).
//
// Random streams (each a PyRandom, i.e. CPython's random.Random):
//   job generator   seed + 2  every job attribute, in this order per job:
//                             1. r = uniform(0,1) -> scale factor (always drawn, even when
//                                multi-GPU jobs are off; then forced to 1),
//                             2. duration: random() >= 0.8 ? 60*10^uniform(3,4)
//                                                          : 60*10^uniform(1.5,3)
//                                (not drawn when a fixed duration is set),
//                             3. template = choice(JobTable()) until sf == 1 or distributed,
//                             4. priority: uniform(0,1) <= 0.2 -> 5.0 (only if multi-priority)
//   inter-arrival   seed + 3  next arrival = last + -log(1 - random()) / (1 / lam)
//                             (not drawn when lam == 0: every job arrives at time 0)
//   SLO             seed + 6  uniform(0,1): < 0.33 -> 1.2, < 0.67 -> 2.0, else 10.0
//                             (only if SLOs are on)
// total_steps = duration x isolated throughput of (model, sf) on the reference GPU type
// (v100), kept fractional as in the original.
//
// Alternative job-size model (not in the original's simulator, which only loads this data):
// with `philly` set, steps 1 and 2 are replaced by ONE draw, a uniform row of the Philly
// (duration, num_gpus) table: row = rows[choice index over all rows] from the job generator
// (PyRandom::ChoiceIndex, i.e. CPython's rng.choice(rows)). duration = the row's duration
// (or the fixed duration when set); scale factor = the row's num_gpus when multi-GPU jobs
// are on, else 1. Steps 3-4 and the other streams are unchanged.
//
// Ownership: the generator copies what it needs from the throughput table and shares the
// (immutable) Philly table. Not thread-safe; one generator per simulation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gavel/core/py_random.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/workload/job_stream.h"
#include "gavel/workload/trace_job.h"

namespace gavel::workload {

struct PhillyWorkloadOptions;  // philly_workload.h

// The empirical (duration, num_gpus) distribution of the Microsoft Philly trace, in file order.
// Immutable once loaded; safe to share between threads and generators.
struct PhillyJobDistribution {
  struct Row {
    Seconds duration;
    int num_gpus = 1;
  };
  std::vector<Row> rows;

  // Reads the CSV shipped as data/philly_job_distribution.csv: header
  // "duration_seconds,num_gpus", then one row per job. Errors (IoError for an unreadable
  // file, InvalidArgument otherwise) name the file and line: a wrong header, a wrong column
  // count, a duration that is not a finite positive number, num_gpus not in 1..8, no rows.
  static Result<PhillyJobDistribution> LoadCsv(const std::string& path);
};

struct GeneratorOptions {
  // The simulation seed (the original's --seed); streams use seed+2, seed+3, seed+6.
  std::uint64_t seed = 0;
  // Mean inter-arrival time ("lam", seconds). 0 puts every job at time 0 (static workload).
  Seconds mean_interarrival{0.0};
  // -m / --generate-multi-gpu-jobs: scale factors 1/2/4/8 (70/10/15/5 %); else all 1.
  bool generate_multi_gpu_jobs = false;
  // --generate-multi-priority-jobs: 20 % of jobs get priority weight 5.
  bool generate_multi_priority_jobs = false;
  // Draw an SLO multiplier per job from the SLO stream (the original's assign_SLOs).
  bool assign_slos = false;
  // -f: every job runs this long on one V100 unit. Like the original (`if fixed_job_duration:`),
  // a zero duration means "not fixed".
  std::optional<Seconds> fixed_duration;
  // Stop after this many jobs, like the original's num_total_jobs; nullopt = an endless
  // stream. Steady-state jobs count towards it but are always produced (the original's
  // pre-generation ignores num_total_jobs).
  std::optional<std::size_t> max_jobs;
  // --simulate-steady-state: GPU count per GPU type of the cluster. When non-empty, the stream
  // first yields, for each type in sorted order, jobs at time 0 until their scale factors
  // sum to at least that type's count; then the ordinary stream (first job also at time 0).
  // These jobs do not draw inter-arrival times.
  std::map<std::string, int> steady_state_cluster;
  // The GPU type whose isolated throughput converts duration to steps.
  std::string reference_gpu_type = "v100";
  // Optional alternative job-size model (see the file comment); nullptr = the original's.
  std::shared_ptr<const PhillyJobDistribution> philly;
  // The Philly-like workload (philly_workload.h) instead of the original's; nullptr = the
  // original's. When set, GeneratedJobStream hands out that workload's jobs, taking seed,
  // mean_interarrival, max_jobs and reference_gpu_type from these options (the other
  // options above do not apply to it and steady-state pre-generation is off).
  std::shared_ptr<const PhillyWorkloadOptions> philly_workload;
  // --elastic-fraction: this fraction of generated jobs is elastic (core/elastic.h) with
  // workers in [1, min(2 × scale factor, 8)] and the table's scaling curve. Which jobs are
  // drawn from a hash of (seed, job number), so the other draws (and the original's streams)
  // do not change. 0 = every job fixed-size (the default).
  double elastic_fraction = 0.0;
  // --utility: every generated job gets DefaultUtility(family, duration, scale factor)
  // (core/utility.h); nullopt = none.
  std::optional<UtilityFamily> utility;
  // --hpo-fraction: this fraction of generated jobs becomes a hyper-parameter search, an app
  // (TraceJob::app, Themis' bidder) of `hpo_trials` trial jobs that arrive together: the drawn
  // job is the best trial and runs to the end; each other trial is a copy of it (same model,
  // scale factor, arrival) that stops early, after a fraction in [0.1, 0.5) of its steps.
  // Which jobs, and each trial's fraction, come from hashes of (seed, job number), so the
  // other draws do not change. The trials follow the drawn job in the stream (they take the
  // next job ids) and do not count towards max_jobs. 0 = single-job apps only (the default).
  double hpo_fraction = 0.0;
  int hpo_trials = 4;  // trials per search, >= 2
};

// Draws jobs one at a time (arrival times are the stream's business, see GeneratedJobStream).
class JobGenerator {
 public:
  // Fails (InvalidArgument) when the reference GPU type is missing from `throughputs`, or a
  // job type the options can produce has no positive isolated throughput on it (the original
  // asserts num_steps > 0), or a Philly row has a num_gpus no template supports.
  static Result<JobGenerator> Create(const GeneratorOptions& options,
                                     const ThroughputTable& throughputs);

  // The next job (utils.generate_job): arrival_time 0, duration set, command with the literal
  // "%s" placeholders of the template.
  TraceJob Next();

 private:
  JobGenerator(const GeneratorOptions& options, std::map<JobTypeKey, double> reference_tput);

  GeneratorOptions options_;
  std::map<JobTypeKey, double> reference_throughput_;  // (model, sf) -> steps/s
  PyRandom job_rng_;
  PyRandom slo_rng_;
};

// The generated workload as the simulator consumes it. Job i's attributes do not depend on
// when it is popped (the streams are separate), so lazy drawing equals the original's.
class GeneratedJobStream final : public JobStream {
 public:
  static Result<std::unique_ptr<GeneratedJobStream>> Create(const GeneratorOptions& options,
                                                            const ThroughputTable& throughputs);

  std::optional<Seconds> PeekArrival() const override;
  TraceJob Pop() override;

  // Jobs drawn so far (a search's extra trials not counted).
  std::size_t num_generated() const { return num_generated_; }

 private:
  GeneratedJobStream(const GeneratorOptions& options, JobGenerator generator);
  TraceJob PopPlain();  // the job as the original (or the Philly workload) draws it

  GeneratorOptions options_;
  JobGenerator generator_;
  std::unique_ptr<JobStream> philly_;  // the Philly-like workload, when asked for
  PyRandom interarrival_rng_;
  // Steady-state pre-generation: remaining GPU count per type still to fill, in sorted order.
  std::vector<std::pair<std::string, int>> steady_state_remaining_;
  std::size_t steady_state_index_ = 0;
  Seconds next_arrival_{0.0};
  std::size_t num_generated_ = 0;
  std::deque<TraceJob> trials_;  // a search's trials still to hand out, before the next draw
};

// Convenience: the first `count` jobs of a generated stream (e.g. to write a trace).
Result<std::vector<TraceJob>> GenerateJobs(const GeneratorOptions& options,
                                           const ThroughputTable& throughputs, std::size_t count);

}  // namespace gavel::workload
