#include "gavel/policy/oasis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "gavel/core/parse_number.h"

namespace gavel::policy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A job long against its dynamic programme's step gets enough workload units that its best
// rate does this many per step (Admit says why).
constexpr double kUnitsPerStep = 4.0;

constexpr double kUnpriced = std::numeric_limits<double>::quiet_NaN();

// Promised resources of one time slot, per server (both empty: nothing promised).
struct SlotUse {
  std::vector<int> gpus;
  std::vector<double> cpus;
};

// What a schedule holds in one slot: the choice and the per-server amounts it promised.
struct PlanEntry {
  int type = -1;
  int workers = 0;
  std::vector<std::pair<std::size_t, int>> gpus;     // (server, GPUs)
  std::vector<std::pair<std::size_t, double>> cpus;  // (server, cores)
};

struct Server {
  int type = 0;
  int gpus = 0;
  double cpus = 0.0;  // 0 = CPU not limited
};

class Oasis final : public Policy {
 public:
  explicit Oasis(OasisOptions options) : o_(options) {}

  Result<PolicyOutput> Allocate(const PolicyInput& input) override {
    const std::size_t m = input.num_jobs();
    const std::size_t n = input.num_types();
    // Phase 1: the cluster's servers, the current slot, forget what is past or gone.
    BuildServers(input);
    const auto now_slot = static_cast<std::int64_t>(std::floor(input.now_seconds / o_.slot_seconds));
    ForgetBefore(now_slot);
    std::map<JobId, std::size_t> rows;
    for (std::size_t i = 0; i < m; ++i) rows[input.jobs[i].id] = i;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (rows.contains(it->first)) {
        ++it;
        continue;
      }
      Release(it->second, now_slot);  // finished early: its later promises are free again
      it = jobs_.erase(it);
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
    for (std::size_t i : order) {
      const PolicyJob& job = input.jobs[i];
      if (jobs_.contains(job.id)) continue;
      if (!Admit(input, i, now_slot)) output.rejected[i] = 1;
    }
    if (!pricing_mismatch_.empty()) return Status::Internal("oasis: " + pricing_mismatch_);

    // Phase 3: this slot's planned workers, then free GPUs to admitted jobs, oldest first.
    std::vector<int> free(n);
    for (std::size_t j = 0; j < n; ++j) free[j] = static_cast<int>(input.gpu_counts[j]);
    std::vector<char> chosen(m, 0);
    for (std::size_t i : order) {
      if (output.rejected[i] != 0) continue;
      const auto& plan = jobs_.at(input.jobs[i].id).plan;
      const auto entry = plan.find(now_slot);
      if (entry == plan.end()) continue;
      const auto type = static_cast<std::size_t>(entry->second.type);
      const int k = entry->second.workers;
      if (free[type] < k || Throughput(input, i, k, type) <= 0.0) continue;
      free[type] -= k;
      output.allocation(i, type) = 1.0;
      output.workers[i] = k;
      chosen[i] = 1;
    }
    for (std::size_t i : order) {
      if (output.rejected[i] != 0 || chosen[i] != 0) continue;
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
      if (best_k == 0) continue;
      free[best_type] -= best_k;
      output.allocation(i, best_type) = 1.0;
      output.workers[i] = best_k;
      chosen[i] = 1;
    }
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
    return output;
  }

 private:
  struct JobState {
    std::map<std::int64_t, PlanEntry> plan;  // by absolute slot
  };

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

  void BuildServers(const PolicyInput& input) {
    std::vector<Server> servers;
    std::size_t total = 0;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const int per = std::max(1, j < input.gpus_per_server.size() ? input.gpus_per_server[j] : 1);
      total += static_cast<std::size_t>(std::ceil(input.gpu_counts[j] / per));
    }
    const double cpus = input.host_cpus > 0.0 && total > 0 ? input.host_cpus / static_cast<double>(total) : 0.0;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      const int per = std::max(1, j < input.gpus_per_server.size() ? input.gpus_per_server[j] : 1);
      for (int left = static_cast<int>(input.gpu_counts[j]); left > 0; left -= per) {
        servers.push_back(Server{static_cast<int>(j), std::min(per, left), cpus});
      }
    }
    if (servers.size() == servers_.size() &&
        std::equal(servers.begin(), servers.end(), servers_.begin(), [](const Server& a, const Server& b) {
          return a.type == b.type && a.gpus == b.gpus && a.cpus == b.cpus;
        })) {
      return;
    }
    // The cluster changed: the promises refer to servers that may be gone; start afresh.
    servers_ = std::move(servers);
    BoundsMoved();  // the tabled GPU prices are per server capacity
    use_.clear();
    use_base_ = 0;
    for (auto& [id, state] : jobs_) state.plan.clear();
  }

  double Price(double used, double capacity) const {
    if (capacity <= 0.0) return kInf;
    const double upper = std::max(upper_, lower_);
    return lower_ * std::pow(upper / lower_, std::min(1.0, used / capacity));
  }

  using EmptyCosts = std::map<std::pair<std::size_t, int>, double>;

  // The dense index of (type, workers, cores per GPU), the column of prices_.
  std::size_t ComboIndex(std::size_t type, int k, double cpus_per_gpu) {
    const auto key = std::make_tuple(type, k, cpus_per_gpu);
    const auto it = combos_.find(key);
    if (it != combos_.end()) return it->second;
    prices_.emplace_back();
    return combos_.emplace(key, combos_.size()).first->second;
  }

  // Every price moves (L or U changed, or the servers): no kept slot price is valid.
  void BoundsMoved() {
    ++epoch_;
    for (auto& column : prices_) column.clear();
  }

  // Slot `index` of use_ changed its promises: its kept prices are stale.
  void SlotChanged(std::size_t index) {
    for (auto& column : prices_) {
      if (index < column.size()) column[index] = kUnpriced;
    }
  }

  // Drops the slots before `now_slot` (past); use_ then starts at now_slot.
  void ForgetBefore(std::int64_t now_slot) {
    if (use_.empty()) use_base_ = now_slot;
    for (; use_base_ < now_slot && !use_.empty(); ++use_base_) {
      use_.pop_front();
      for (auto& column : prices_) {
        if (!column.empty()) column.pop_front();
      }
    }
    if (use_.empty()) use_base_ = now_slot;
    for (; use_base_ > now_slot; --use_base_) {  // a caller whose clock went back
      use_.emplace_front();
      for (auto& column : prices_) {
        if (!column.empty()) column.push_front(kUnpriced);
      }
    }
  }

  // The greedy cost of `k` workers of `type` for `job` in slot t of the horizon `uses` (+inf
  // = does not fit): what Greedy gives, but priced once per slot while its promises and the
  // bounds stay (the cache on SlotUse), and once per run of slots with the same promises (a
  // schedule promises the same in consecutive slots, so a horizon is a few runs). Bit-identical
  // to pricing afresh: Greedy depends only on the slot's promises, the bounds, the servers, and
  // (type, k, the job's cores per GPU), the cache's key `combo`. The job's own slots are
  // priced in order, so slot t − 1 was priced just before t.
  double SlotCost(const std::vector<SlotUse*>& uses, int t, const PolicyJob& job, std::size_t type, int k,
                  std::size_t combo, std::size_t offset, EmptyCosts& empty_cost) {
    const auto fresh = [&](const SlotUse* use) {
      const auto greedy = Greedy(use, job, type, k);
      return greedy ? greedy->first : kInf;
    };
    SlotUse* use = uses[static_cast<std::size_t>(t)];
    if (use == nullptr) {
      const auto key = std::make_pair(type, k);
      auto it = empty_cost.find(key);
      if (it == empty_cost.end()) it = empty_cost.emplace(key, fresh(nullptr)).first;
      return it->second;
    }
    if (o_.reference_pricing) return fresh(use);
    std::deque<double>& column = prices_[combo];
    const std::size_t index = offset + static_cast<std::size_t>(t);
    double cost = index < column.size() ? column[index] : kUnpriced;
    if (std::isnan(cost)) {
      const SlotUse* before = t > 0 ? uses[static_cast<std::size_t>(t - 1)] : nullptr;
      cost = before != nullptr && index - 1 < column.size() && before->gpus == use->gpus &&
                     before->cpus == use->cpus
                 ? column[index - 1]
                 : kUnpriced;
      if (std::isnan(cost)) cost = fresh(use);
      if (column.size() <= index) column.resize(index + 1, kUnpriced);
      column[index] = cost;
    }
    if (o_.check_pricing && pricing_mismatch_.empty()) {
      const double expected = fresh(use);
      if (expected != cost) {
        pricing_mismatch_ = "cached slot price differs from a fresh one (job " +
                            std::to_string(job.id.value()) + ", type " + std::to_string(type) +
                            ", " + std::to_string(k) + " workers, horizon slot " + std::to_string(t) + ")";
      }
    }
    return cost;
  }

  // Price(used, capacity) for a server's whole GPUs, tabled per (capacity, used) while the
  // bounds stay (the same expression, so the same bits): the greedy's pow per server.
  double GpuPrice(int used, int capacity) const {
    const auto cap = static_cast<std::size_t>(capacity);
    return gpu_prices_[cap * (cap + 1) / 2 + static_cast<std::size_t>(used)];
  }
  void TableGpuPrices() {
    if (gpu_prices_epoch_ == epoch_) return;
    int most = 0;
    for (const Server& server : servers_) most = std::max(most, server.gpus);
    const auto n = static_cast<std::size_t>(most) + 1;
    gpu_prices_.assign(n * (n + 1) / 2, 0.0);
    for (int cap = 1; cap <= most; ++cap) {
      for (int used = 0; used <= cap; ++used) {
        const auto c = static_cast<std::size_t>(cap);
        gpu_prices_[c * (c + 1) / 2 + static_cast<std::size_t>(used)] = Price(used, cap);
      }
    }
    gpu_prices_epoch_ = epoch_;
  }

  // The greedy of the subroutine: the cheapest `k` workers of `type` (each a GPU plus its
  // CPU cores) and the job's parameter servers, at this slot's prices. nullopt when they do
  // not fit.
  std::optional<std::pair<double, PlanEntry>> Greedy(const SlotUse* use, const PolicyJob& job,
                                                     std::size_t type, int k) const {
    const bool cpu_limited = !servers_.empty() && servers_[0].cpus > 0.0;
    auto& by_price = scratch_by_price_;  // (price per worker, server)
    by_price.clear();
    auto& cpu_room = scratch_cpu_room_;
    cpu_room.assign(servers_.size(), 0.0);
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      const Server& server = servers_[s];
      const int used = use != nullptr ? use->gpus[s] : 0;
      const double used_cpu = use != nullptr ? use->cpus[s] : 0.0;
      cpu_room[s] = server.cpus - used_cpu;
      if (server.type != static_cast<int>(type) || used >= server.gpus) continue;
      double price = o_.reference_pricing ? Price(used, server.gpus) : GpuPrice(used, server.gpus);
      if (cpu_limited) price += job.cpus_per_gpu * Price(used_cpu, server.cpus) * server.gpus / server.cpus;
      by_price.emplace_back(price, s);
    }
    std::sort(by_price.begin(), by_price.end());
    PlanEntry entry;
    entry.type = static_cast<int>(type);
    entry.workers = k;
    double cost = 0.0;
    int left = k;
    for (const auto& [price, s] : by_price) {
      if (left == 0) break;
      const int used = use != nullptr ? use->gpus[s] : 0;
      int take = std::min(left, servers_[s].gpus - used);
      if (cpu_limited && job.cpus_per_gpu > 0.0) {
        take = std::min(take, static_cast<int>(std::floor(cpu_room[s] / job.cpus_per_gpu)));
      }
      if (take <= 0) continue;
      left -= take;
      cost += take * price;
      entry.gpus.emplace_back(s, take);
      if (cpu_limited && job.cpus_per_gpu > 0.0) {
        cpu_room[s] -= take * job.cpus_per_gpu;
        entry.cpus.emplace_back(s, take * job.cpus_per_gpu);
      }
    }
    if (left > 0) return std::nullopt;
    // Parameter servers: CPU cores only, on the servers whose cores are cheapest.
    const int ps = static_cast<int>(std::ceil(k * o_.ps_ratio - 1e-9));
    if (cpu_limited && ps > 0 && o_.ps_cpus > 0.0) {
      auto& cpu_price = scratch_cpu_price_;
      cpu_price.clear();
      for (std::size_t s = 0; s < servers_.size(); ++s) {
        const double used_cpu = servers_[s].cpus - cpu_room[s];
        cpu_price.emplace_back(Price(used_cpu, servers_[s].cpus) * servers_[s].gpus / servers_[s].cpus, s);
      }
      std::sort(cpu_price.begin(), cpu_price.end());
      int ps_left = ps;
      for (const auto& [price, s] : cpu_price) {
        while (ps_left > 0 && cpu_room[s] >= o_.ps_cpus) {
          cpu_room[s] -= o_.ps_cpus;
          cost += price * o_.ps_cpus;
          entry.cpus.emplace_back(s, o_.ps_cpus);
          --ps_left;
        }
      }
      if (ps_left > 0) return std::nullopt;
    }
    return std::make_pair(cost, std::move(entry));
  }

  // Primal-dual admission of row i: true = admitted (its schedule promised).
  bool Admit(const PolicyInput& input, std::size_t i, std::int64_t now_slot) {
    const PolicyJob& job = input.jobs[i];
    if (!job.utility || job.steps_remaining <= 0.0) {
      jobs_[job.id] = JobState{};  // nothing to value it by: admitted, runs on free GPUs
      return true;
    }
    const double slot = o_.slot_seconds;
    const double since = job.time_since_start.value();
    const double now = input.now_seconds;
    const double slot_start = static_cast<double>(now_slot) * slot;
    // The bounds L and U from what this job offers at best.
    double best_time = kInf;
    double least_gpu_slots = kInf;
    for (std::size_t j = 0; j < input.num_types(); ++j) {
      for (int k = MinWorkers(job); k <= MaxWorkers(job); ++k) {
        const double tput = Throughput(input, i, k, j);
        if (tput <= 0.0) continue;
        best_time = std::min(best_time, job.steps_remaining / tput);
        least_gpu_slots = std::min(least_gpu_slots, k * std::ceil(job.steps_remaining / (tput * slot)));
      }
    }
    if (!std::isfinite(best_time)) return false;
    const double value = job.utility->At(since + best_time);
    if (!(value > 0.0)) return false;
    // Utility density: what one GPU for one slot is worth to this job at best.
    const double density = value / least_gpu_slots;
    if (density > upper_ || density / 4.0 < lower_) BoundsMoved();
    upper_ = std::max(upper_, density);
    lower_ = std::min(lower_, density / 4.0);
    TableGpuPrices();

    // The horizon: until the utility is (all but) gone, at most `horizon` slots.
    const UtilityFunction& u = *job.utility;
    const double worthless_at =
        u.family == UtilityFamily::kLinear ? u.midpoint : u.midpoint + 40.0 / u.steepness;
    const double until = (now - since) + worthless_at;  // absolute time
    const int slots = static_cast<int>(std::clamp(std::ceil((until - slot_start) / slot), 1.0,
                                                  static_cast<double>(o_.horizon_slots)));
    // The dynamic programme's steps: `group` consecutive slots each (one choice for all of
    // them), at most o_.steps steps, so that long horizons stay cheap and a step does work.
    const int group = (slots + o_.steps - 1) / o_.steps;
    const int steps = (slots + group - 1) / group;

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
    problem.utility = [&](int step) {
      const double end = slot_start + std::min(slots, (step + 1) * group) * slot;
      return job.utility->At(end - (now - since));
    };
    // Greedy cost of (type, k) in a slot nothing is promised in, computed once.
    EmptyCosts empty_cost;
    // The horizon's slots in order, with their promises (nullptr: none), found once.
    std::vector<SlotUse*> uses(static_cast<std::size_t>(slots), nullptr);
    const auto offset = static_cast<std::size_t>(now_slot - use_base_);  // use_ starts at now_slot
    for (std::size_t t = 0; t < uses.size() && offset + t < use_.size(); ++t) {
      SlotUse& use = use_[offset + t];
      if (!use.gpus.empty()) uses[t] = &use;
    }
    problem.choices.resize(static_cast<std::size_t>(steps));
    for (int step = 0; step < steps; ++step) {
      const int first = step * group;
      const int last = std::min(slots, first + group);
      // The current slot has only what is left of it.
      const double seconds = (last - first) * slot - (first == 0 ? now - slot_start : 0.0);
      for (std::size_t j = 0; j < input.num_types(); ++j) {
        for (int k = MinWorkers(job); k <= MaxWorkers(job); ++k) {
          const double tput = Throughput(input, i, k, j);
          if (tput <= 0.0) continue;
          const int units = static_cast<int>(
              std::min<double>(workload_units, std::floor(tput * seconds / unit_steps)));
          if (units <= 0) continue;
          const std::size_t combo = ComboIndex(j, k, job.cpus_per_gpu);
          double cost = 0.0;
          for (int t = first; t < last && std::isfinite(cost); ++t) {
            cost += SlotCost(uses, t, job, j, k, combo, offset, empty_cost);
          }
          if (!std::isfinite(cost)) continue;
          problem.choices[static_cast<std::size_t>(step)].push_back(
              SlotChoice{units, cost, static_cast<int>(j), k});
        }
      }
    }
    const Schedule best = BestSchedule(problem);
    if (!best.feasible || !(best.payoff > 0.0)) return false;

    // Admitted: promise its resources, slot by slot (prices rise for the next jobs).
    // A run of slots whose promises were equal gets the same placement (the greedy depends on
    // nothing else here): it runs once per run.
    JobState state;
    SlotUse before;  // the promises the last placement was computed at
    for (std::size_t step = 0; step < best.per_slot.size(); ++step) {
      const SlotChoice& c = best.per_slot[step];
      if (c.units == 0) continue;
      const int first = static_cast<int>(step) * group;
      std::optional<std::pair<double, PlanEntry>> placed;
      for (int t = first; t < std::min(slots, first + group); ++t) {
        const std::int64_t abs_slot = now_slot + t;
        SlotUse& use = UseFor(abs_slot);
        if (!placed || o_.reference_pricing || use.gpus != before.gpus || use.cpus != before.cpus) {
          before = use;
          placed = Greedy(&use, job, static_cast<std::size_t>(c.type), c.workers);
        }
        if (!placed) continue;  // cannot happen: the same prices and room as when chosen
        for (const auto& [server, g] : placed->second.gpus) use.gpus[server] += g;
        for (const auto& [server, cores] : placed->second.cpus) use.cpus[server] += cores;
        SlotChanged(static_cast<std::size_t>(abs_slot - use_base_));  // its prices rose
        state.plan.emplace_hint(state.plan.end(), abs_slot, placed->second);
      }
    }
    jobs_[job.id] = std::move(state);
    return true;
  }

  SlotUse& UseFor(std::int64_t slot) {
    const auto index = static_cast<std::size_t>(slot - use_base_);  // slot >= now_slot = use_base_
    while (use_.size() <= index) use_.emplace_back();
    SlotUse& use = use_[index];
    if (use.gpus.empty()) {
      use.gpus.assign(servers_.size(), 0);
      use.cpus.assign(servers_.size(), 0.0);
    }
    return use;
  }

  void Release(const JobState& state, std::int64_t now_slot) {
    for (const auto& [slot, entry] : state.plan) {
      if (slot <= now_slot) continue;  // the current slot's GPUs are in use this round
      if (slot < use_base_ || slot - use_base_ >= static_cast<std::int64_t>(use_.size())) continue;
      const auto index = static_cast<std::size_t>(slot - use_base_);
      SlotUse& use = use_[index];
      if (use.gpus.empty()) continue;
      for (const auto& [s, g] : entry.gpus) use.gpus[s] -= g;
      for (const auto& [s, cores] : entry.cpus) use.cpus[s] -= cores;
      SlotChanged(index);  // its prices fell
    }
  }

  OasisOptions o_;
  std::vector<Server> servers_;
  std::deque<SlotUse> use_;              // promises by slot, from use_base_ on
  std::int64_t use_base_ = 0;
  // prices_[combo][slot − use_base_]: the greedy cost of combination `combo` (ComboIndex) at
  // that slot's promises, +inf = does not fit, NaN = not priced yet; kept until the slot's
  // promises change (SlotChanged) or the bounds move (BoundsMoved). Columns per combination
  // so that a job's walk over its horizon reads one contiguous column.
  std::vector<std::deque<double>> prices_;
  std::map<JobId, JobState> jobs_;       // admitted jobs still active
  double lower_ = kInf;                  // L (set by the first job with a utility)
  double upper_ = 0.0;                   // U
  std::uint64_t epoch_ = 1;              // bumped when L or U changes: every cached price is stale
  std::string pricing_mismatch_;         // check_pricing's first finding ("" = none)
  std::map<std::tuple<std::size_t, int, double>, std::size_t> combos_;  // SlotUse::costs' columns
  std::vector<double> gpu_prices_;       // GpuPrice's table, for gpu_prices_epoch_
  // Greedy's working space, kept to spare an allocation per call.
  mutable std::vector<std::pair<double, std::size_t>> scratch_by_price_;
  mutable std::vector<std::pair<double, std::size_t>> scratch_cpu_price_;
  mutable std::vector<double> scratch_cpu_room_;
  std::uint64_t gpu_prices_epoch_ = 0;
};

Result<double> PositiveOption(const std::string& key, const std::string& text, bool zero_ok) {
  return NumberOption(key, text, 0.0, 1e9, zero_ok);
}

}  // namespace

Schedule BestSchedule(const ScheduleProblem& problem) {
  const int slots = static_cast<int>(problem.choices.size());
  const int units = problem.units;
  Schedule best;
  if (units <= 0 || slots == 0) return best;
  const auto width = static_cast<std::size_t>(units + 1);
  // cost[t][e]: least cost of e units done by the end of slot t; pick[t][e]: the choice made in
  // slot t on that path (-1 = idle).
  std::vector<double> cost(static_cast<std::size_t>(slots) * width, kInf);
  std::vector<int> pick(static_cast<std::size_t>(slots) * width, -1);
  std::vector<double> previous(width, kInf);
  previous[0] = 0.0;
  for (int t = 0; t < slots; ++t) {
    double* row = &cost[static_cast<std::size_t>(t) * width];
    int* picked = &pick[static_cast<std::size_t>(t) * width];
    const auto& choices = problem.choices[static_cast<std::size_t>(t)];
    for (int e = 0; e <= units; ++e) {
      row[e] = previous[static_cast<std::size_t>(e)];
      for (std::size_t c = 0; c < choices.size(); ++c) {
        const double before = previous[static_cast<std::size_t>(std::max(0, e - choices[c].units))];
        if (before + choices[c].cost < row[e]) {
          row[e] = before + choices[c].cost;
          picked[e] = static_cast<int>(c);
        }
      }
    }
    previous.assign(row, row + width);
  }
  // Completion at the end of slot t needs E units by t; the utility decides which t is best.
  for (int t = 0; t < slots; ++t) {
    const double c = cost[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(units)];
    if (!std::isfinite(c)) continue;
    const double payoff = problem.utility(t) - c;
    if (!best.feasible || payoff > best.payoff) {
      best.feasible = true;
      best.payoff = payoff;
      best.cost = c;
      best.finish_slot = t;
    }
  }
  if (!best.feasible) return best;
  best.per_slot.assign(static_cast<std::size_t>(best.finish_slot + 1), SlotChoice{});
  int e = units;
  for (int t = best.finish_slot; t >= 0 && e > 0; --t) {
    const int c = pick[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(e)];
    if (c < 0) continue;  // idle in slot t on this path
    const SlotChoice& choice = problem.choices[static_cast<std::size_t>(t)][static_cast<std::size_t>(c)];
    best.per_slot[static_cast<std::size_t>(t)] = choice;
    e = std::max(0, e - choice.units);
  }
  return best;
}

Result<OasisOptions> ParseOasisOptions(const PolicyOptions& options) {
  OasisOptions parsed;
  for (const auto& [key, text] : options.params) {
    if (key == "slot") {
      GAVEL_ASSIGN_OR_RETURN(parsed.slot_seconds, PositiveOption(key, text, false));
    } else if (key == "horizon" || key == "units" || key == "steps") {
      const std::optional<int> value = ParseInteger<int>(text);
      const int most = key == "horizon" ? 100'000 : 1'000;
      if (!value || *value < 1 || *value > most) {
        return Status::InvalidArgument("option " + key + "=" + text + ": must be an integer in [1, " +
                                       std::to_string(most) + "]");
      }
      (key == "horizon" ? parsed.horizon_slots
                         : key == "units" ? parsed.units
                                          : parsed.steps) = *value;
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
  return std::make_unique<Oasis>(options);
}

Result<std::unique_ptr<Policy>> MakeOasis(const PolicyOptions& options) {
  GAVEL_ASSIGN_OR_RETURN(const OasisOptions parsed, ParseOasisOptions(options));
  return MakeOasis(parsed);
}

std::unique_ptr<Policy> MakeOasisWithDefaults(const PolicyOptions& /*options*/) {
  return MakeOasis(OasisOptions{});
}

}  // namespace gavel::policy
