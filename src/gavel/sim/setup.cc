#include "gavel/sim/setup.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "gavel/core/bounds.h"
#include "gavel/sim/job_summary.h"

namespace gavel::sim::internal {

Result<RunSetup> PrepareRun(const SimulationOptions& options) {
  if (options.throughputs == nullptr) return Status::InvalidArgument("no throughput table");
  if (options.policy.empty()) return Status::InvalidArgument("no policy given");
  if (options.generator.has_value() == !options.trace.empty()) {
    return Status::InvalidArgument(
        "give exactly one workload: generated jobs or a non-empty trace");
  }
  // The one place every caller's round length passes (simulate, sweep, library users).
  GAVEL_RETURN_IF_ERROR(bounds::CheckRange(options.round_length.value(), bounds::kMinRoundSeconds,
                                           bounds::kMaxRoundSeconds, "round length", " s"));
  RunSetup setup;
  GAVEL_ASSIGN_OR_RETURN(setup.layout, mechanism::ClusterLayout::Create(options.cluster));
  if (options.physics.any() && options.ideal) {
    return Status::InvalidArgument(
        "the cluster physics (placement penalty, restart overhead, failures, host resources, "
        "racks) applies to round-based runs, not --ideal");
  }
  GAVEL_RETURN_IF_ERROR(setup.layout.SetHostResources(options.physics.host));

  if (!options.instance_costs.empty()) {
    for (const auto& [name, price] : options.instance_costs) {
      if (setup.layout.TypeIndex(name) < 0) {
        return Status::InvalidArgument("instance cost given for GPU type \"" + name +
                                       "\", which the cluster does not have");
      }
    }
    for (const std::string& name : setup.layout.type_names()) {
      const auto it = options.instance_costs.find(name);
      if (it == options.instance_costs.end()) {
        return Status::InvalidArgument("no instance cost for GPU type \"" + name + "\"");
      }
      setup.instance_costs.push_back(it->second);
    }
  }

  setup.window_start = options.window_start;
  if (options.generator) {
    if (!options.window_end) {
      return Status::InvalidArgument("a generated workload needs a window end (-e)");
    }
    setup.window_end = *options.window_end;
    workload::GeneratorOptions generator = *options.generator;
    // Static workload: exactly window_end drawn jobs, all at time 0.
    const bool is_static = generator.mean_interarrival.value() == 0.0;
    if (is_static) generator.max_jobs = setup.window_end;
    GAVEL_ASSIGN_OR_RETURN(auto stream,
                           workload::GeneratedJobStream::Create(generator, *options.throughputs));
    // A search's extra trials follow its drawn job and do not count towards the job limit, so
    // a static burst with searches holds more than window_end jobs: the window covers all of
    // them (else it would measure only the first ids, the burst's head, which FIFO favours).
    if (is_static && generator.hpo_fraction > 0.0) {
      GAVEL_ASSIGN_OR_RETURN(auto counter,
                             workload::GeneratedJobStream::Create(generator, *options.throughputs));
      std::size_t jobs = 0;
      for (; counter->PeekArrival().has_value(); ++jobs) counter->Pop();
      setup.window_end = jobs;
    }
    setup.stream = std::move(stream);
  } else {
    GAVEL_RETURN_IF_ERROR(workload::ValidateArrivalOrder(options.trace));
    setup.is_trace = true;
    setup.window_end = options.window_end.value_or(options.trace.size());
    if (setup.window_end > options.trace.size()) {
      return Status::InvalidArgument("window end " + std::to_string(setup.window_end) +
                                     " is beyond the trace's " +
                                     std::to_string(options.trace.size()) + " jobs");
    }
    setup.stream = std::make_unique<workload::TraceJobStream>(options.trace);
  }
  if (setup.window_start >= setup.window_end) {
    return Status::InvalidArgument("the measurement window [" + std::to_string(setup.window_start) +
                                   ", " + std::to_string(setup.window_end) + ") holds no job");
  }
  return setup;
}

mechanism::JobDescription ToDescription(const workload::TraceJob& job, Seconds admitted_at,
                                        const mechanism::Compat& compat) {
  mechanism::JobDescription d;
  d.type = job.key();
  d.total_steps = job.total_steps;
  d.priority_weight = job.priority_weight;
  d.arrival = job.arrival_time;
  d.app = job.app.value_or(-1);
  d.elastic = job.elastic;
  d.utility = job.utility;
  if (job.slo_multiplier && job.duration) {
    const double base = compat.slo_quirks ? admitted_at.value() : job.arrival_time.value();
    d.deadline = Seconds(*job.slo_multiplier * job.duration->value() + base);
  }
  return d;
}

Status ForEachArrival(
    workload::JobStream& stream, Seconds now, const mechanism::Compat& compat,
    const std::function<Status(const workload::TraceJob&, const mechanism::JobDescription&)>&
        admit) {
  while (true) {
    const std::optional<Seconds> arrival = stream.PeekArrival();
    if (!arrival || *arrival > now) return Status::Ok();
    const workload::TraceJob job = stream.Pop();
    GAVEL_RETURN_IF_ERROR(admit(job, ToDescription(job, now, compat)));
  }
}

void FinishResult(const SimulationOptions& options, const RunSetup& setup,
                  const ThroughputTable& table, const std::vector<mechanism::JobRecord>& records,
                  const std::vector<std::vector<double>>& gpu_seconds, Seconds end,
                  SimulationResult& result) {
  FillRunEcho(options, setup, end, result);
  result.jobs.clear();
  result.jobs.reserve(records.size());
  JobSummarizer summary(options.compat.slo_quirks);
  for (std::size_t i = 0; i < records.size(); ++i) {
    result.jobs.push_back(JobResultOf(setup, table, records[i], i, gpu_seconds[i]));
    summary.Add(result.jobs.back(), records[i].utility.has_value());
  }
  summary.FillSummary(result);
}

void FillRunEcho(const SimulationOptions& options, const RunSetup& setup, Seconds end,
                 SimulationResult& result) {
  result.policy = options.policy;
  result.seed = options.seed;
  result.compat = options.compat;
  result.ideal = options.ideal;
  result.gpu_types = setup.layout.type_names();
  result.gpu_counts.clear();
  for (int t = 0; t < setup.layout.num_types(); ++t) {
    result.gpu_counts.push_back(setup.layout.gpu_count(t));
  }
  result.window_start = setup.window_start;
  result.window_end = setup.window_end;
  result.makespan_seconds = end.value();
}

JobResult JobResultOf(const RunSetup& setup, const ThroughputTable& table,
                      const mechanism::JobRecord& r, std::size_t i,
                      std::vector<double> gpu_seconds) {
  JobResult job;
  job.id = JobId(i);
  job.job_type = table.job_types()[static_cast<std::size_t>(r.table_key)].model;
  job.scale_factor = r.scale_factor;
  job.priority_weight = r.priority_weight;
  job.arrival = r.arrival;
  job.first_start = r.first_start;
  job.finish = r.finish;
  job.jct = r.jct();
  job.deadline = r.deadline;
  job.dropped = r.dropped;
  job.in_window = i >= setup.window_start && i < setup.window_end;
  job.gpu_seconds = std::move(gpu_seconds);
  job.entitled_seconds = r.entitled_seconds;
  job.received_seconds = r.received_seconds;
  job.cost = r.cost;
  job.rejected = r.rejected;
  if (r.utility && job.jct) job.utility = r.utility->At(job.jct->value());
  return job;
}

void FinishQueueingMetrics(SimulationResult& result) {
  JobSummarizer summary;
  for (const JobResult& job : result.jobs) summary.Add(job, job.utility.has_value());
  summary.FillQueueing(result);
}

}  // namespace gavel::sim::internal

namespace gavel::sim {

void SummarizeJobs(SimulationResult& result) {
  std::vector<double> window_jcts;
  result.jobs_admitted = result.jobs.size();
  result.jobs_completed = 0;
  result.window_jobs_completed = 0;
  result.window_jobs_dropped = 0;
  result.failed_jobs = 0;
  for (const JobResult& job : result.jobs) {
    if (job.jct) ++result.jobs_completed;
    if (!job.in_window) continue;
    if (job.dropped) ++result.window_jobs_dropped;
    if (job.failed) ++result.failed_jobs;
    if (job.jct) {
      ++result.window_jobs_completed;
      window_jcts.push_back(job.jct->value());
    }
  }
  double sum = 0.0;
  for (double v : window_jcts) sum += v;
  result.average_jct_seconds =
      window_jcts.empty() ? 0.0 : sum / static_cast<double>(window_jcts.size());
  result.jct_p50_seconds = Percentile(window_jcts, 50.0);
  result.jct_p90_seconds = Percentile(window_jcts, 90.0);
  result.jct_p99_seconds = Percentile(window_jcts, 99.0);
  internal::FinishQueueingMetrics(result);
}

}  // namespace gavel::sim
