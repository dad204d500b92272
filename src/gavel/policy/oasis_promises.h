// OASiS's promise ledger: what every future slot of the cluster has promised to admitted jobs,
// and the price of running more there. Each server has a price per resource (its GPUs; its CPU
// cores where the cluster limits them) and slot on the curve of oasis_plan.h, between the
// bounds L and U the admission sets (Observe).
//
// A slot's promises are interned as a promise state (equal promises, one state) that keeps its
// greedy prices per (type, workers, cores per GPU) while the bounds stay; a promise or a
// release moves the slot to another state. Pricing an arrival's programme walks its horizon as
// pieces of equal states and mostly reads kept prices. Every price, step cost and placement is
// bit-identical to pricing every slot afresh with ReferenceGreedy (oasis_reference_pricing.h),
// which PricingMode::kReference uses instead and kChecked compares against (docs/policies.md
// "oasis", "Pricing cost").
//
// Owns the servers, the states, their kept prices and transitions, and the timeline of slots;
// the admitted jobs' plans belong to the caller, which hands them back to Release.
// Single-threaded (one per Oasis policy).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/policy/oasis_plan.h"
#include "gavel/policy/oasis_schedule.h"
#include "gavel/policy/policy_input.h"

namespace gavel::policy::oasis {

// How step costs are priced: kept prices (the product), every slot afresh with
// ReferenceGreedy (the oracle), or kept prices checked against the oracle in every bit (a
// difference fails the round: PromiseLedger::mismatch).
enum class PricingMode { kKept, kReference, kChecked };

struct LedgerOptions {
  ParameterServers ps;
  PricingMode pricing = PricingMode::kKept;
  // States are collected from this many on (at 4 per live one), so that a long run's memory
  // stays bounded.
  std::size_t collect_states_at = std::size_t{1} << 14;
};

// One (type, workers) an arriving job may run with, and its column in the kept prices
// (PromiseLedger::ComboIndex).
struct JobCombo {
  std::size_t type = 0;
  int workers = 0;
  std::size_t combo = 0;
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
  T* Row(std::size_t id) {
    return blocks_[id / kRowsPerBlock].get() + (id % kRowsPerBlock) * width_;
  }
  const T* Row(std::size_t id) const {
    return blocks_[id / kRowsPerBlock].get() + (id % kRowsPerBlock) * width_;
  }
  // A new last row, its values unset.
  T* Append() {
    if (rows_ % kRowsPerBlock == 0)
      blocks_.push_back(std::make_unique_for_overwrite<T[]>(kRowsPerBlock * width_));
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

class PromiseLedger {
 public:
  explicit PromiseLedger(LedgerOptions options) : o_(options) {}

  // The servers of `input`'s cluster (host_cpus shared evenly among them). True when they
  // differ from the last call's (or on the first): every promise is then dropped, and the
  // caller's plans refer to nothing.
  bool SetCluster(const PolicyInput& input);
  // The timeline starts at `now_slot`: earlier slots are forgotten.
  void AdvanceTo(std::int64_t now_slot);
  // Drops the states no slot holds any more once they outnumber the live ones.
  void Collect();
  // Widens [L, U] to cover a job whose best use of one GPU for one slot is worth `density`
  // (U = the most seen, L = a quarter of the least); every kept price is stale if they move.
  void Observe(double density);

  // The dense index of (type, workers, cores per GPU): its column in every state's kept prices.
  std::size_t ComboIndex(std::size_t type, int k, double cpus_per_gpu);
  // costs[step · combos.size() + c] (zeroed by the caller): the cost of `grid`'s step for
  // combos[c] at the current promises, +inf where it does not fit in some slot; the slots'
  // prices added in slot order. `job` names the job in a mismatch.
  void StepCosts(const StepGrid& grid, std::span<const JobCombo> combos, double cpus_per_gpu,
                 JobId job, std::vector<double>& costs);
  // Promises `best`'s choices (steps of `grid`, from `now_slot`), slot by slot (prices rise
  // for the next jobs), and returns the plan, by absolute slot.
  std::vector<PlanRun> Promise(const Schedule& best, const StepGrid& grid, double cpus_per_gpu,
                               std::int64_t now_slot);
  // Gives back a departed job's promises after `now_slot` (whose GPUs are in use).
  void Release(const std::vector<PlanRun>& plan, std::int64_t now_slot);

  // kChecked: the first kept price found to differ from the oracle ("" = none).
  const std::string& mismatch() const { return pricing_mismatch_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffU;
  // What promising one (state, combination) makes, kept once needed (Transition): the
  // greedy's placement, as ranges of the placement pools, and the state it leads to. Plain
  // data, so that keeping and dropping tens of thousands costs no allocation.
  struct KeptTransition {
    std::uint64_t key = 0;         // state id << 32 | combination
    std::uint32_t epoch = 0;       // stale (recomputed on use) when it is not the current epoch
    std::uint32_t next = kNone;    // the state with the placement added (kNone: not interned yet)
    bool fits = false;             // false: no placement (the combination does not fit)
    std::uint32_t gpus_begin = 0;  // placed_gpus_[gpus_begin, + gpus_count)
    std::uint32_t gpus_count = 0;
    std::uint32_t cpus_begin = 0;  // placed_cpus_[cpus_begin, + cpus_count)
    std::uint32_t cpus_count = 0;
  };
  struct Piece {  // slots of a programme step in one state
    std::uint32_t state = 0;
    int slots = 0;
  };

  double Price(double used, double capacity) const {
    return PriceCurve{lower_, upper_}(used, capacity);
  }
  void BoundsMoved();
  void ResetStates();
  SlotView Contents(std::uint32_t id) const {
    return SlotView{state_gpus_.Row(id), state_cpus_.Row(id)};
  }
  std::uint64_t HashOfScratch() const;
  bool ScratchEquals(std::uint32_t id) const;
  void Enter(std::uint32_t id, std::uint64_t hash);
  std::uint32_t Intern();
  std::uint32_t StateAt(std::size_t index) const {
    return index < timeline_.size() ? timeline_[index] : 0;
  }
  double& PriceSlot(std::uint32_t id, std::size_t combo);
  double Priced(std::uint32_t id, std::size_t combo, std::size_t type, int k, double cpus_per_gpu);
  std::uint32_t Apply(std::uint32_t id, std::span<const GpuPlacement> gpus,
                      std::span<const CpuPlacement> cpus, int sign);
  std::span<const GpuPlacement> GpusOf(const KeptTransition& t) const;
  std::span<const CpuPlacement> CpusOf(const KeptTransition& t) const;
  std::uint32_t FindTransition(std::uint64_t key) const;
  void PlaceTransition(std::uint32_t index);
  void RebuildTransitionTable();
  void EnterTransition(std::uint32_t index);
  std::uint32_t Transition(std::uint32_t id, std::size_t combo, std::size_t type, int k,
                           double cpus_per_gpu);
  double GpuPrice(int used, int capacity) const;
  void TableGpuPrices();
  double CpuPrice(double used, double capacity) const;
  double PsPrice(std::size_t s, double room) const;
  void PsCandidates(const std::vector<double>& room,
                    std::vector<std::pair<double, std::size_t>>& out) const;
  void PsCandidates(SlotView use, std::vector<std::pair<double, std::size_t>>& out) const;
  double Greedy(SlotView use, double cpus_per_gpu, std::size_t type, int k, PlanEntry* entry,
                const std::vector<std::pair<double, std::size_t>>* ps_base = nullptr) const;
  void CheckStepCosts(int step, int first, int last, const double* cost,
                      std::span<const JobCombo> combos, double cpus_per_gpu, JobId job);
  double FreshStepCost(int first, int last, std::size_t type, int k, double cpus_per_gpu) const;
  // ReferenceGreedy on this ledger's servers, bounds and parameter servers.
  std::optional<std::pair<double, PlanEntry>> Oracle(SlotView use, double cpus_per_gpu,
                                                     std::size_t type, int k) const;

  LedgerOptions o_;
  std::vector<Server> servers_;
  std::vector<std::vector<std::size_t>> servers_of_type_;  // ascending
  // Promise states: the promised resources of a time slot, interned (Intern) so that slots
  // with equal promises share one id and one row of kept prices (by combination, valid for
  // the epoch they were computed at). A state is immutable: a promise or a release moves a
  // slot to another state, so prices change only where promises do. State 0 holds nothing.
  // Contents per state id in the arenas state_gpus_ and state_cpus_ (a value per server).
  std::vector<std::uint64_t> state_hash_;   // by state id
  std::vector<std::uint32_t> state_epoch_;  // the epoch of the state's row of kept prices
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
  // StepCosts' working space: one piece's prices, and the pieces of the horizon's steps:
  // pieces_[piece_begin_[s] .. piece_begin_[s + 1]) are step s's, in slot order.
  std::vector<Piece> pieces_;
  std::vector<std::size_t> piece_begin_;
  std::vector<double> prices_of_piece_;
  double lower_ = kInf;           // L (set by the first Observe)
  double upper_ = 0.0;            // U
  std::uint32_t epoch_ = 1;       // bumped when L or U changes: every kept price is stale
  std::string pricing_mismatch_;  // kChecked's first finding ("" = none)
  std::map<std::tuple<std::size_t, int, double>, std::size_t> combos_;  // columns of state_prices_
  std::vector<double> gpu_prices_;    // GpuPrice's table, for gpu_prices_epoch_
  std::vector<double> cpu_prices_;    // CpuPrice's, by quarter core, for the same epoch
  double cpu_prices_capacity_ = 0.0;  // ... at this capacity
  // Greedy's working space, kept to spare an allocation per call.
  mutable std::vector<std::pair<double, std::size_t>> scratch_by_price_;
  mutable std::vector<std::pair<double, std::size_t>> scratch_cpu_price_;
  mutable std::vector<double> scratch_cpu_room_;
  mutable std::vector<std::pair<std::size_t, double>> scratch_workers_room_;
  mutable std::vector<double> scratch_base_room_;
  std::vector<std::pair<double, std::size_t>>
      ps_base_;  // StepCosts': PsCandidates of a piece's state
  std::uint32_t gpu_prices_epoch_ = 0;
};

}  // namespace gavel::policy::oasis
