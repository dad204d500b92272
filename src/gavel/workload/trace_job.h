// TraceJob: one job as a workload describes it before the scheduler admits it (the original's
// `Job` object, scheduler/job.py, without an id). Produced by the generator and the trace readers,
// consumed by the round scheduler, which numbers jobs 0, 1, ... in arrival (stream) order.
// Plain value type; thread-compatible.
#pragma once

#include <optional>
#include <string>

#include "gavel/core/elastic.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/utility.h"
#include "gavel/core/units.h"
#include "gavel/workload/job_outcome.h"

namespace gavel::workload {

struct TraceJob {
  std::string job_type;           // model string, e.g. "ResNet-18 (batch size 64)"
  std::string command;            // may contain "%s" data-dir placeholders
  std::string working_directory;  // relative to the workloads root
  std::string num_steps_arg;      // e.g. "--num_steps"
  bool needs_data_dir = true;
  // Total training steps. Fractional for generated jobs (duration x V100 throughput, not
  // rounded, as in the original); integral for jobs read from trace files.
  double total_steps = 0.0;
  int scale_factor = 1;  // GPUs used at once, >= 1
  double priority_weight = 1.0;
  // SLO multiplier (deadline = slo_multiplier x duration + arrival); nullopt = no SLO.
  std::optional<double> slo_multiplier;
  // Run time alone on one V100 unit; known only for generated jobs (nullopt for traces).
  std::optional<Seconds> duration;
  Seconds arrival_time{0.0};  // seconds since the start of the run
  // Host CPU cores and memory (GB) per GPU; nullopt = the simulator's default for the model.
  std::optional<double> cpus_per_gpu;
  std::optional<double> mem_gb_per_gpu;
  // How the workload says the job ends (job_outcome.h); nullopt = it says nothing. Set by the
  // Philly workload and the public-trace importers; inert without a failure model.
  std::optional<JobOutcome> outcome;
  // Themis' app (docs/policies.md, "Themis"): jobs with the same id form one app, e.g. the
  // trials of one hyper-parameter search; nullopt = an app of its own. Inert elsewhere.
  std::optional<int> app;
  // An elastic job's worker range and scaling curve (core/elastic.h); nullopt = fixed size.
  std::optional<ElasticSpec> elastic;
  // What the job is worth as a function of its completion time (core/utility.h); nullopt =
  // none (the run reports total_utility only when some job has one).
  std::optional<UtilityFunction> utility;

  // The throughput-table key (job_type, scale_factor).
  JobTypeKey key() const { return JobTypeKey{job_type, scale_factor}; }

  friend bool operator==(const TraceJob&, const TraceJob&) = default;
};

}  // namespace gavel::workload
