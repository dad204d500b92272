#include "gavel/sim/estimation.h"

#include <algorithm>
#include <cmath>

#include "gavel/policy/registry.h"
#include "gavel/workload/job_table.h"

namespace gavel::sim {

SimEstimation::SimEstimation(std::shared_ptr<const ThroughputTable> table,
                             std::unique_ptr<estimator::ThroughputEstimator> estimator,
                             std::vector<int> table_types, Seconds round_length)
    : table_(std::move(table)),
      estimator_(std::move(estimator)),
      table_types_(std::move(table_types)),
      round_length_(round_length) {}

Result<std::shared_ptr<SimEstimation>> SimEstimation::Create(
    const SimulationOptions& options, const mechanism::ClusterLayout& layout) {
  const std::size_t num_models = workload::JobTable().size();
  if (!(options.profiling_percentage >= 0.0 && options.profiling_percentage <= 1.0)) {
    return Status::InvalidArgument("--profiling-percentage must be in [0, 1]");
  }
  if (options.num_reference_models < 1 ||
      options.num_reference_models > static_cast<int>(num_models)) {
    return Status::InvalidArgument("--num-reference-models must be in [1, " +
                                   std::to_string(num_models) + "]");
  }
  GAVEL_ASSIGN_OR_RETURN(const policy::PolicyInfo* info, policy::FindPolicy(options.policy));
  // The original estimates only for packing policies, and only when something is unknown.
  if (!info->capabilities.packing || (options.profiling_percentage >= 1.0 &&
                         options.num_reference_models >= static_cast<int>(num_models))) {
    return std::shared_ptr<SimEstimation>();
  }
  if (options.ideal) {
    return Status::InvalidArgument(
        "--ideal does not support throughput estimation (--profiling-percentage, "
        "--num-reference-models)");
  }
  estimator::EstimatorOptions e;
  e.profiling_percentage = options.profiling_percentage;
  e.num_reference_models = options.num_reference_models;
  e.seed = options.seed;
  e.compat_gavel = options.compat.estimator;
  for (const auto& t : workload::JobTable()) e.models.push_back(t.model);
  std::vector<int> table_types;
  for (int t = 0; t < layout.num_types(); ++t) {
    const std::string& name = layout.type_name(t);
    e.profiled_gpu_types.push_back(name);
    const std::optional<int> index = options.throughputs->GpuTypeIndex(name);
    if (!index) return Status::NotFound("GPU type " + name + " is not in the throughput table");
    table_types.push_back(*index);
  }
  GAVEL_ASSIGN_OR_RETURN(auto made, estimator::ThroughputEstimator::Create(options.throughputs, e));
  std::shared_ptr<SimEstimation> estimation(new SimEstimation(
      options.throughputs, std::move(made), std::move(table_types), options.round_length));
  estimation->summary_.profiling_percentage = options.profiling_percentage;
  estimation->summary_.num_reference_models = options.num_reference_models;
  return estimation;
}

std::array<double, 2> SimEstimation::Colocated(JobId a, JobId b, int table_gpu_type) {
  if (!estimator_->Measured(a, b, table_gpu_type)) {
    for (const double error : estimator_->NormalizedError(a, b, table_gpu_type)) {
      if (std::isnan(error)) continue;
      error_sum_ += error;
      ++summary_.estimated_entries;
    }
  }
  return estimator_->Colocated(a, b, table_gpu_type);
}

Status SimEstimation::OnArrival(JobId id, const JobTypeKey& type) {
  GAVEL_ASSIGN_OR_RETURN(const estimator::Match match, estimator_->AddJob(id, type));
  ++summary_.jobs_matched;
  if (match.true_type) ++summary_.jobs_matched_true_type;
  if (match.fell_back) ++summary_.fallbacks;
  return Status::Ok();
}

std::array<double, 2> SimEstimation::TrueColocated(const mechanism::RoundScheduler& scheduler,
                                                   JobId a, JobId b, int table_gpu_type) const {
  return table_
      ->Colocated(table_gpu_type, scheduler.record(a).table_key, scheduler.record(b).table_key)
      .value_or(std::array<double, 2>{0.0, 0.0});
}

void SimEstimation::ApplyTruth(mechanism::RoundPlan& plan,
                               const mechanism::RoundScheduler& scheduler) const {
  for (mechanism::Assignment& a : plan.assignments) {
    if (!a.combination.is_pair()) continue;
    const std::array<double, 2> truth =
        TrueColocated(scheduler, a.combination.member(0), a.combination.member(1),
                      table_types_[static_cast<std::size_t>(a.gpu_type)]);
    for (int i = 0; i < 2; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      const mechanism::JobRecord& r = scheduler.record(a.combination.member(i));
      a.expected_throughput[ui] = truth[ui];
      a.max_steps[ui] =
          std::min(std::trunc(truth[ui] * round_length_.value()), r.total_steps - r.steps_run);
    }
  }
}

void SimEstimation::OnPairRan(const mechanism::Combination& pair, int layout_type,
                              mechanism::RoundScheduler& scheduler) {
  const int table_type = table_types_[static_cast<std::size_t>(layout_type)];
  const JobId a = pair.member(0), b = pair.member(1);
  if (!estimator_->Measured(a, b, table_type)) ++summary_.pairs_measured;
  estimator_->RecordMeasurement(a, b, table_type, TrueColocated(scheduler, a, b, table_type));
  // The pair is gone when a member finished with this micro-task; nothing to re-read then.
  (void)scheduler.RefreshPair(a, b);
}

ThroughputEstimationSummary SimEstimation::Summary() const {
  ThroughputEstimationSummary s = summary_;
  s.mean_absolute_error =
      s.estimated_entries > 0 ? error_sum_ / static_cast<double>(s.estimated_entries) : 0.0;
  s.matched_true_type_fraction =
      s.jobs_matched > 0
          ? static_cast<double>(s.jobs_matched_true_type) / static_cast<double>(s.jobs_matched)
          : 0.0;
  return s;
}

}  // namespace gavel::sim
