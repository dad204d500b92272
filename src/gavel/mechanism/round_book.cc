#include "gavel/mechanism/round_book.h"

#include <algorithm>
#include <cmath>

namespace gavel::mechanism {

RoundBook::RoundBook(JobTable& table, TimeAccounting& accounting, Seconds round_length)
    : table_(&table), accounting_(&accounting), round_length_(round_length) {}

RoundPlan RoundBook::Emit(Seconds now, std::vector<Placed> placed, bool recomputed,
                          std::vector<JobId> rejected) {
  const std::int64_t round = counters_.rounds;
  // Lease statistics: last round's combinations that still have an active member could have
  // kept their GPUs; count those that did.
  for (const Combination& id : last_round_combos_) {
    if (table_->IsActive(id.member(0)) || (id.is_pair() && table_->IsActive(id.member(1)))) {
      ++counters_.lease_extension_opportunities;
    }
  }
  last_round_combos_.clear();

  RoundPlan plan;
  plan.start = now;
  plan.allocation_recomputed = recomputed;
  plan.rejected = std::move(rejected);
  plan.assignments.reserve(placed.size());
  const double round_seconds = round_length_.value();
  for (Placed& p : placed) {
    accounting_->Track(p.slot);  // its micro-task books time received
    ComboState& c = table_->combo(p.slot);
    Assignment a;
    a.combination = c.id;
    a.gpu_type = p.type;
    a.lease_duration = round_length_;
    a.lease_extended =
        c.last_round >= 0 && c.last_round == round - 1 &&
        c.last_workers.size() == p.workers.size() &&
        std::is_permutation(p.workers.begin(), p.workers.end(), c.last_workers.begin());
    if (a.lease_extended) ++counters_.lease_extensions;
    for (int i = 0; i < c.id.size(); ++i) {
      JobRecord& record = table_->record(c.member_index[static_cast<std::size_t>(i)]);
      const double tput = table_->ComboThroughput(c, i, p.type);
      const double remaining = record.total_steps - record.steps_run;
      a.max_steps.push_back(std::min(std::trunc(tput * round_seconds), remaining));
      a.expected_throughput.push_back(tput);
      a.remaining_steps.push_back(remaining);
      if (!record.first_start) record.first_start = now;
    }
    c.last_round = round;
    c.last_type = p.type;
    c.last_workers = p.workers;
    c.running = true;
    ++num_running_;
    last_round_combos_.push_back(c.id);
    a.workers = std::move(p.workers);
    plan.assignments.push_back(std::move(a));
  }
  ++counters_.rounds;
  counters_.micro_tasks += static_cast<std::int64_t>(plan.assignments.size());
  return plan;
}

Result<ComboState*> RoundBook::Running(const Combination& c) {
  const int slot = table_->SlotOf(c);
  if (slot < 0 || !table_->combo(slot).running) {
    return Status::FailedPrecondition("no micro-task of " + c.ToString() + " is running");
  }
  return &table_->combo(slot);
}

Result<std::optional<FinishedMicroTask>> RoundBook::Gather(const WorkerReport& report) {
  GAVEL_ASSIGN_OR_RETURN(ComboState* const running, Running(report.combination));
  ComboState& c = *running;
  const int members = report.combination.size();
  if (std::find(c.last_workers.begin(), c.last_workers.end(), report.worker) ==
      c.last_workers.end()) {
    return Status::InvalidArgument("worker " + report.worker.ToString() + " does not run " +
                                   report.combination.ToString());
  }
  for (const GpuReport& earlier : c.reports) {
    if (earlier.worker == report.worker) {
      return Status::InvalidArgument("worker " + report.worker.ToString() +
                                     " reported twice for " + report.combination.ToString());
    }
  }
  if (static_cast<int>(report.steps.size()) != members ||
      static_cast<int>(report.elapsed.size()) != members) {
    return Status::InvalidArgument("report for " + report.combination.ToString() +
                                   " must give steps and elapsed time per member");
  }
  GpuReport gpu{report.worker, {}, {}, report.finished_at};
  for (std::size_t i = 0; i < static_cast<std::size_t>(members); ++i) {
    gpu.steps[i] = report.steps[i];
    gpu.elapsed[i] = report.elapsed[i];
  }
  // A one-GPU micro-task completes with its only report; others wait for every GPU.
  if (c.last_workers.size() == 1) return {Total(c, std::span(&gpu, 1))};
  c.reports.push_back(gpu);
  if (c.reports.size() < c.last_workers.size()) return {std::nullopt};
  std::sort(c.reports.begin(), c.reports.end(),
            [](const GpuReport& a, const GpuReport& b) { return a.worker < b.worker; });
  const FinishedMicroTask finished = Total(c, c.reports);
  c.reports.clear();
  return {finished};
}

Result<FinishedMicroTask> RoundBook::Failed(const Combination& combination, Seconds at) {
  GAVEL_ASSIGN_OR_RETURN(ComboState* const running, Running(combination));
  ComboState& c = *running;
  c.reports.clear();
  // Every GPU reports nothing done; one such report totals the same as all of them.
  const GpuReport nothing{WorkerId(0), {}, {}, at};
  return Total(c, std::span(&nothing, 1));
}

Result<FinishedMicroTask> RoundBook::Whole(const MicroTaskResult& result) {
  GAVEL_ASSIGN_OR_RETURN(ComboState* const running, Running(result.combination));
  ComboState& c = *running;
  const auto members = static_cast<std::size_t>(result.combination.size());
  if (!c.reports.empty()) {
    return Status::FailedPrecondition("a GPU of " + result.combination.ToString() +
                                      " already reported on its own");
  }
  if (result.steps.size() != members || result.elapsed.size() != members) {
    return Status::InvalidArgument("result for " + result.combination.ToString() +
                                   " must give steps and elapsed time per member");
  }
  FinishedMicroTask finished{&c, {}, {}, result.finished_at, true};
  for (std::size_t i = 0; i < members; ++i) {
    finished.steps[i] = result.steps[i];
    finished.elapsed[i] = result.elapsed[i];
  }
  for (std::size_t i = 0; i < members; ++i) {
    if (table_->IsActive(result.combination.member(static_cast<int>(i))) &&
        (result.steps[i] <= 0.0 || result.elapsed[i].value() <= 0.0)) {
      finished.succeeded = false;
    }
  }
  return finished;
}

FinishedMicroTask RoundBook::Total(ComboState& c, std::span<const GpuReport> reports) const {
  const int members = c.id.size();
  FinishedMicroTask finished{&c, {}, {}, reports.front().finished_at, true};
  for (const GpuReport& r : reports) {
    for (int i = 0; i < members; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      if (table_->IsActive(c.id.member(i)) &&
          (r.steps[ui] <= 0.0 || r.elapsed[ui].value() <= 0.0)) {
        finished.succeeded = false;
      }
      finished.steps[ui] += r.steps[ui];
      finished.elapsed[ui] = std::max(finished.elapsed[ui], r.elapsed[ui]);
    }
    finished.finished_at = std::max(finished.finished_at, r.finished_at);
  }
  return finished;
}

void RoundBook::Finish(ComboState& c, bool failed) {
  c.running = false;
  --num_running_;
  if (failed) ++counters_.failed_micro_tasks;
}

void RoundBook::Abandon(ComboState& c) {
  if (!c.running) return;
  c.running = false;
  c.reports.clear();
  --num_running_;
}

}  // namespace gavel::mechanism
