#include "gavel/sim/ideal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "gavel/mechanism/policy_input_builder.h"
#include "gavel/policy/registry.h"

namespace gavel::sim::internal {
namespace {

using mechanism::ActiveJobInfo;
using mechanism::JobRecord;

class FluidSimulation {
 public:
  FluidSimulation(const SimulationOptions& options, RunSetup setup)
      : options_(options), setup_(std::move(setup)) {}

  Result<SimulationResult> Run() {
    GAVEL_RETURN_IF_ERROR(CreatePolicy());
    const std::size_t window_size = setup_.window_end - setup_.window_start;
    while (window_done_ < window_size) {
      if (options_.time_limit && now_ > *options_.time_limit) {
        return Status::FailedPrecondition(
            "simulated time passed the limit with window jobs "
            "unfinished (is the cluster overloaded?)");
      }
      GAVEL_RETURN_IF_ERROR(AdmitArrivals());
      if (changed_) GAVEL_RETURN_IF_ERROR(RecomputeRates());
      GAVEL_ASSIGN_OR_RETURN(const Seconds next, NextEvent());
      Advance(next);
      CompleteFinishedJobs();
    }
    return Finish();
  }

 private:
  Status CreatePolicy() {
    GAVEL_ASSIGN_OR_RETURN(const policy::PolicyInfo* info, policy::FindPolicy(options_.policy));
    packing_ = info->capabilities.packing;
    if (info->capabilities.needs_instance_costs && setup_.instance_costs.empty()) {
      return Status::InvalidArgument("policy \"" + options_.policy +
                                     "\" needs instance prices for every GPU type");
    }
    policy::PolicyOptions po;
    po.compat_gavel = options_.compat.policy;
    po.seed = options_.seed;
    po.lp_solver = options_.lp_solver;
    po.solve_path = options_.solve_path;
    GAVEL_ASSIGN_OR_RETURN(policy_, policy::MakePolicy(options_.policy, po));
    GAVEL_ASSIGN_OR_RETURN(table_types_,
                           mechanism::TableTypesOf(setup_.layout, *options_.throughputs));
    if (packing_) colocated_table_.emplace(*options_.throughputs, table_types_);
    num_types_ = static_cast<std::size_t>(setup_.layout.num_types());
    for (int t = 0; t < setup_.layout.num_types(); ++t) total_gpus_ += setup_.layout.gpu_count(t);
    return Status::Ok();
  }

  Status AdmitArrivals() {
    return ForEachArrival(
        *setup_.stream, now_, options_.compat,
        [&](const workload::TraceJob& job, const mechanism::JobDescription& d) -> Status {
          const auto key = options_.throughputs->KeyIndex(job.key());
          if (!key) {
            return Status::NotFound("job type " + job.key().ToString() +
                                    " is not in the throughput table");
          }
          JobRecord record;
          record.table_key = *key;
          if (colocated_table_) colocated_table_->Add(*key);
          record.scale_factor = job.scale_factor;
          record.priority_weight = job.priority_weight;
          record.total_steps = job.total_steps;
          record.arrival = job.arrival_time;
          record.deadline = d.deadline;
          record.utility = d.utility;
          if (records_.size() == setup_.window_start) window_start_time_ = job.arrival_time;
          active_.push_back(records_.size());
          records_.push_back(record);
          gpu_seconds_.emplace_back(num_types_, 0.0);
          changed_ = true;
          return Status::Ok();
        });
  }

  // A new allocation, and with it every active job's rate and GPU use per type.
  Status RecomputeRates() {
    changed_ = false;
    rate_.assign(active_.size(), 0.0);
    usage_.assign(active_.size() * num_types_, 0.0);
    if (active_.empty()) return Status::Ok();
    std::vector<ActiveJobInfo> jobs;
    for (std::size_t id : active_) {
      const JobRecord& r = records_[id];
      jobs.push_back(ActiveJobInfo{JobId(id), r.table_key, r.scale_factor, r.priority_weight,
                                   r.total_steps - r.steps_run, r.arrival, r.deadline,
                                   /*throughputs=*/{}, /*unpairable=*/false});
    }
    mechanism::PolicyInputOptions input_options;
    input_options.pairs = packing_;
    input_options.keep_unusable_pairs = options_.compat.raw_policy_input;
    input_options.zero_oversized = !options_.compat.raw_policy_input;
    input_options.instance_costs = setup_.instance_costs;
    if (colocated_table_) input_options.colocated_table = &*colocated_table_;
    const policy::PolicyInput input = mechanism::BuildPolicyInputForJobs(
        setup_.layout, *options_.throughputs, table_types_, jobs, now_, input_options);
    const auto start = std::chrono::steady_clock::now();
    Result<policy::PolicyOutput> output = policy_->Allocate(input);
    solve_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++solves_;
    if (!output.ok()) {
      return output.status().WithContext("policy " + options_.policy +
                                         " at t=" + std::to_string(now_.value()) + " s");
    }
    for (std::size_t i = 0; i < input.num_jobs(); ++i) {
      const double sf = input.jobs[i].scale_factor;
      for (std::size_t t = 0; t < num_types_; ++t) {
        const double x = output->allocation(i, t);
        rate_[i] += x * input.throughput(i, t);
        usage_[i * num_types_ + t] += x * sf;
      }
    }
    const Matrix& xp = output->pair_allocation;
    if (xp.rows() == input.pairs.size() && xp.cols() == num_types_) {
      for (std::size_t p = 0; p < input.pairs.size(); ++p) {
        const auto a = static_cast<std::size_t>(input.pairs[p].first);
        const auto b = static_cast<std::size_t>(input.pairs[p].second);
        const double sf = input.jobs[a].scale_factor;
        for (std::size_t t = 0; t < num_types_; ++t) {
          const double x = xp(p, t);
          rate_[a] += x * input.pair_throughput_first(p, t);
          rate_[b] += x * input.pair_throughput_second(p, t);
          // The pair's GPUs are booked once, half to each member.
          usage_[a * num_types_ + t] += x * sf / 2.0;
          usage_[b * num_types_ + t] += x * sf / 2.0;
        }
      }
    }
    return Status::Ok();
  }

  Result<Seconds> NextEvent() const {
    double next = std::numeric_limits<double>::infinity();
    if (const auto arrival = setup_.stream->PeekArrival()) next = arrival->value();
    for (std::size_t i = 0; i < active_.size(); ++i) {
      if (rate_[i] <= 0.0) continue;
      const JobRecord& r = records_[active_[i]];
      next = std::min(next, now_.value() + (r.total_steps - r.steps_run) / rate_[i]);
    }
    if (!std::isfinite(next)) {
      return Status::FailedPrecondition(std::to_string(active_.size()) +
                                        " jobs can never run on this cluster under policy " +
                                        options_.policy);
    }
    return Seconds(next);
  }

  void Advance(Seconds next) {
    const double dt = (next - now_).value();
    for (std::size_t i = 0; i < active_.size(); ++i) {
      JobRecord& r = records_[active_[i]];
      if (rate_[i] > 0.0 && !r.first_start) r.first_start = now_;
      r.steps_run += rate_[i] * dt;
      for (std::size_t t = 0; t < num_types_; ++t) {
        const double gpu_seconds = usage_[i * num_types_ + t] * dt;
        gpu_seconds_[active_[i]][t] += gpu_seconds;
        busy_ += gpu_seconds;
        if (window_start_time_) {
          const double inside = std::max(0.0, (next - std::max(now_, *window_start_time_)).value());
          window_busy_ += usage_[i * num_types_ + t] * inside;
        }
      }
    }
    now_ = next;
  }

  // Jobs whose remaining steps ran out at `now_` (up to round-off).
  void CompleteFinishedJobs() {
    std::vector<std::size_t> still_active;
    std::vector<double> rates;
    std::vector<double> usage;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      JobRecord& r = records_[active_[i]];
      const double remaining = r.total_steps - r.steps_run;
      if (remaining <= 1e-9 * std::max(1.0, r.total_steps) ||
          (rate_[i] > 0.0 && remaining / rate_[i] <= 1e-9 * std::max(1.0, now_.value()))) {
        r.steps_run = r.total_steps;
        r.finish = now_;
        changed_ = true;
        if (active_[i] >= setup_.window_start && active_[i] < setup_.window_end) ++window_done_;
        continue;
      }
      still_active.push_back(active_[i]);
      rates.push_back(rate_[i]);
      usage.insert(usage.end(), usage_.begin() + static_cast<std::ptrdiff_t>(i * num_types_),
                   usage_.begin() + static_cast<std::ptrdiff_t>((i + 1) * num_types_));
    }
    active_ = std::move(still_active);
    rate_ = std::move(rates);
    usage_ = std::move(usage);
  }

  Result<SimulationResult> Finish() {
    SimulationResult result;
    FinishResult(options_, setup_, *options_.throughputs, records_, gpu_seconds_, now_, result);
    if (now_.value() > 0.0) {
      result.utilization = busy_ / (static_cast<double>(total_gpus_) * now_.value());
    }
    if (window_start_time_ && now_ > *window_start_time_) {
      result.window_utilization =
          window_busy_ / (static_cast<double>(total_gpus_) * (now_ - *window_start_time_).value());
    }
    result.allocation_recomputations = solves_;
    result.policy_solves = solves_;
    result.policy_solve_seconds = solve_seconds_;
    return result;
  }

  const SimulationOptions& options_;
  RunSetup setup_;
  std::unique_ptr<policy::Policy> policy_;
  bool packing_ = false;
  std::vector<int> table_types_;
  // The jobs' co-located throughputs, dense (packing policies: every candidate pair is read
  // at every recomputation).
  std::optional<ColocatedMatrix> colocated_table_;
  std::size_t num_types_ = 0;
  int total_gpus_ = 0;

  Seconds now_{0.0};
  bool changed_ = false;
  std::vector<JobRecord> records_;
  std::vector<std::vector<double>> gpu_seconds_;
  std::vector<std::size_t> active_;  // ids, increasing
  std::vector<double> rate_;         // steps/s, parallel to active_
  std::vector<double> usage_;        // GPUs in use per type, active_ × types
  std::size_t window_done_ = 0;
  std::optional<Seconds> window_start_time_;
  double busy_ = 0.0;
  double window_busy_ = 0.0;
  std::int64_t solves_ = 0;
  double solve_seconds_ = 0.0;
};

}  // namespace

Result<SimulationResult> SimulateIdeal(const SimulationOptions& options, RunSetup setup) {
  return FluidSimulation(options, std::move(setup)).Run();
}

}  // namespace gavel::sim::internal
