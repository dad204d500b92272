#include "gavel/policy/oasis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/parse_number.h"
#include "gavel/policy/oasis_plan.h"
#include "gavel/policy/oasis_promises.h"
#include "gavel/policy/oasis_testing.h"

namespace gavel::policy {
namespace {

using oasis::kInf;
using oasis::PlanEntry;
using oasis::PlanRun;

// A job long against its dynamic programme's step gets enough workload units that its best
// rate does this many per step (Admit says why).
constexpr double kUnitsPerStep = 4.0;
// An admitted job replanned (replan) is not replanned again for this many slots unless its new
// plan ends first, so that a job always a little behind, or one nothing can be planned for,
// costs no programme every round.
constexpr std::int64_t kReplanBackoffSlots = 10;
// With OasisOptions::Replan::kWhenBehind, a job is behind once the rest of its plan would do
// less than this share of its remaining steps (the GPUs its plan leaves free may make up a
// smaller shortfall).
constexpr double kBehindShare = 0.9;
// A job's realised speed (JobState::Speed) is kept within [kLeastSpeed, 1] of its table
// throughput: a few slow rounds must not make a replan promise twenty times the slots.
constexpr double kLeastSpeed = 0.25;

class Oasis final : public Policy {
 public:
  Oasis(OasisOptions options, OasisTestHooks hooks)
      : o_(options),
        hooks_(std::move(hooks)),
        ledger_(oasis::LedgerOptions{oasis::ParameterServers{o_.ps_ratio, o_.ps_cpus}, hooks_.pricing,
                                     hooks_.collect_states_at}) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    // Phase 1: the cluster's servers, the current slot, forget what is past or gone.
    if (ledger_.SetCluster(input)) {  // nothing of the plans is promised in the fresh ledger
      for (auto& [id, state] : jobs_) state.plan.clear();
      departed_.clear();
      ++released_;
    }
    const auto now_slot = static_cast<std::int64_t>(std::floor(input.now_seconds / o_.slot_seconds));
    ledger_.AdvanceTo(now_slot);
    // The rows in id order, merged with jobs_ (also in id order): the known rows' states,
    // and the jobs that left.
    std::vector<std::pair<JobId, std::size_t>> by_id(m);
    for (std::size_t i = 0; i < m; ++i) by_id[i] = {input.jobs[i].id, i};
    std::sort(by_id.begin(), by_id.end());
    std::vector<JobState*> state_of(m, nullptr);  // nullptr: seen for the first time
    auto row = by_id.begin();
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      while (row != by_id.end() && row->first < it->first) ++row;
      if (row != by_id.end() && row->first == it->first) {
        for (; row != by_id.end() && row->first == it->first; ++row) state_of[row->second] = &it->second;
        ++it;
        continue;
      }
      // Finished early: its later promises are given back (ReleaseDeparted, a bounded number
      // per round).
      departed_.push_back(std::move(it->second));
      it = jobs_.erase(it);
    }
    for (auto it = deferred_.begin(); it != deferred_.end();) {  // deferred jobs that left
      const auto at = std::lower_bound(by_id.begin(), by_id.end(), std::make_pair(it->first, std::size_t{0}));
      it = at != by_id.end() && at->first == it->first ? std::next(it) : deferred_.erase(it);
    }
    ReleaseDeparted(now_slot);
    ledger_.Collect();
    for (std::size_t i = 0; i < m; ++i) {
      if (state_of[i] != nullptr) state_of[i]->Observe(input, i, input.jobs[i]);
    }

    // Phase 2: admission of the jobs seen for the first time, oldest first.
    std::vector<std::size_t> order(m);
    for (std::size_t i = 0; i < m; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return input.jobs[a].time_since_start > input.jobs[b].time_since_start;
    });
    PolicyOutput output;
    output.allocation = Matrix(m, n);
    output.pair_allocation = Matrix(0, n);
    output.status = AllocationStatus::kHeuristic;
    output.rejected.assign(m, 0);
    output.workers.resize(m);
    for (std::size_t i = 0; i < m; ++i) output.workers[i] = input.jobs[i].scale_factor;
    // Admitted jobs whose execution drifted behind their plan, oldest first: planned again,
    // before the arrivals, from what they have left (at most decide_per_round of them).
    int replanned = 0;
    for (std::size_t i : order) {
      JobState* state = state_of[i];
      if (state == nullptr || !Plans(input.jobs[i]) || !ReplanDue(input, i, *state, now_slot)) continue;
      if (o_.decide_per_round > 0 && replanned == o_.decide_per_round) break;
      ++replanned;
      ledger_.Release(state->plan, now_slot);  // its own later promises are no obstacle
      state->plan.clear();
      Admit(input, i, now_slot, Planning::kReplan, state->Speed());  // kAdmitted: a new plan; else none yet
      state->replan_from = now_slot + kReplanBackoffSlots;
    }
    int decided = 0;  // planned admission decisions this round
    // Arrivals first, then deferred jobs whose retry is due: promises were given back since
    // their last try (the only way their prices can fall).
    for (const bool retries : {false, true}) {
      for (std::size_t i : order) {
        const PolicyJob& job = input.jobs[i];
        if (state_of[i] != nullptr) continue;
        if (const auto known = jobs_.find(job.id); known != jobs_.end()) {  // an id listed twice
          state_of[i] = &known->second;
          continue;
        }
        const auto deferred = deferred_.find(job.id);
        if ((deferred != deferred_.end()) != retries) continue;
        if (retries) {
          if (!Prospect(input, i)) {  // its utility is (all but) gone: it leaves
            output.rejected[i] = 1;
            deferred_.erase(deferred);
            continue;
          }
          if (deferred->second == released_) continue;  // nothing given back since its last try
        }
        if (Plans(job)) {
          // Past the round's decisions: pending (state_of stays nullptr) until a later round.
          if (o_.decide_per_round > 0 && decided == o_.decide_per_round) continue;
          ++decided;
        }
        const Decision decision = Admit(input, i, now_slot, Planning::kArrival);
        if (decision != Decision::kDeferred && retries) deferred_.erase(deferred);
        if (decision == Decision::kAdmitted) {
          state_of[i] = &jobs_.at(job.id);  // map nodes stay put
        } else if (decision == Decision::kRejected) {
          output.rejected[i] = 1;
        } else {
          deferred_[job.id] = released_;  // pending until promises are given back
        }
      }
    }
    if (!ledger_.mismatch().empty()) return Status::Internal("oasis: " + ledger_.mismatch());

    // Phase 3: this slot's planned workers, then free GPUs to admitted jobs, oldest first. While
    // the jobs that stay fit in the cluster, most urgent first instead, each on its plan's GPUs
    // if still free, else on the fastest free ones.
    std::vector<int> free(n);
    for (std::size_t j = 0; j < n; ++j) free[j] = static_cast<int>(input.gpu_counts[j]);
    std::vector<char> chosen(m, 0);
    double demand = 0.0;
    double capacity = 0.0;
    for (std::size_t j = 0; j < n; ++j) capacity += input.gpu_counts[j];
    for (std::size_t i : order) demand += output.rejected[i] != 0 ? 0.0 : MinWorkers(input.jobs[i]);
    const bool by_urgency = o_.urgency && demand <= capacity;
    if (by_urgency) order = UrgentFirst(input, order);
    // The fastest (type, workers) that fits in the free GPUs, for a job not chosen yet.
    const auto take_free = [&](std::size_t i) {
      const PolicyJob& job = input.jobs[i];
      int best_k = 0;
      std::size_t best_type = 0;
      double best = 0.0;
      for (std::size_t j = 0; j < n; ++j) {
        for (int k = MinWorkers(job); k <= MaxWorkers(job) && k <= free[j]; ++k) {
          const double tput = Throughput(input, i, k, j);
          if (tput > best * (1.0 + 1e-9)) {
            best = tput;
            best_k = k;
            best_type = j;
          }
        }
      }
      if (best_k == 0) return;
      free[best_type] -= best_k;
      output.allocation(i, best_type) = 1.0;
      output.workers[i] = best_k;
      chosen[i] = 1;
    };
    for (std::size_t i : order) {
      if (output.rejected[i] != 0) continue;
      const PlanEntry* entry = state_of[i] == nullptr ? nullptr : Planned(state_of[i]->plan, now_slot);
      if (entry != nullptr) {
        const auto type = static_cast<std::size_t>(entry->type);
        const int k = entry->workers;
        if (free[type] >= k && Throughput(input, i, k, type) > 0.0) {
          free[type] -= k;
          output.allocation(i, type) = 1.0;
          output.workers[i] = k;
          chosen[i] = 1;
          continue;
        }
      }
      if (by_urgency) take_free(i);
    }
    // Admitted jobs first (their resources were promised), then the pending ones.
    std::vector<std::size_t> free_order;
    for (const bool admitted : {true, false}) {
      for (std::size_t i : order) {
        if (output.rejected[i] == 0 && chosen[i] == 0 && (state_of[i] != nullptr) == admitted) free_order.push_back(i);
      }
    }
    for (std::size_t i : free_order) take_free(i);
    // GPUs still free: elastic jobs that run grow into them while that speeds them up (the
    // plan is a floor, not a ceiling, when nobody else can use the GPUs this round).
    for (bool grew = true; grew;) {
      grew = false;
      for (std::size_t i : order) {
        const PolicyJob& job = input.jobs[i];
        if (chosen[i] == 0 || !job.elastic()) continue;
        for (std::size_t j = 0; j < n; ++j) {
          const int k = output.workers[i];
          if (output.allocation(i, j) == 0.0 || free[j] == 0 || k >= job.max_workers ||
              Throughput(input, i, k + 1, j) <= Throughput(input, i, k, j)) {
            continue;
          }
          ++output.workers[i];
          --free[j];
          grew = true;
        }
      }
    }
    for (std::size_t i = 0; i < m; ++i) {
      if (state_of[i] == nullptr || output.rejected[i] != 0) continue;
      JobState& state = *state_of[i];
      state.last_type = -1;
      for (std::size_t j = 0; j < n; ++j) {
        if (output.allocation(i, j) > 0.0) state.last_type = static_cast<int>(j);
      }
      state.last_workers = output.workers[i];
      state.last_steps = input.jobs[i].steps_remaining;
      state.last_now = input.now_seconds;
    }
    return output;
  }

 private:
  struct JobState {
    std::vector<PlanRun> plan;  // by absolute slot, in order
    std::int64_t replan_from = 0;  // the first slot a replan may be tried (kReplanBackoffSlots)
    // Its realised speed: steps done over the steps its table throughput promised, summed over
    // the rounds it ran where it was allocated and made progress (a round lost whole to a
    // restart or failure measures no speed). Placement across servers, restarts and shared
    // links make a gang run slower than the table says, on every round; a plan at the table's
    // speed then always falls behind and is replanned again and again, each time pushed into
    // the least promised, far-off slots.
    double done = 0.0;
    double promised = 0.0;
    // What it was allocated last round (last_type −1: nothing) and when.
    int last_type = -1;
    int last_workers = 0;
    double last_steps = 0.0;
    double last_now = 0.0;
    // Realised over table throughput, in [kLeastSpeed, 1]; 1 until it has run.
    double Speed() const { return promised > 0.0 ? std::clamp(done / promised, kLeastSpeed, 1.0) : 1.0; }
    // Adds last round's progress of row i (`job`) if it ran where it was allocated.
    void Observe(const PolicyInput& input, std::size_t i, const PolicyJob& job) {
      if (last_type < 0 || job.running_type != last_type || input.now_seconds <= last_now) return;
      const double steps = last_steps - job.steps_remaining;
      const double table =
          (input.now_seconds - last_now) * Throughput(input, i, last_workers, static_cast<std::size_t>(last_type));
      if (steps <= 0.0 || table <= 0.0) return;
      done += steps;
      promised += table;
    }
  };

  // Whether admitted row i is due a replan (OasisOptions::replan): its plan is over (or was
  // dropped with the cluster's ledger) while it still runs, or, with kWhenBehind, what is left
  // of its plan would no longer finish it (kBehindShare).
  bool ReplanDue(const PolicyInput& input, std::size_t i, const JobState& state, std::int64_t now_slot) const {
    if (o_.replan == OasisOptions::Replan::kNever) return false;
    if (state.plan.empty()) return now_slot >= state.replan_from;  // none found last time
    if (now_slot >= state.plan.back().end) return true;
    if (o_.replan != OasisOptions::Replan::kWhenBehind || now_slot < state.replan_from) return false;
    double planned = 0.0;  // steps the rest of the plan does, from now
    for (const PlanRun& run : state.plan) {
      if (run.end <= now_slot) continue;
      const double first = static_cast<double>(std::max(run.first, now_slot)) * o_.slot_seconds;
      const double seconds = static_cast<double>(run.end) * o_.slot_seconds - std::max(first, input.now_seconds);
      planned += seconds * Throughput(input, i, run.entry.workers, static_cast<std::size_t>(run.entry.type));
    }
    return planned * state.Speed() < kBehindShare * input.jobs[i].steps_remaining;
  }

  // Whether the job's admission is decided by a planned best schedule (Admit's programme);
  // the others are admitted, or rejected, at once.
  static bool Plans(const PolicyJob& job) { return job.utility.has_value() && job.steps_remaining > 0.0; }

  static int MinWorkers(const PolicyJob& job) {
    return job.elastic() ? job.min_workers : job.scale_factor;
  }
  static int MaxWorkers(const PolicyJob& job) {
    return job.elastic() ? job.max_workers : job.scale_factor;
  }
  static double Throughput(const PolicyInput& input, std::size_t i, int k, std::size_t type) {
    const PolicyJob& job = input.jobs[i];
    if (job.elastic()) return job.ElasticThroughput(k, type);
    return k == job.scale_factor ? input.throughput(i, type) : 0.0;
  }

  // The entry `plan` holds for `slot` (nullptr: none).
  static const PlanEntry* Planned(const std::vector<PlanRun>& plan, std::int64_t slot) {
    const auto after = std::upper_bound(plan.begin(), plan.end(), slot,
                                        [](std::int64_t s, const PlanRun& run) { return s < run.first; });
    if (after == plan.begin()) return nullptr;
    const PlanRun& run = *(after - 1);
    return slot < run.end ? &run.entry : nullptr;
  }

  // What a planned job (Plans) can earn at best: running from now at its best speed.
  struct BestRun {
    double time = kInf;             // seconds to finish
    double gpu_slots = kInf;        // the fewest GPU-slots it needs
    double value = 0.0;             // utility at that finish
    double worthless_after = 0.0;   // seconds since arrival after which the utility is (all but) gone
  };
  BestRun Best(const PolicyInput& input, std::size_t i) const {
    const PolicyJob& job = input.jobs[i];
    BestRun best;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      for (int k = MinWorkers(job); k <= MaxWorkers(job); ++k) {
        const double tput = Throughput(input, i, k, j);
        if (tput <= 0.0) continue;
        best.time = std::min(best.time, job.steps_remaining / tput);
        best.gpu_slots = std::min(best.gpu_slots, k * std::ceil(job.steps_remaining / (tput * o_.slot_seconds)));
      }
    }
    const UtilityFunction& u = *job.utility;
    best.worthless_after = u.family == UtilityFamily::kLinear ? u.midpoint : u.midpoint + 40.0 / u.steepness;
    if (std::isfinite(best.time)) best.value = u.At(job.time_since_start.value() + best.time);
    return best;
  }
  // Whether a deferred job can still finish before its utility is (all but) gone.
  bool Prospect(const PolicyInput& input, std::size_t i) const {
    const BestRun best = Best(input, i);
    return std::isfinite(best.time) && best.value > 0.0 &&
           input.jobs[i].time_since_start.value() + best.time < best.worthless_after;
  }

  // `order` with the most urgent first (stable): utility lost per GPU-slot by one slot of delay
  // at the job's best speed; jobs without a utility last.
  std::vector<std::size_t> UrgentFirst(const PolicyInput& input, std::vector<std::size_t> order) const {
    std::vector<double> urgency(input.num_jobs(), 0.0);
    for (std::size_t i : order) {
      if (!Plans(input.jobs[i])) continue;
      const BestRun best = Best(input, i);
      if (!std::isfinite(best.time)) continue;
      const double finish = input.jobs[i].time_since_start.value() + best.time;
      const UtilityFunction& u = *input.jobs[i].utility;
      urgency[i] = (u.At(finish) - u.At(finish + o_.slot_seconds)) / best.gpu_slots;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return urgency[a] > urgency[b]; });
    return order;
  }

  enum class Decision {
    kAdmitted,  // its schedule promised
    kRejected,  // it leaves
    kDeferred,  // pending: its best schedule does not pay now; tried again when promises are given back
  };

  enum class Planning {
    kArrival,  // admission: promised only if the payoff is positive
    kReplan,   // an admitted job's plan ended: promised whatever the payoff (it stays admitted)
  };

  // Primal-dual admission of row i; with kReplan, a new plan for an admitted job's remaining
  // work at today's prices (kAdmitted: promised and stored; otherwise its state is untouched).
  // `speed`: the job's realised speed (JobState::Speed) a replan plans with; 1 for arrivals.
  Decision Admit(const PolicyInput& input, std::size_t i, std::int64_t now_slot, Planning planning,
                 double speed = 1.0) {
    const bool replan = planning == Planning::kReplan;
    const PolicyJob& job = input.jobs[i];
    if (!Plans(job)) {
      jobs_[job.id] = JobState{};  // nothing to value it by: admitted, runs on free GPUs
      return Decision::kAdmitted;
    }
    const double slot = o_.slot_seconds;
    const double since = job.time_since_start.value();
    const double now = input.now_seconds;
    const double slot_start = static_cast<double>(now_slot) * slot;
    // The bounds L and U from what this job offers at best.
    const BestRun best_run = Best(input, i);
    const double best_time = best_run.time / speed;
    if (!std::isfinite(best_time)) return Decision::kRejected;
    const double value = best_run.value;
    if (!replan) {
      if (!(value > 0.0)) return Decision::kRejected;
      if (o_.defer && !Prospect(input, i)) return Decision::kRejected;
      // Utility density: what one GPU for one slot is worth to this job at best. (Not for a
      // replan: what is left of a late job is no new evidence of what jobs are worth.)
      ledger_.Observe(value / best_run.gpu_slots);
    }

    // The horizon: until the utility is (all but) gone, at most `horizon` slots.
    const double worthless_at = best_run.worthless_after;
    const double until = (now - since) + worthless_at;  // absolute time
    // A replan reaches at least twice its best run time: a late job must still finish.
    const double reach = std::max(until - slot_start, replan ? 2.0 * best_time + (now - slot_start) : 0.0);
    const int slots = static_cast<int>(std::clamp(std::ceil(reach / slot), 1.0,
                                                  static_cast<double>(o_.horizon_slots)));
    // The dynamic programme's steps (StepGrid): `group` consecutive slots each (one choice
    // for all of them), at most o_.steps steps, aligned to absolute multiples of `group`.
    const oasis::StepGrid grid = oasis::MakeStepGrid(slots, o_.steps, now_slot);
    const int group = grid.group;
    const int steps = grid.count;

    // The workload's units E: `units`, or more for a job long against its step. A step's units
    // are rounded down (a plan must be feasible), so a unit longer than a step would round to
    // 0 and a job longer than 0.4 of its horizon could never be planned, however idle the
    // cluster: E grows until the job's best rate does kUnitsPerStep units a step (a rounding
    // loss of at most 1 / kUnitsPerStep of its best speed).
    const double step_seconds = group * slot;
    const int least_units = static_cast<int>(std::min(
        std::ceil(kUnitsPerStep * best_time / step_seconds), kUnitsPerStep * steps));
    const int workload_units = std::max(o_.units, least_units);
    // The problem: E units over the steps, each step's choices at its slots' prices.
    ScheduleProblem problem;
    problem.units = workload_units;
    const double unit_steps = job.steps_remaining / workload_units;
    if (hooks_.on_schedule) {  // for the observer only: the programme does not read it
      problem.step_begin.resize(static_cast<std::size_t>(steps));
      for (int step = 0; step < steps; ++step) problem.step_begin[static_cast<std::size_t>(step)] = now_slot + grid.First(step);
    }
    problem.utility = [&](int step) {
      const double end = slot_start + grid.Last(step) * slot;
      return job.utility->At(end - (now - since));
    };
    // The (type, workers) combinations that can run, in the order the choices list them, and
    // the units each does per step (0: none).
    job_combos_.clear();
    step_units_.clear();
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      for (int k = MinWorkers(job); k <= MaxWorkers(job); ++k) {
        const double tput = Throughput(input, i, k, j) * speed;
        if (tput <= 0.0) continue;
        bool runs = false;
        for (int step = 0; step < steps; ++step) {
          const int first = grid.First(step);
          const int last = grid.Last(step);
          // The current slot has only what is left of it.
          const double seconds = (last - first) * slot - (first == 0 ? now - slot_start : 0.0);
          const int units = static_cast<int>(
              std::min<double>(workload_units, std::floor(tput * seconds / unit_steps)));
          step_units_.push_back(units);
          runs = runs || units > 0;
        }
        if (!runs) {
          step_units_.resize(step_units_.size() - static_cast<std::size_t>(steps));
          continue;
        }
        job_combos_.push_back(oasis::JobCombo{j, k, ledger_.ComboIndex(j, k, job.cpus_per_gpu)});
      }
    }
    // Every step's cost for every combination (StepCosts), then the choices step by step.
    const std::size_t width = job_combos_.size();
    step_costs_.assign(static_cast<std::size_t>(steps) * width, 0.0);
    ledger_.StepCosts(grid, job_combos_, job.cpus_per_gpu, job.id, step_costs_);
    problem.choices.resize(static_cast<std::size_t>(steps));
    for (std::size_t c = 0; c < width; ++c) {
      for (int step = 0; step < steps; ++step) {
        const auto at = static_cast<std::size_t>(step);
        const int units = step_units_[c * static_cast<std::size_t>(steps) + at];
        const double cost = step_costs_[at * width + c];
        if (units <= 0 || !std::isfinite(cost)) continue;
        problem.choices[at].push_back(
            SlotChoice{units, cost, static_cast<int>(job_combos_[c].type), job_combos_[c].workers});
      }
    }
    const Schedule best = BestSchedule(problem);
    if (hooks_.on_schedule) hooks_.on_schedule(job.id, problem, best);
    if (!best.feasible) return replan || o_.defer ? Decision::kDeferred : Decision::kRejected;
    if (!replan && !(best.payoff > 0.0)) return o_.defer ? Decision::kDeferred : Decision::kRejected;

    // Admitted: its resources promised, slot by slot (prices rise for the next jobs).
    jobs_[job.id] = JobState{ledger_.Promise(best, grid, job.cpus_per_gpu, now_slot)};
    return Decision::kAdmitted;
  }

  // Gives back the promises of the jobs that left, in the order they left, at most
  // o_.release_per_round of them (0: all).
  void ReleaseDeparted(std::int64_t now_slot) {
    std::size_t count = departed_.size();
    if (o_.release_per_round > 0) count = std::min(count, static_cast<std::size_t>(o_.release_per_round));
    for (std::size_t d = 0; d < count; ++d) {
      ledger_.Release(departed_.front().plan, now_slot);
      ++released_;
      departed_.pop_front();
    }
  }

  OasisOptions o_;
  OasisTestHooks hooks_;
  oasis::PromiseLedger ledger_;
  std::map<JobId, JobState> jobs_;  // admitted jobs still active
  std::deque<JobState> departed_;   // admitted jobs gone, their promises not yet released
  // Deferred jobs (still active) and the count of releases at their last try.
  std::map<JobId, std::uint64_t> deferred_;
  std::uint64_t released_ = 0;  // departed jobs' promises given back, ever (and cluster resets)
  // Admit's working space: the arriving job's combinations, units per (combination, step),
  // and costs per (step, combination).
  std::vector<oasis::JobCombo> job_combos_;
  std::vector<int> step_units_;
  std::vector<double> step_costs_;
};

Result<double> PositiveOption(const std::string& key, const std::string& text, bool zero_ok) {
  return NumberOption(key, text, 0.0, 1e9, zero_ok);
}

// An integer option in [least, most], or an error naming "key=text" and the range (`note`
// appended, e.g. what 0 means).
Result<int> IntegerOption(const std::string& key, const std::string& text, int least, int most,
                          const std::string& note = "") {
  const std::optional<int> value = ParseInteger<int>(text);
  if (!value || *value < least || *value > most) {
    return Status::InvalidArgument("option " + key + "=" + text + ": must be an integer in [" + std::to_string(least) +
                                   ", " + std::to_string(most) + "]" + note);
  }
  return *value;
}

}  // namespace

Result<OasisOptions> ParseOasisOptions(const PolicyOptions& options) {
  OasisOptions parsed;
  for (const auto& [key, text] : options.params) {
    if (key == "slot") {
      GAVEL_ASSIGN_OR_RETURN(parsed.slot_seconds, PositiveOption(key, text, false));
    } else if (key == "horizon") {
      GAVEL_ASSIGN_OR_RETURN(parsed.horizon_slots, IntegerOption(key, text, 1, 100'000));
    } else if (key == "units") {
      GAVEL_ASSIGN_OR_RETURN(parsed.units, IntegerOption(key, text, 1, 1'000));
    } else if (key == "steps") {
      GAVEL_ASSIGN_OR_RETURN(parsed.steps, IntegerOption(key, text, 1, 1'000));
    } else if (key == "decide_per_round") {
      GAVEL_ASSIGN_OR_RETURN(parsed.decide_per_round, IntegerOption(key, text, 0, 1'000'000, " (0 = no limit)"));
    } else if (key == "release_per_round") {
      GAVEL_ASSIGN_OR_RETURN(parsed.release_per_round, IntegerOption(key, text, 0, 1'000'000, " (0 = no limit)"));
    } else if (key == "defer") {
      GAVEL_ASSIGN_OR_RETURN(const int defer, IntegerOption(key, text, 0, 1, " (1 = defer, 0 = reject at once)"));
      parsed.defer = defer == 1;
    } else if (key == "urgency") {
      GAVEL_ASSIGN_OR_RETURN(const int urgency, IntegerOption(key, text, 0, 1));
      parsed.urgency = urgency == 1;
    } else if (key == "replan") {
      GAVEL_ASSIGN_OR_RETURN(const int replan,
                             IntegerOption(key, text, 0, 2, " (0 = never, 1 = once its plan ended, 2 = once behind it)"));
      parsed.replan = static_cast<OasisOptions::Replan>(replan);
    } else if (key == "ps_ratio") {
      GAVEL_ASSIGN_OR_RETURN(parsed.ps_ratio, PositiveOption(key, text, true));
    } else if (key == "ps_cpus") {
      GAVEL_ASSIGN_OR_RETURN(parsed.ps_cpus, PositiveOption(key, text, true));
    } else {
      return Status::InvalidArgument("unknown option " + key);
    }
  }
  return parsed;
}

std::unique_ptr<Policy> MakeOasis(const OasisOptions& options) {
  return std::make_unique<Oasis>(options, OasisTestHooks{});
}

std::unique_ptr<Policy> MakeOasisForTesting(const OasisOptions& options, OasisTestHooks hooks) {
  return std::make_unique<Oasis>(options, std::move(hooks));
}

Result<std::unique_ptr<Policy>> MakeOasis(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(const OasisOptions parsed, ParseOasisOptions(options));
  return MakeOasis(parsed);
}

std::unique_ptr<Policy> MakeOasisWithDefaults(const PolicyOptions& /*options*/) {
  return MakeOasis(OasisOptions{});
}

}  // namespace gavel::policy
