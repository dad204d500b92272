#include "gavel/policy/oasis.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <tuple>
#include <utility>

#include "gavel/core/parse_number.h"

namespace gavel::policy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A job long against its dynamic programme's step gets enough workload units that its best
// rate does this many per step (Admit says why).
constexpr double kUnitsPerStep = 4.0;

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// What a schedule holds in one slot: the choice and the per-server amounts it promised.
struct PlanEntry {
  int type = -1;
  int workers = 0;
  std::vector<std::pair<std::size_t, int>> gpus;     // (server, GPUs)
  std::vector<std::pair<std::size_t, double>> cpus;  // (server, cores)

  bool operator==(const PlanEntry&) const = default;
};

// A job's plan: consecutive slots [first, end) that hold the same entry.
struct PlanRun {
  std::int64_t first = 0;
  std::int64_t end = 0;
  PlanEntry entry;
};

constexpr double kUnpriced = std::numeric_limits<double>::quiet_NaN();

using GpuPlacement = std::pair<std::size_t, int>;     // (server, GPUs)
using CpuPlacement = std::pair<std::size_t, double>;  // (server, cores)

// What promising one (state, combination) makes, kept once needed (Oasis::Transition): the
// greedy's placement, as ranges of Oasis's placement pools, and the state it leads to. Plain
// data, so that keeping and dropping tens of thousands costs no allocation.
struct KeptTransition {
  std::uint64_t key = 0;       // state id << 32 | combination
  std::uint32_t epoch = 0;     // stale (recomputed on use) when it is not the current epoch
  std::uint32_t next = kNone;  // the state with the placement added (kNone: not interned yet)
  bool fits = false;           // false: no placement (the combination does not fit)
  std::uint32_t gpus_begin = 0;  // placed_gpus_[gpus_begin, + gpus_count)
  std::uint32_t gpus_count = 0;
  std::uint32_t cpus_begin = 0;  // placed_cpus_[cpus_begin, + cpus_count)
  std::uint32_t cpus_count = 0;
};

// One state's contents, per server (pointers into the arenas or a scratch copy).
struct SlotView {
  const int* gpus = nullptr;
  const double* cpus = nullptr;
};

// Rows of `width` values, one per promise state, in blocks of kRowsPerBlock rows: growing
// never moves a row (no copy, and each page is touched once; the arenas grow to tens of MB
// in a burst of arrivals).
template <class T>
class RowArena {
 public:
  void Reset(std::size_t width) {
    blocks_.clear();
    width_ = width;
    rows_ = 0;
  }
  std::size_t width() const { return width_; }
  std::size_t rows() const { return rows_; }
  T* Row(std::size_t id) { return blocks_[id / kRowsPerBlock].get() + (id % kRowsPerBlock) * width_; }
  const T* Row(std::size_t id) const {
    return blocks_[id / kRowsPerBlock].get() + (id % kRowsPerBlock) * width_;
  }
  // A new last row, its values unset.
  T* Append() {
    if (rows_ % kRowsPerBlock == 0) blocks_.push_back(std::make_unique_for_overwrite<T[]>(kRowsPerBlock * width_));
    return Row(rows_++);
  }
  void Truncate(std::size_t rows) {
    rows_ = std::min(rows_, rows);
    blocks_.resize((rows_ + kRowsPerBlock - 1) / kRowsPerBlock);
  }

 private:
  static constexpr std::size_t kRowsPerBlock = 1024;
  std::vector<std::unique_ptr<T[]>> blocks_;
  std::size_t width_ = 0;
  std::size_t rows_ = 0;
};

struct Server {
  int type = 0;
  int gpus = 0;
  double cpus = 0.0;  // 0 = CPU not limited
};

// The dynamic programme's steps over a horizon of `slots` slots from the current one: `group`
// slots each, a power of two, the steps' boundaries on absolute multiples of `group` (the
// first step runs from now to the next multiple, the last ends with the horizon). Aligned,
// the plans of jobs that arrive in other slots with other horizons change hands on the same
// slots, so that the slots between hold equal promises and share one promise state: without
// it every job's boundaries fell elsewhere, each slot soon held a state of its own, and an
// arrival priced and promised slot by slot (docs/policies.md "oasis", "Bursts").
struct StepGrid {
  int slots = 0;   // the horizon
  int group = 1;   // slots per step
  int offset = 0;  // the current slot's place in its group (now_slot mod group)
  int count = 0;   // steps
  // The horizon's slots [First(step), Last(step)) (relative to the current slot).
  int First(int step) const { return step == 0 ? 0 : step * group - offset; }
  int Last(int step) const { return std::min(slots, (step + 1) * group - offset); }
};

// The smallest power-of-two group that covers `slots` in at most `most_steps` aligned steps.
StepGrid MakeStepGrid(int slots, int most_steps, std::int64_t now_slot) {
  for (int group = 1;; group *= 2) {
    const auto offset = static_cast<int>(((now_slot % group) + group) % group);
    const int count = (slots + offset + group - 1) / group;
    if (count <= most_steps) return StepGrid{slots, group, offset, count};
  }
}

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
    ReleaseDeparted(now_slot);
    CollectStates();

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
    int decided = 0;  // planned admission decisions this round
    for (std::size_t i : order) {
      const PolicyJob& job = input.jobs[i];
      if (state_of[i] != nullptr) continue;
      if (const auto known = jobs_.find(job.id); known != jobs_.end()) {  // an id listed twice
        state_of[i] = &known->second;
        continue;
      }
      if (Plans(job)) {
        // Past the round's decisions: pending (state_of stays nullptr) until a later round.
        if (o_.decide_per_round > 0 && decided == o_.decide_per_round) continue;
        ++decided;
      }
      if (Admit(input, i, now_slot)) {
        state_of[i] = &jobs_.at(job.id);  // map nodes stay put
      } else {
        output.rejected[i] = 1;
      }
    }
    if (!pricing_mismatch_.empty()) return Status::Internal("oasis: " + pricing_mismatch_);

    // Phase 3: this slot's planned workers, then free GPUs to admitted jobs, oldest first.
    std::vector<int> free(n);
    for (std::size_t j = 0; j < n; ++j) free[j] = static_cast<int>(input.gpu_counts[j]);
    std::vector<char> chosen(m, 0);
    for (std::size_t i : order) {
      if (output.rejected[i] != 0 || state_of[i] == nullptr) continue;  // rejected or pending
      const PlanEntry* entry = Planned(state_of[i]->plan, now_slot);
      if (entry == nullptr) continue;
      const auto type = static_cast<std::size_t>(entry->type);
      const int k = entry->workers;
      if (free[type] < k || Throughput(input, i, k, type) <= 0.0) continue;
      free[type] -= k;
      output.allocation(i, type) = 1.0;
      output.workers[i] = k;
      chosen[i] = 1;
    }
    // Admitted jobs first (their resources were promised), then the pending ones.
    std::vector<std::size_t> free_order;
    for (const bool admitted : {true, false}) {
      for (std::size_t i : order) {
        if (output.rejected[i] == 0 && chosen[i] == 0 && (state_of[i] != nullptr) == admitted) free_order.push_back(i);
      }
    }
    for (std::size_t i : free_order) {
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
    std::vector<PlanRun> plan;  // by absolute slot, in order
  };

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
    if (!state_hash_.empty() && servers.size() == servers_.size() &&
        std::equal(servers.begin(), servers.end(), servers_.begin(), [](const Server& a, const Server& b) {
          return a.type == b.type && a.gpus == b.gpus && a.cpus == b.cpus;
        })) {
      return;
    }
    // The cluster changed: the promises refer to servers that may be gone; start afresh.
    servers_ = std::move(servers);
    servers_of_type_.assign(input.num_types(), {});
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      servers_of_type_[static_cast<std::size_t>(servers_[s].type)].push_back(s);
    }
    BoundsMoved();  // the tabled GPU prices are per server capacity
    ResetStates();
    for (auto& [id, state] : jobs_) state.plan.clear();
    departed_.clear();  // nothing of theirs is promised in the fresh states
  }

  double Price(double used, double capacity) const {
    if (capacity <= 0.0) return kInf;
    const double upper = std::max(upper_, lower_);
    return lower_ * std::pow(upper / lower_, std::min(1.0, used / capacity));
  }

  // The dense index of (type, workers, cores per GPU): its column in every state's row of
  // kept prices (state_prices_), widened here when a new combination needs it.
  std::size_t ComboIndex(std::size_t type, int k, double cpus_per_gpu) {
    const auto key = std::make_tuple(type, k, cpus_per_gpu);
    const auto it = combos_.find(key);
    if (it != combos_.end()) return it->second;
    // (k, cores per GPU) for every type at once, side by side, so that the prices an arriving
    // job reads in a state share a cache line.
    for (std::size_t j = 0; j < std::max(type + 1, servers_of_type_.size()); ++j) {
      combos_.emplace(std::make_tuple(j, k, cpus_per_gpu), combos_.size());
    }
    if (combos_.size() > state_prices_.width()) {  // widen every state's row
      const std::size_t stride = (combos_.size() + combos_.size() / 4 + 8) / 8 * 8;  // cache lines
      RowArena<double> widened;
      widened.Reset(stride);
      for (std::size_t id = 0; id < state_prices_.rows(); ++id) {
        double* row = widened.Append();
        std::fill(row, row + stride, kUnpriced);
        std::copy_n(state_prices_.Row(id), state_prices_.width(), row);
      }
      state_prices_ = std::move(widened);
    }
    return combos_.at(key);
  }

  // Every price moves (L or U changed, or the servers): no kept price is valid.
  void BoundsMoved() {
    if (++epoch_ != 0) return;
    // The epoch wrapped around (after 2^32 moves): forget every kept price for certain.
    std::fill(state_epoch_.begin(), state_epoch_.end(), 0);
    for (KeptTransition& transition : transitions_) transition.epoch = 0;
    epoch_ = 1;
    gpu_prices_epoch_ = 0;
  }

  // ---- Promise states: interned slot contents and what is kept per (state, combination) ----

  // Only the empty state (id 0, nothing promised), sized for servers_.
  void ResetStates() {
    state_hash_.clear();
    state_epoch_.clear();
    state_prices_.Reset(state_prices_.width());
    state_gpus_.Reset(servers_.size());
    state_cpus_.Reset(servers_.size());
    state_table_.assign(1024, kNone);
    transitions_.clear();
    transition_table_.assign(1024, kNone);
    placed_gpus_.clear();
    placed_cpus_.clear();
    timeline_.clear();
    scratch_gpus_.assign(servers_.size(), 0);
    scratch_cpus_.assign(servers_.size(), 0.0);
    Intern();
    live_after_collect_ = 1;
  }

  SlotView Contents(std::uint32_t id) const {
    return SlotView{state_gpus_.Row(id), state_cpus_.Row(id)};
  }

  std::uint64_t HashOfScratch() const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    const auto mix = [&h](std::uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    };
    for (const int g : scratch_gpus_) mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(g)));
    // −0 and +0 compare equal, so they must hash alike.
    for (const double c : scratch_cpus_) mix(c == 0.0 ? 0 : std::bit_cast<std::uint64_t>(c));
    return h ^ (h >> 29);
  }

  bool ScratchEquals(std::uint32_t id) const {
    const SlotView view = Contents(id);
    return std::equal(scratch_gpus_.begin(), scratch_gpus_.end(), view.gpus) &&
           std::equal(scratch_cpus_.begin(), scratch_cpus_.end(), view.cpus);
  }

  // Places state `id` (hash `hash`) in the open-addressing table state_table_.
  void Enter(std::uint32_t id, std::uint64_t hash) {
    const std::size_t mask = state_table_.size() - 1;
    std::size_t at = hash & mask;
    while (state_table_[at] != kNone) at = (at + 1) & mask;
    state_table_[at] = id;
  }

  // The id of the state whose contents are scratch_gpus_ / scratch_cpus_ (a new one when
  // none has them).
  std::uint32_t Intern() {
    const std::uint64_t hash = HashOfScratch();
    const std::size_t mask = state_table_.size() - 1;
    for (std::size_t at = hash & mask; state_table_[at] != kNone; at = (at + 1) & mask) {
      const std::uint32_t id = state_table_[at];
      if (state_hash_[id] == hash && ScratchEquals(id)) return id;
    }
    const auto id = static_cast<std::uint32_t>(state_hash_.size());
    state_hash_.push_back(hash);
    state_epoch_.push_back(0);  // its row is filled on first use
    state_prices_.Append();
    std::copy(scratch_gpus_.begin(), scratch_gpus_.end(), state_gpus_.Append());
    std::copy(scratch_cpus_.begin(), scratch_cpus_.end(), state_cpus_.Append());
    if (2 * state_hash_.size() > state_table_.size()) {
      state_table_.assign(2 * state_table_.size(), kNone);
      for (std::uint32_t s = 0; s < state_hash_.size(); ++s) Enter(s, state_hash_[s]);
    } else {
      Enter(id, hash);
    }
    return id;
  }

  // The state of slot `index` of the timeline (slot timeline_base_ + index).
  std::uint32_t StateAt(std::size_t index) const { return index < timeline_.size() ? timeline_[index] : 0; }

  // Where state `id`'s kept price of `combo` lives (its row holds no price of another epoch).
  double& PriceSlot(std::uint32_t id, std::size_t combo) {
    double* row = state_prices_.Row(id);
    if (state_epoch_[id] != epoch_) {
      std::fill(row, row + state_prices_.width(), kUnpriced);
      state_epoch_[id] = epoch_;
    }
    return row[combo];
  }

  // The greedy cost of combination `combo` = (type, k, cpus_per_gpu) in state `id` (+inf:
  // does not fit), computed once per epoch.
  double Priced(std::uint32_t id, std::size_t combo, std::size_t type, int k, double cpus_per_gpu) {
    double& kept = PriceSlot(id, combo);
    if (std::isnan(kept)) kept = Greedy(Contents(id), cpus_per_gpu, type, k, nullptr);
    return kept;
  }

  // `state` with a placement added (sign +1) or taken away (−1), in the placement's order (the
  // sums must equal slot-by-slot bookkeeping to the bit).
  std::uint32_t Apply(std::uint32_t id, std::span<const GpuPlacement> gpus, std::span<const CpuPlacement> cpus,
                      int sign) {
    const SlotView view = Contents(id);
    std::copy(view.gpus, view.gpus + servers_.size(), scratch_gpus_.begin());
    std::copy(view.cpus, view.cpus + servers_.size(), scratch_cpus_.begin());
    for (const auto& [server, g] : gpus) scratch_gpus_[server] += sign * g;
    for (const auto& [server, cores] : cpus) {
      if (sign > 0) {
        scratch_cpus_[server] += cores;
      } else {
        scratch_cpus_[server] -= cores;
      }
    }
    return Intern();
  }

  std::span<const GpuPlacement> GpusOf(const KeptTransition& t) const {
    return {placed_gpus_.data() + t.gpus_begin, t.gpus_count};
  }
  std::span<const CpuPlacement> CpusOf(const KeptTransition& t) const {
    return {placed_cpus_.data() + t.cpus_begin, t.cpus_count};
  }

  static std::size_t TransitionSlot(std::uint64_t key, std::size_t mask) {
    const std::uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    return static_cast<std::size_t>(h ^ (h >> 32)) & mask;
  }

  // The index in transitions_ of `key` (kNone: none kept).
  std::uint32_t FindTransition(std::uint64_t key) const {
    const std::size_t mask = transition_table_.size() - 1;
    for (std::size_t at = TransitionSlot(key, mask); transition_table_[at] != kNone; at = (at + 1) & mask) {
      if (transitions_[transition_table_[at]].key == key) return transition_table_[at];
    }
    return kNone;
  }

  void PlaceTransition(std::uint32_t index) {
    const std::size_t mask = transition_table_.size() - 1;
    std::size_t at = TransitionSlot(transitions_[index].key, mask);
    while (transition_table_[at] != kNone) at = (at + 1) & mask;
    transition_table_[at] = index;
  }

  // Every transition in a table at most half full.
  void RebuildTransitionTable() {
    std::size_t size = 1024;
    while (2 * transitions_.size() > size) size *= 2;
    transition_table_.assign(size, kNone);
    for (std::uint32_t t = 0; t < transitions_.size(); ++t) PlaceTransition(t);
  }

  // Enters the new last transitions_[index] in the open-addressing table.
  void EnterTransition(std::uint32_t index) {
    if (2 * transitions_.size() > transition_table_.size()) {
      RebuildTransitionTable();
    } else {
      PlaceTransition(index);
    }
  }

  // The placement of `combo` in state `id` and the state it leads to, kept (an index in
  // transitions_; kNone: does not fit).
  std::uint32_t Transition(std::uint32_t id, std::size_t combo, std::size_t type, int k, double cpus_per_gpu) {
    const std::uint64_t key = (static_cast<std::uint64_t>(id) << 32) | combo;
    std::uint32_t index = FindTransition(key);
    if (index == kNone || transitions_[index].epoch != epoch_) {
      PlanEntry& entry = scratch_entry_;
      KeptTransition placed;
      placed.key = key;
      placed.epoch = epoch_;
      placed.fits = std::isfinite(Greedy(Contents(id), cpus_per_gpu, type, k, &entry));
      placed.gpus_begin = static_cast<std::uint32_t>(placed_gpus_.size());
      placed.gpus_count = static_cast<std::uint32_t>(entry.gpus.size());
      placed.cpus_begin = static_cast<std::uint32_t>(placed_cpus_.size());
      placed.cpus_count = static_cast<std::uint32_t>(entry.cpus.size());
      placed_gpus_.insert(placed_gpus_.end(), entry.gpus.begin(), entry.gpus.end());
      placed_cpus_.insert(placed_cpus_.end(), entry.cpus.begin(), entry.cpus.end());
      if (index == kNone) {
        index = static_cast<std::uint32_t>(transitions_.size());
        transitions_.push_back(placed);
        EnterTransition(index);
      } else {
        transitions_[index] = placed;  // a stale one (its pool ranges left until collection)
      }
    }
    KeptTransition& transition = transitions_[index];
    if (!transition.fits) return kNone;
    if (transition.next == kNone) transition.next = Apply(id, GpusOf(transition), CpusOf(transition), +1);
    return index;
  }

  // Drops the states no slot holds any more (their kept prices with them) once they outnumber
  // the live ones, so that a long run's memory stays bounded; ids are renumbered.
  void CollectStates() {
    const std::size_t count = state_hash_.size();
    if (count < o_.collect_states_at || count < 4 * live_after_collect_) return;
    std::vector<char> live(count, 0);  // state 0 always stays
    for (const std::uint32_t id : timeline_) live[id] = 1;
    std::vector<std::uint32_t> renumber(count, kNone);
    std::uint32_t kept = 0;
    for (std::size_t id = 0; id < count; ++id) {
      if (id != 0 && live[id] == 0) continue;
      // Moved down in place: kept <= id.
      renumber[id] = kept;
      state_hash_[kept] = state_hash_[id];
      state_epoch_[kept] = state_epoch_[id];
      const auto move_row = [&](auto& arena) { std::copy_n(arena.Row(id), arena.width(), arena.Row(kept)); };
      move_row(state_gpus_);
      move_row(state_cpus_);
      move_row(state_prices_);
      ++kept;
    }
    state_hash_.resize(kept);
    state_epoch_.resize(kept);
    state_gpus_.Truncate(kept);
    state_cpus_.Truncate(kept);
    state_prices_.Truncate(kept);
    // The live states' current transitions, their placements copied to fresh pools.
    std::vector<KeptTransition> kept_transitions;
    std::vector<GpuPlacement> kept_gpus;
    std::vector<CpuPlacement> kept_cpus;
    for (KeptTransition transition : transitions_) {
      const std::uint32_t id = renumber[transition.key >> 32];
      if (id == kNone || transition.epoch != epoch_) continue;
      transition.key = (static_cast<std::uint64_t>(id) << 32) | (transition.key & 0xffffffffULL);
      if (transition.next != kNone) transition.next = renumber[transition.next];
      const auto gpus = GpusOf(transition);
      const auto cpus = CpusOf(transition);
      transition.gpus_begin = static_cast<std::uint32_t>(kept_gpus.size());
      transition.cpus_begin = static_cast<std::uint32_t>(kept_cpus.size());
      kept_gpus.insert(kept_gpus.end(), gpus.begin(), gpus.end());
      kept_cpus.insert(kept_cpus.end(), cpus.begin(), cpus.end());
      kept_transitions.push_back(transition);
    }
    transitions_ = std::move(kept_transitions);
    placed_gpus_ = std::move(kept_gpus);
    placed_cpus_ = std::move(kept_cpus);
    RebuildTransitionTable();
    for (std::uint32_t& id : timeline_) id = renumber[id];
    std::size_t size = 1024;
    while (size < 2 * kept) size *= 2;
    state_table_.assign(size, kNone);
    for (std::uint32_t id = 0; id < kept; ++id) Enter(id, state_hash_[id]);
    live_after_collect_ = kept;
  }

  // Drops the slots before `now_slot` (past); the timeline then starts at now_slot.
  void ForgetBefore(std::int64_t now_slot) {
    if (now_slot > timeline_base_) {
      const auto past = static_cast<std::uint64_t>(now_slot - timeline_base_);
      timeline_.erase(timeline_.begin(),
                      timeline_.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(past, timeline_.size())));
    } else if (now_slot < timeline_base_ && !timeline_.empty()) {  // a caller whose clock went back
      timeline_.insert(timeline_.begin(), static_cast<std::size_t>(timeline_base_ - now_slot), 0);
    }
    timeline_base_ = now_slot;
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
    // Cores promised are mostly whole or half (cores per GPU, parameter servers): the same
    // for every quarter core of a server's capacity (every server has the same).
    cpu_prices_.clear();
    cpu_prices_capacity_ = !servers_.empty() ? servers_[0].cpus : 0.0;
    if (cpu_prices_capacity_ > 0.0 && cpu_prices_capacity_ < 1e5) {
      const auto quarters = static_cast<std::size_t>(std::floor(4.0 * cpu_prices_capacity_));
      for (std::size_t q = 0; q <= quarters; ++q) {
        cpu_prices_.push_back(Price(static_cast<double>(q) / 4.0, cpu_prices_capacity_));
      }
    }
    gpu_prices_epoch_ = epoch_;
  }

  // Price(used, capacity) for a server's cores: tabled where `used` is a quarter core
  // (the same expression on the same numbers, so the same bits), computed otherwise.
  double CpuPrice(double used, double capacity) const {
    if (!o_.reference_pricing && capacity == cpu_prices_capacity_) {
      const double quarters = used * 4.0;
      if (quarters >= 0.0 && quarters < static_cast<double>(cpu_prices_.size()) && quarters == std::floor(quarters)) {
        return cpu_prices_[static_cast<std::size_t>(quarters)];
      }
    }
    return Price(used, capacity);
  }

  // The greedy of the subroutine: the cheapest `k` workers of `type` (each a GPU plus its
  // CPU cores) and the job's parameter servers, at this slot's prices. nullopt when they do
  // not fit. As first written (every server's price computed, all of them sorted): the
  // oracle of OasisOptions::reference_pricing and check_pricing.
  std::optional<std::pair<double, PlanEntry>> ReferenceGreedy(SlotView use, double cpus_per_gpu,
                                                              std::size_t type, int k) const {
    const bool cpu_limited = !servers_.empty() && servers_[0].cpus > 0.0;
    auto& by_price = scratch_by_price_;  // (price per worker, server)
    by_price.clear();
    auto& cpu_room = scratch_cpu_room_;
    cpu_room.assign(servers_.size(), 0.0);
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      const Server& server = servers_[s];
      const int used = use.gpus[s];
      const double used_cpu = use.cpus[s];
      cpu_room[s] = server.cpus - used_cpu;
      if (server.type != static_cast<int>(type) || used >= server.gpus) continue;
      double price = Price(used, server.gpus);
      if (cpu_limited) price += cpus_per_gpu * Price(used_cpu, server.cpus) * server.gpus / server.cpus;
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
      const int used = use.gpus[s];
      int take = std::min(left, servers_[s].gpus - used);
      if (cpu_limited && cpus_per_gpu > 0.0) {
        take = std::min(take, static_cast<int>(std::floor(cpu_room[s] / cpus_per_gpu)));
      }
      if (take <= 0) continue;
      left -= take;
      cost += take * price;
      entry.gpus.emplace_back(s, take);
      if (cpu_limited && cpus_per_gpu > 0.0) {
        cpu_room[s] -= take * cpus_per_gpu;
        entry.cpus.emplace_back(s, take * cpus_per_gpu);
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

  // A parameter server's price per core on server `s` with `room` cores free.
  double PsPrice(std::size_t s, double room) const {
    const double used_cpu = servers_[s].cpus - room;
    return CpuPrice(used_cpu, servers_[s].cpus) * servers_[s].gpus / servers_[s].cpus;
  }

  // (price per core, server) of every server with room for a parameter server, by `room`
  // (cores free per server), in server order.
  void PsCandidates(const std::vector<double>& room, std::vector<std::pair<double, std::size_t>>& out) const {
    out.clear();
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      if (room[s] >= o_.ps_cpus) out.emplace_back(PsPrice(s, room[s]), s);
    }
  }

  // The same for a state's own room (before a job's workers are placed), for Greedy's ps_base.
  void PsCandidates(SlotView use, std::vector<std::pair<double, std::size_t>>& out) const {
    auto& room = scratch_base_room_;
    room.resize(servers_.size());
    for (std::size_t s = 0; s < servers_.size(); ++s) room[s] = servers_[s].cpus - use.cpus[s];
    PsCandidates(room, out);
  }

  // ReferenceGreedy's cost (+inf: does not fit) and placement (into `entry`, when given), by
  // the same arithmetic in the same order: servers are visited in the same (price, server)
  // order, but by selecting the cheapest left each time, only as far as needed (a placement
  // takes a few servers), instead of sorting them all; prices come from the tables.
  //
  // `ps_base`, when given, is PsCandidates(use): the parameter servers' candidates before any
  // worker is placed, computed once for several combinations in one state.
  double Greedy(SlotView use, double cpus_per_gpu, std::size_t type, int k, PlanEntry* entry,
                const std::vector<std::pair<double, std::size_t>>* ps_base = nullptr) const {
    const bool cpu_limited = !servers_.empty() && servers_[0].cpus > 0.0;
    const bool cores_per_worker = cpu_limited && cpus_per_gpu > 0.0;
    if (type >= servers_of_type_.size()) return kInf;  // no server of the type
    auto& by_price = scratch_by_price_;  // (price per worker, server)
    by_price.clear();
    for (const std::size_t s : servers_of_type_[type]) {
      const Server& server = servers_[s];
      const int used = use.gpus[s];
      if (used >= server.gpus) continue;
      double price = GpuPrice(used, server.gpus);
      if (cpu_limited) price += cpus_per_gpu * CpuPrice(use.cpus[s], server.cpus) * server.gpus / server.cpus;
      by_price.emplace_back(price, s);
    }
    if (entry != nullptr) {
      entry->gpus.clear();
      entry->cpus.clear();
      entry->type = static_cast<int>(type);
      entry->workers = k;
    }
    double cost = 0.0;
    int left = k;
    auto& workers_room = scratch_workers_room_;  // (server, cores left) where workers went
    workers_room.clear();
    for (auto next = by_price.begin(); left > 0 && next != by_price.end(); ++next) {
      std::iter_swap(next, std::min_element(next, by_price.end()));
      const auto [price, s] = *next;
      const double room = servers_[s].cpus - use.cpus[s];
      int take = std::min(left, servers_[s].gpus - use.gpus[s]);
      if (cores_per_worker) take = std::min(take, static_cast<int>(std::floor(room / cpus_per_gpu)));
      if (take <= 0) continue;
      left -= take;
      cost += take * price;
      if (entry != nullptr) entry->gpus.emplace_back(s, take);
      if (cores_per_worker) {
        workers_room.emplace_back(s, room - take * cpus_per_gpu);
        if (entry != nullptr) entry->cpus.emplace_back(s, take * cpus_per_gpu);
      }
    }
    if (left > 0) return kInf;
    // Parameter servers: CPU cores only, on the servers whose cores are cheapest (those
    // without room for one are passed over in the reference's order, so left out here).
    const int ps = static_cast<int>(std::ceil(k * o_.ps_ratio - 1e-9));
    if (cpu_limited && ps > 0 && o_.ps_cpus > 0.0) {
      auto& cpu_room = scratch_cpu_room_;
      cpu_room.resize(servers_.size());
      for (std::size_t s = 0; s < servers_.size(); ++s) cpu_room[s] = servers_[s].cpus - use.cpus[s];
      for (const auto& [s, room] : workers_room) cpu_room[s] = room;
      auto& cpu_price = scratch_cpu_price_;
      if (ps_base != nullptr) {  // the base, with the servers that took workers priced anew
        cpu_price = *ps_base;
        for (const auto& [server, room] : workers_room) {
          const std::size_t s = server;
          std::erase_if(cpu_price, [s](const auto& candidate) { return candidate.second == s; });
          if (room >= o_.ps_cpus) cpu_price.emplace_back(PsPrice(s, room), s);
        }
      } else {
        PsCandidates(cpu_room, cpu_price);
      }
      int ps_left = ps;
      for (auto next = cpu_price.begin(); ps_left > 0 && next != cpu_price.end(); ++next) {
        std::iter_swap(next, std::min_element(next, cpu_price.end()));
        const auto [price, s] = *next;
        while (ps_left > 0 && cpu_room[s] >= o_.ps_cpus) {
          cpu_room[s] -= o_.ps_cpus;
          cost += price * o_.ps_cpus;
          if (entry != nullptr) entry->cpus.emplace_back(s, o_.ps_cpus);
          --ps_left;
        }
      }
      if (ps_left > 0) return kInf;
    }
    return cost;
  }

  // Primal-dual admission of row i: true = admitted (its schedule promised).
  bool Admit(const PolicyInput& input, std::size_t i, std::int64_t now_slot) {
    const PolicyJob& job = input.jobs[i];
    if (!Plans(job)) {
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
    // The dynamic programme's steps (StepGrid): `group` consecutive slots each (one choice
    // for all of them), at most o_.steps steps, aligned to absolute multiples of `group`.
    const StepGrid grid = MakeStepGrid(slots, o_.steps, now_slot);
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
    if (o_.on_schedule) {  // for the observer only: the programme does not read it
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
        const double tput = Throughput(input, i, k, j);
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
        job_combos_.push_back(JobCombo{j, k, ComboIndex(j, k, job.cpus_per_gpu)});
      }
    }
    // Every step's cost for every combination (StepCosts), then the choices step by step.
    const std::size_t width = job_combos_.size();
    step_costs_.assign(static_cast<std::size_t>(steps) * width, 0.0);
    StepCosts(grid, job);
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
    if (o_.on_schedule) o_.on_schedule(job.id, problem, best);
    if (!best.feasible || !(best.payoff > 0.0)) return false;

    // Admitted: promise its resources, slot by slot (prices rise for the next jobs). A slot's
    // placement and the state it leads to are kept per (state, combination), so a run of equal
    // slots is placed once.
    JobState state;
    for (std::size_t step = 0; step < best.per_slot.size(); ++step) {
      const SlotChoice& c = best.per_slot[step];
      if (c.units == 0) continue;
      const auto type = static_cast<std::size_t>(c.type);
      const std::size_t combo = ComboIndex(type, c.workers, job.cpus_per_gpu);
      std::uint32_t last_id = kNone;      // the slot before, in this step: its state ...
      std::uint32_t last_placed = kNone;  // ... and its transition
      for (int t = grid.First(static_cast<int>(step)); t < grid.Last(static_cast<int>(step)); ++t) {
        const auto index = static_cast<std::size_t>(t);  // the timeline starts at now_slot
        if (timeline_.size() <= index) timeline_.resize(index + 1, 0);
        const std::uint32_t id = timeline_[index];
        std::optional<std::pair<double, PlanEntry>> fresh;
        std::span<const GpuPlacement> gpus;
        std::span<const CpuPlacement> cpus;
        std::uint32_t next = kNone;
        if (o_.reference_pricing) {
          fresh = ReferenceGreedy(Contents(id), job.cpus_per_gpu, type, c.workers);
          if (!fresh) continue;  // cannot happen: the same prices and room as when chosen
          gpus = fresh->second.gpus;
          cpus = fresh->second.cpus;
          next = Apply(id, gpus, cpus, +1);
        } else {
          const std::uint32_t placed =
              id == last_id ? last_placed : Transition(id, combo, type, c.workers, job.cpus_per_gpu);
          last_id = id;
          last_placed = placed;
          if (placed == kNone) continue;  // as above
          gpus = GpusOf(transitions_[placed]);
          cpus = CpusOf(transitions_[placed]);
          next = transitions_[placed].next;
        }
        timeline_[index] = next;  // its prices rose
        const std::int64_t abs_slot = now_slot + t;
        PlanRun* back = state.plan.empty() ? nullptr : &state.plan.back();
        if (back != nullptr && back->end == abs_slot && back->entry.type == c.type &&
            back->entry.workers == c.workers && std::ranges::equal(back->entry.gpus, gpus) &&
            std::ranges::equal(back->entry.cpus, cpus)) {
          ++back->end;
        } else {
          state.plan.push_back(PlanRun{abs_slot, abs_slot + 1,
                                       PlanEntry{c.type, c.workers, {gpus.begin(), gpus.end()}, {cpus.begin(), cpus.end()}}});
        }
      }
    }
    jobs_[job.id] = std::move(state);
    return true;
  }

  // step_costs_[step · width + c]: the cost of programme step `step` (slots
  // [grid.First(step), grid.Last(step)) of the horizon) for job_combos_[c], +inf where it does not
  // fit in some slot: the slots' greedy prices added in slot order from 0, as pricing every
  // slot afresh adds them (FreshStepCost), but read from the kept prices once per piece of
  // equal slots for all combinations; a step that is one piece like the step before it
  // (the unpromised tail of a horizon, a long run) repeats its costs.
  void StepCosts(const StepGrid& grid, const PolicyJob& job) {
    const int steps = grid.count;
    const std::size_t width = job_combos_.size();
    if (width == 0) return;
    if (o_.reference_pricing) {
      for (int step = 0; step < steps; ++step) {
        const int first = grid.First(step);
        const int last = grid.Last(step);
        for (std::size_t c = 0; c < width; ++c) {
          step_costs_[static_cast<std::size_t>(step) * width + c] =
              FreshStepCost(first, last, job_combos_[c].type, job_combos_[c].workers, job.cpus_per_gpu);
        }
      }
      return;
    }
    const bool cpu_limited = !servers_.empty() && servers_[0].cpus > 0.0 && o_.ps_cpus > 0.0;
    // The pieces first, each state's row of prices fetched ahead (the rows are scattered; a
    // piece costs little else).
    pieces_.clear();
    piece_begin_.assign(1, 0);
    for (int step = 0; step < steps; ++step) {
      const int last = grid.Last(step);
      for (int t = grid.First(step); t < last;) {
        const std::uint32_t id = StateAt(static_cast<std::size_t>(t));
        int end = t + 1;
        if (static_cast<std::size_t>(t) >= timeline_.size()) end = last;  // nothing promised on
        while (end < last && StateAt(static_cast<std::size_t>(end)) == id) ++end;
        __builtin_prefetch(state_prices_.Row(id) + job_combos_[0].combo);
        __builtin_prefetch(&state_epoch_[id]);
        pieces_.push_back(Piece{id, end - t});
        t = end;
      }
      piece_begin_.push_back(pieces_.size());
    }
    prices_of_piece_.resize(width);
    for (int step = 0; step < steps; ++step) {
      double* cost = &step_costs_[static_cast<std::size_t>(step) * width];
      const std::size_t begin = piece_begin_[static_cast<std::size_t>(step)];
      const std::size_t end = piece_begin_[static_cast<std::size_t>(step) + 1];
      if (step > 0 && end - begin == 1 && piece_begin_[static_cast<std::size_t>(step) - 1] + 1 == begin &&
          pieces_[begin].state == pieces_[begin - 1].state && pieces_[begin].slots == pieces_[begin - 1].slots) {
        std::copy(cost - width, cost, cost);  // one piece, like the step before
      } else {
        for (std::size_t p = begin; p < end; ++p) {
          const std::uint32_t id = pieces_[p].state;
          bool based = false;  // ps_base_ holds the state's candidates
          for (std::size_t c = 0; c < width; ++c) {
            // A combination that did not fit in an earlier slot of the step stays +inf (+inf +
            // 0); its later slots need no price.
            if (cost[c] == kInf) {
              prices_of_piece_[c] = 0.0;
              continue;
            }
            double& kept = PriceSlot(id, job_combos_[c].combo);
            if (std::isnan(kept)) {
              const SlotView use = Contents(id);
              if (!based && cpu_limited) PsCandidates(use, ps_base_);
              based = true;
              kept = Greedy(use, job.cpus_per_gpu, job_combos_[c].type, job_combos_[c].workers, nullptr,
                            cpu_limited ? &ps_base_ : nullptr);
            }
            prices_of_piece_[c] = kept;
          }
          for (int n = 0; n < pieces_[p].slots; ++n) {
            for (std::size_t c = 0; c < width; ++c) cost[c] += prices_of_piece_[c];
          }
        }
      }
      if (o_.check_pricing) {
        CheckStepCosts(step, grid.First(step), grid.Last(step), cost, job);
      }
    }
  }

  // check_pricing: every kept price of the step against ReferenceGreedy, and its costs
  // against FreshStepCost; the first difference is kept in pricing_mismatch_.
  void CheckStepCosts(int step, int first, int last, const double* cost, const PolicyJob& job) {
    for (std::size_t c = 0; c < job_combos_.size() && pricing_mismatch_.empty(); ++c) {
      const JobCombo& combo = job_combos_[c];
      for (int t = first; t < last; ++t) {
        const std::uint32_t id = StateAt(static_cast<std::size_t>(t));
        const auto greedy = ReferenceGreedy(Contents(id), job.cpus_per_gpu, combo.type, combo.workers);
        if ((greedy ? greedy->first : kInf) != Priced(id, combo.combo, combo.type, combo.workers, job.cpus_per_gpu)) {
          pricing_mismatch_ = "kept slot price differs from a fresh one (job " + std::to_string(job.id.value()) +
                              ", type " + std::to_string(combo.type) + ", " + std::to_string(combo.workers) +
                              " workers, horizon slot " + std::to_string(t) + ")";
          return;
        }
      }
      if (FreshStepCost(first, last, combo.type, combo.workers, job.cpus_per_gpu) != cost[c]) {
        pricing_mismatch_ = "kept step cost differs from a fresh sum (job " + std::to_string(job.id.value()) +
                            ", step " + std::to_string(step) + ")";
      }
    }
  }

  // Step cost by pricing every slot afresh (the computation before the kept prices).
  double FreshStepCost(int first, int last, std::size_t type, int k, double cpus_per_gpu) const {
    double cost = 0.0;
    for (int t = first; t < last && std::isfinite(cost); ++t) {
      const auto greedy = ReferenceGreedy(Contents(StateAt(static_cast<std::size_t>(t))), cpus_per_gpu, type, k);
      cost += greedy ? greedy->first : kInf;
    }
    return cost;
  }

  // Gives back the promises of the jobs that left, in the order they left, at most
  // o_.release_per_round of them (0: all).
  void ReleaseDeparted(std::int64_t now_slot) {
    std::size_t count = departed_.size();
    if (o_.release_per_round > 0) count = std::min(count, static_cast<std::size_t>(o_.release_per_round));
    for (std::size_t d = 0; d < count; ++d) {
      Release(departed_.front(), now_slot);
      departed_.pop_front();
    }
  }

  // Gives back a leaving job's promises after the current slot (whose GPUs are in use).
  void Release(const JobState& state, std::int64_t now_slot) {
    for (const PlanRun& run : state.plan) {
      std::uint32_t before = kNone;  // a run of equal slots: one subtraction
      std::uint32_t after = kNone;
      for (std::int64_t slot = std::max(run.first, std::max(now_slot + 1, timeline_base_)); slot < run.end; ++slot) {
        const auto index = static_cast<std::size_t>(slot - timeline_base_);
        if (index >= timeline_.size()) break;
        std::uint32_t& id = timeline_[index];
        if (id == 0) continue;  // nothing promised (cannot hold this plan)
        if (id != before) {
          before = id;
          after = Apply(id, run.entry.gpus, run.entry.cpus, -1);
        }
        id = after;  // its prices fell
      }
    }
  }

  // One (type, workers) an arriving job may run with, and its column in the price rows.
  struct JobCombo {
    std::size_t type = 0;
    int workers = 0;
    std::size_t combo = 0;
  };

  OasisOptions o_;
  std::vector<Server> servers_;
  std::vector<std::vector<std::size_t>> servers_of_type_;  // ascending
  // Promise states: the promised resources of a time slot, interned (Intern) so that slots
  // with equal promises share one id and one row of kept prices (by combination, valid for
  // the epoch they were computed at). A state is immutable: a promise or a release moves a
  // slot to another state, so prices change only where promises do. State 0 holds nothing.
  // Contents per state id in the arenas state_gpus_ and state_cpus_ (a value per server).
  std::vector<std::uint64_t> state_hash_;    // by state id
  std::vector<std::uint32_t> state_epoch_;   // the epoch of the state's row of kept prices
  // state_prices_.Row(id)[combo]: the kept greedy cost (+inf: does not fit; NaN: not priced
  // yet); rows of at least combos_.size().
  RowArena<double> state_prices_;
  RowArena<int> state_gpus_;                // by state id, per server: GPUs promised
  RowArena<double> state_cpus_;             // ... and cores
  std::vector<std::uint32_t> state_table_;  // the states by hash (open addressing; kNone: free)
  std::vector<int> scratch_gpus_;           // Intern's argument
  std::vector<double> scratch_cpus_;
  // Kept transitions (Transition), found by key in the open-addressing transition_table_;
  // their placements in the pools.
  std::vector<KeptTransition> transitions_;
  std::vector<std::uint32_t> transition_table_;
  std::vector<GpuPlacement> placed_gpus_;
  std::vector<CpuPlacement> placed_cpus_;
  PlanEntry scratch_entry_;  // Transition's
  std::size_t live_after_collect_ = 1;
  // timeline_[s − timeline_base_]: the state of slot s (past its end: state 0).
  std::vector<std::uint32_t> timeline_;
  std::int64_t timeline_base_ = 0;
  struct Piece {  // slots of a programme step in one state
    std::uint32_t state = 0;
    int slots = 0;
  };
  // Admit's working space: the arriving job's combinations, units per (combination, step),
  // costs per (step, combination), one piece's prices, and the pieces of the horizon's
  // steps: pieces_[piece_begin_[s] .. piece_begin_[s + 1]) are step s's, in slot order.
  std::vector<Piece> pieces_;
  std::vector<std::size_t> piece_begin_;
  std::vector<JobCombo> job_combos_;
  std::vector<int> step_units_;
  std::vector<double> step_costs_;
  std::vector<double> prices_of_piece_;
  std::map<JobId, JobState> jobs_;       // admitted jobs still active
  std::deque<JobState> departed_;        // admitted jobs gone, their promises not yet released
  double lower_ = kInf;                  // L (set by the first job with a utility)
  double upper_ = 0.0;                   // U
  std::uint32_t epoch_ = 1;              // bumped when L or U changes: every kept price is stale
  std::string pricing_mismatch_;         // check_pricing's first finding ("" = none)
  std::map<std::tuple<std::size_t, int, double>, std::size_t> combos_;  // columns of state_prices_
  std::vector<double> gpu_prices_;       // GpuPrice's table, for gpu_prices_epoch_
  std::vector<double> cpu_prices_;       // CpuPrice's, by quarter core, for the same epoch
  double cpu_prices_capacity_ = 0.0;     // ... at this capacity
  // Greedy's working space, kept to spare an allocation per call.
  mutable std::vector<std::pair<double, std::size_t>> scratch_by_price_;
  mutable std::vector<std::pair<double, std::size_t>> scratch_cpu_price_;
  mutable std::vector<double> scratch_cpu_room_;
  mutable std::vector<std::pair<std::size_t, double>> scratch_workers_room_;
  mutable std::vector<double> scratch_base_room_;
  std::vector<std::pair<double, std::size_t>> ps_base_;  // StepCosts': PsCandidates of a piece's state
  std::uint32_t gpu_prices_epoch_ = 0;
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

namespace {

// least[e] = candidate(e) and picked[e] = label where candidate(e) < least[e], for e < count:
// selects on doubles only (the labels are small integers, exact as doubles), no branch, so
// that it vectorises.
template <class Candidate>
void Improve(double* __restrict least, double* __restrict picked, std::size_t count, double label,
             Candidate candidate) {
  for (std::size_t e = 0; e < count; ++e) {
    const double value = candidate(e);
    const double old = least[e];
    const double better = value < old ? 1.0 : 0.0;
    least[e] = std::min(old, value);                        // value < old ? value : old
    picked[e] = picked[e] + (label - picked[e]) * better;  // exact: small integers
  }
}

}  // namespace

Schedule BestSchedule(const ScheduleProblem& problem) {
  const int slots = static_cast<int>(problem.choices.size());
  const int units = problem.units;
  Schedule best;
  if (units <= 0 || slots == 0) return best;
  const auto width = static_cast<std::size_t>(units + 1);
  // row[e]: least cost of e units done by the end of slot t (previous: by t − 1); done[t]:
  // row[units] of slot t; pick[t][e]: the choice made in slot t on that path (-1 = idle).
  // Choice by choice over all e (the same comparisons, in the same order per e, as choice by
  // choice per e), branch-free so that it vectorises; the buffers are reused across calls.
  thread_local std::vector<double> previous;
  thread_local std::vector<double> row;
  thread_local std::vector<double> done;
  thread_local std::vector<double> pick;  // labels as doubles, so that the selects vectorise
  previous.assign(width, kInf);
  previous[0] = 0.0;
  row.resize(width);
  done.resize(static_cast<std::size_t>(slots));
  pick.assign(static_cast<std::size_t>(slots) * width, -1);
  for (int t = 0; t < slots; ++t) {
    double* picked = &pick[static_cast<std::size_t>(t) * width];
    const auto& choices = problem.choices[static_cast<std::size_t>(t)];
    std::copy(previous.begin(), previous.end(), row.begin());
    double* least = row.data();
    const double* before = previous.data();
    for (std::size_t c = 0; c < choices.size(); ++c) {
      const auto label = static_cast<double>(c);
      const double cost = choices[c].cost;
      // e < units of the choice: from nothing done (index max(0, e − units) = 0).
      const auto shift = static_cast<std::size_t>(std::max(0, choices[c].units));
      const std::size_t split = std::min(shift, width);
      const double from_none = before[0] + cost;
      Improve(least, picked, split, label, [from_none](std::size_t) { return from_none; });
      Improve(least + split, picked + split, width - split, label,
              [from = before + split - shift, cost](std::size_t e) { return from[e] + cost; });
    }
    done[static_cast<std::size_t>(t)] = row[static_cast<std::size_t>(units)];
    std::swap(previous, row);
  }
  // Completion at the end of slot t needs E units by t; the utility decides which t is best.
  for (int t = 0; t < slots; ++t) {
    const double c = done[static_cast<std::size_t>(t)];
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
    const auto c = static_cast<int>(pick[static_cast<std::size_t>(t) * width + static_cast<std::size_t>(e)]);
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
