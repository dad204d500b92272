#include "gavel/policy/oasis_promises.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "gavel/policy/oasis_reference_pricing.h"

namespace gavel::policy::oasis {
namespace {

constexpr double kUnpriced = std::numeric_limits<double>::quiet_NaN();

std::size_t TransitionSlot(std::uint64_t key, std::size_t mask) {
  const std::uint64_t h = key * 0x9e3779b97f4a7c15ULL;
  return static_cast<std::size_t>(h ^ (h >> 32)) & mask;
}

}  // namespace

bool PromiseLedger::SetCluster(const PolicyInput& input) {
  std::vector<Server> servers;
  std::size_t total = 0;
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    const int per = std::max(1, j < input.gpus_per_server.size() ? input.gpus_per_server[j] : 1);
    total += static_cast<std::size_t>(std::ceil(input.gpu_counts[j] / per));
  }
  const double cpus =
      input.host_cpus > 0.0 && total > 0 ? input.host_cpus / static_cast<double>(total) : 0.0;
  for (std::size_t j = 0; j < input.num_types(); ++j) {
    const int per = std::max(1, j < input.gpus_per_server.size() ? input.gpus_per_server[j] : 1);
    for (int left = static_cast<int>(input.gpu_counts[j]); left > 0; left -= per) {
      servers.push_back(Server{static_cast<int>(j), std::min(per, left), cpus});
    }
  }
  if (!state_hash_.empty() && servers.size() == servers_.size() &&
      std::equal(servers.begin(), servers.end(), servers_.begin(),
                 [](const Server& a, const Server& b) {
                   return a.type == b.type && a.gpus == b.gpus && a.cpus == b.cpus;
                 })) {
    return false;
  }
  // The cluster changed: the promises refer to servers that may be gone; start afresh.
  servers_ = std::move(servers);
  servers_of_type_.assign(input.num_types(), {});
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    servers_of_type_[static_cast<std::size_t>(servers_[s].type)].push_back(s);
  }
  BoundsMoved();  // the tabled GPU prices are per server capacity
  ResetStates();
  return true;
}

void PromiseLedger::Observe(double density) {
  if (density > upper_ || density / 4.0 < lower_) BoundsMoved();
  upper_ = std::max(upper_, density);
  lower_ = std::min(lower_, density / 4.0);
  TableGpuPrices();
}

// The dense index of (type, workers, cores per GPU): its column in every state's row of
// kept prices (state_prices_), widened here when a new combination needs it.
std::size_t PromiseLedger::ComboIndex(std::size_t type, int k, double cpus_per_gpu) {
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
void PromiseLedger::BoundsMoved() {
  if (++epoch_ != 0) return;
  // The epoch wrapped around (after 2^32 moves): forget every kept price for certain.
  std::fill(state_epoch_.begin(), state_epoch_.end(), 0);
  for (KeptTransition& transition : transitions_) transition.epoch = 0;
  epoch_ = 1;
  gpu_prices_epoch_ = 0;
}

// Only the empty state (id 0, nothing promised), sized for servers_.
void PromiseLedger::ResetStates() {
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

std::uint64_t PromiseLedger::HashOfScratch() const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  const auto mix = [&h](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const int g : scratch_gpus_) mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(g)));
  // −0 and +0 compare equal, so they must hash alike.
  for (const double c : scratch_cpus_) mix(c == 0.0 ? 0 : std::bit_cast<std::uint64_t>(c));
  return h ^ (h >> 29);
}

bool PromiseLedger::ScratchEquals(std::uint32_t id) const {
  const SlotView view = Contents(id);
  return std::equal(scratch_gpus_.begin(), scratch_gpus_.end(), view.gpus) &&
         std::equal(scratch_cpus_.begin(), scratch_cpus_.end(), view.cpus);
}

// Places state `id` (hash `hash`) in the open-addressing table state_table_.
void PromiseLedger::Enter(std::uint32_t id, std::uint64_t hash) {
  const std::size_t mask = state_table_.size() - 1;
  std::size_t at = hash & mask;
  while (state_table_[at] != kNone) at = (at + 1) & mask;
  state_table_[at] = id;
}

// The id of the state whose contents are scratch_gpus_ / scratch_cpus_ (a new one when
// none has them).
std::uint32_t PromiseLedger::Intern() {
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

// Where state `id`'s kept price of `combo` lives (its row holds no price of another epoch).
double& PromiseLedger::PriceSlot(std::uint32_t id, std::size_t combo) {
  double* row = state_prices_.Row(id);
  if (state_epoch_[id] != epoch_) {
    std::fill(row, row + state_prices_.width(), kUnpriced);
    state_epoch_[id] = epoch_;
  }
  return row[combo];
}

// The greedy cost of combination `combo` = (type, k, cpus_per_gpu) in state `id` (+inf:
// does not fit), computed once per epoch.
double PromiseLedger::Priced(std::uint32_t id, std::size_t combo, std::size_t type, int k,
                             double cpus_per_gpu) {
  double& kept = PriceSlot(id, combo);
  if (std::isnan(kept)) kept = Greedy(Contents(id), cpus_per_gpu, type, k, nullptr);
  return kept;
}

// `state` with a placement added (sign +1) or taken away (−1), in the placement's order (the
// sums must equal slot-by-slot bookkeeping to the bit).
std::uint32_t PromiseLedger::Apply(std::uint32_t id, std::span<const GpuPlacement> gpus,
                                   std::span<const CpuPlacement> cpus, int sign) {
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

std::span<const GpuPlacement> PromiseLedger::GpusOf(const KeptTransition& t) const {
  return {placed_gpus_.data() + t.gpus_begin, t.gpus_count};
}

std::span<const CpuPlacement> PromiseLedger::CpusOf(const KeptTransition& t) const {
  return {placed_cpus_.data() + t.cpus_begin, t.cpus_count};
}

// The index in transitions_ of `key` (kNone: none kept).
std::uint32_t PromiseLedger::FindTransition(std::uint64_t key) const {
  const std::size_t mask = transition_table_.size() - 1;
  for (std::size_t at = TransitionSlot(key, mask); transition_table_[at] != kNone;
       at = (at + 1) & mask) {
    if (transitions_[transition_table_[at]].key == key) return transition_table_[at];
  }
  return kNone;
}

void PromiseLedger::PlaceTransition(std::uint32_t index) {
  const std::size_t mask = transition_table_.size() - 1;
  std::size_t at = TransitionSlot(transitions_[index].key, mask);
  while (transition_table_[at] != kNone) at = (at + 1) & mask;
  transition_table_[at] = index;
}

// Every transition in a table at most half full.
void PromiseLedger::RebuildTransitionTable() {
  std::size_t size = 1024;
  while (2 * transitions_.size() > size) size *= 2;
  transition_table_.assign(size, kNone);
  for (std::uint32_t t = 0; t < transitions_.size(); ++t) PlaceTransition(t);
}

// Enters the new last transitions_[index] in the open-addressing table.
void PromiseLedger::EnterTransition(std::uint32_t index) {
  if (2 * transitions_.size() > transition_table_.size()) {
    RebuildTransitionTable();
  } else {
    PlaceTransition(index);
  }
}

// The placement of `combo` in state `id` and the state it leads to, kept (an index in
// transitions_; kNone: does not fit).
std::uint32_t PromiseLedger::Transition(std::uint32_t id, std::size_t combo, std::size_t type,
                                        int k, double cpus_per_gpu) {
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
  if (transition.next == kNone)
    transition.next = Apply(id, GpusOf(transition), CpusOf(transition), +1);
  return index;
}

// Drops the states no slot holds any more (their kept prices with them) once they outnumber
// the live ones, so that a long run's memory stays bounded; ids are renumbered.
void PromiseLedger::Collect() {
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
    const auto move_row = [&](auto& arena) {
      std::copy_n(arena.Row(id), arena.width(), arena.Row(kept));
    };
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
void PromiseLedger::AdvanceTo(std::int64_t now_slot) {
  if (now_slot > timeline_base_) {
    const auto past = static_cast<std::uint64_t>(now_slot - timeline_base_);
    timeline_.erase(timeline_.begin(),
                    timeline_.begin() + static_cast<std::ptrdiff_t>(
                                            std::min<std::uint64_t>(past, timeline_.size())));
  } else if (now_slot < timeline_base_ && !timeline_.empty()) {  // a caller whose clock went back
    timeline_.insert(timeline_.begin(), static_cast<std::size_t>(timeline_base_ - now_slot), 0);
  }
  timeline_base_ = now_slot;
}

// Price(used, capacity) for a server's whole GPUs, tabled per (capacity, used) while the
// bounds stay (the same expression, so the same bits): the greedy's pow per server.
double PromiseLedger::GpuPrice(int used, int capacity) const {
  const auto cap = static_cast<std::size_t>(capacity);
  return gpu_prices_[cap * (cap + 1) / 2 + static_cast<std::size_t>(used)];
}

void PromiseLedger::TableGpuPrices() {
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
double PromiseLedger::CpuPrice(double used, double capacity) const {
  if (capacity == cpu_prices_capacity_) {
    const double quarters = used * 4.0;
    if (quarters >= 0.0 && quarters < static_cast<double>(cpu_prices_.size()) &&
        quarters == std::floor(quarters)) {
      return cpu_prices_[static_cast<std::size_t>(quarters)];
    }
  }
  return Price(used, capacity);
}

// A parameter server's price per core on server `s` with `room` cores free.
double PromiseLedger::PsPrice(std::size_t s, double room) const {
  const double used_cpu = servers_[s].cpus - room;
  return CpuPrice(used_cpu, servers_[s].cpus) * servers_[s].gpus / servers_[s].cpus;
}

// (price per core, server) of every server with room for a parameter server, by `room`
// (cores free per server), in server order.
void PromiseLedger::PsCandidates(const std::vector<double>& room,
                                 std::vector<std::pair<double, std::size_t>>& out) const {
  out.clear();
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    if (room[s] >= o_.ps.cpus) out.emplace_back(PsPrice(s, room[s]), s);
  }
}

// The same for a state's own room (before a job's workers are placed), for Greedy's ps_base.
void PromiseLedger::PsCandidates(SlotView use,
                                 std::vector<std::pair<double, std::size_t>>& out) const {
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
double PromiseLedger::Greedy(SlotView use, double cpus_per_gpu, std::size_t type, int k,
                             PlanEntry* entry,
                             const std::vector<std::pair<double, std::size_t>>* ps_base) const {
  const bool cpu_limited = !servers_.empty() && servers_[0].cpus > 0.0;
  const bool cores_per_worker = cpu_limited && cpus_per_gpu > 0.0;
  if (type >= servers_of_type_.size()) return kInf;  // no server of the type
  auto& by_price = scratch_by_price_;                // (price per worker, server)
  by_price.clear();
  for (const std::size_t s : servers_of_type_[type]) {
    const Server& server = servers_[s];
    const int used = use.gpus[s];
    if (used >= server.gpus) continue;
    double price = GpuPrice(used, server.gpus);
    if (cpu_limited)
      price += cpus_per_gpu * CpuPrice(use.cpus[s], server.cpus) * server.gpus / server.cpus;
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
  const int ps = o_.ps.For(k);
  if (cpu_limited && ps > 0 && o_.ps.cpus > 0.0) {
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
        if (room >= o_.ps.cpus) cpu_price.emplace_back(PsPrice(s, room), s);
      }
    } else {
      PsCandidates(cpu_room, cpu_price);
    }
    int ps_left = ps;
    for (auto next = cpu_price.begin(); ps_left > 0 && next != cpu_price.end(); ++next) {
      std::iter_swap(next, std::min_element(next, cpu_price.end()));
      const auto [price, s] = *next;
      while (ps_left > 0 && cpu_room[s] >= o_.ps.cpus) {
        cpu_room[s] -= o_.ps.cpus;
        cost += price * o_.ps.cpus;
        if (entry != nullptr) entry->cpus.emplace_back(s, o_.ps.cpus);
        --ps_left;
      }
    }
    if (ps_left > 0) return kInf;
  }
  return cost;
}

// costs[step · width + c]: the cost of programme step `step` (slots
// [grid.First(step), grid.Last(step)) of the horizon) for combos[c], +inf where it does not
// fit in some slot: the slots' greedy prices added in slot order from 0, as pricing every
// slot afresh adds them (FreshStepCost), but read from the kept prices once per piece of
// equal slots for all combinations; a step that is one piece like the step before it
// (the unpromised tail of a horizon, a long run) repeats its costs.
void PromiseLedger::StepCosts(const StepGrid& grid, std::span<const JobCombo> combos,
                              double cpus_per_gpu, JobId job, std::vector<double>& costs) {
  const int steps = grid.count;
  const std::size_t width = combos.size();
  if (width == 0) return;
  if (o_.pricing == PricingMode::kReference) {
    for (int step = 0; step < steps; ++step) {
      const int first = grid.First(step);
      const int last = grid.Last(step);
      for (std::size_t c = 0; c < width; ++c) {
        costs[static_cast<std::size_t>(step) * width + c] =
            FreshStepCost(first, last, combos[c].type, combos[c].workers, cpus_per_gpu);
      }
    }
    return;
  }
  const bool cpu_limited = !servers_.empty() && servers_[0].cpus > 0.0 && o_.ps.cpus > 0.0;
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
      __builtin_prefetch(state_prices_.Row(id) + combos[0].combo);
      __builtin_prefetch(&state_epoch_[id]);
      pieces_.push_back(Piece{id, end - t});
      t = end;
    }
    piece_begin_.push_back(pieces_.size());
  }
  prices_of_piece_.resize(width);
  for (int step = 0; step < steps; ++step) {
    double* cost = &costs[static_cast<std::size_t>(step) * width];
    const std::size_t begin = piece_begin_[static_cast<std::size_t>(step)];
    const std::size_t end = piece_begin_[static_cast<std::size_t>(step) + 1];
    if (step > 0 && end - begin == 1 &&
        piece_begin_[static_cast<std::size_t>(step) - 1] + 1 == begin &&
        pieces_[begin].state == pieces_[begin - 1].state &&
        pieces_[begin].slots == pieces_[begin - 1].slots) {
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
          double& kept = PriceSlot(id, combos[c].combo);
          if (std::isnan(kept)) {
            const SlotView use = Contents(id);
            if (!based && cpu_limited) PsCandidates(use, ps_base_);
            based = true;
            kept = Greedy(use, cpus_per_gpu, combos[c].type, combos[c].workers, nullptr,
                          cpu_limited ? &ps_base_ : nullptr);
          }
          prices_of_piece_[c] = kept;
        }
        for (int n = 0; n < pieces_[p].slots; ++n) {
          for (std::size_t c = 0; c < width; ++c) cost[c] += prices_of_piece_[c];
        }
      }
    }
    if (o_.pricing == PricingMode::kChecked) {
      CheckStepCosts(step, grid.First(step), grid.Last(step), cost, combos, cpus_per_gpu, job);
    }
  }
}

// kChecked: every kept price of the step against ReferenceGreedy, and its costs
// against FreshStepCost; the first difference is kept in pricing_mismatch_.
void PromiseLedger::CheckStepCosts(int step, int first, int last, const double* cost,
                                   std::span<const JobCombo> combos, double cpus_per_gpu,
                                   JobId job) {
  for (std::size_t c = 0; c < combos.size() && pricing_mismatch_.empty(); ++c) {
    const JobCombo& combo = combos[c];
    for (int t = first; t < last; ++t) {
      const std::uint32_t id = StateAt(static_cast<std::size_t>(t));
      const auto greedy = Oracle(Contents(id), cpus_per_gpu, combo.type, combo.workers);
      if ((greedy ? greedy->first : kInf) !=
          Priced(id, combo.combo, combo.type, combo.workers, cpus_per_gpu)) {
        pricing_mismatch_ = "kept slot price differs from a fresh one (job " +
                            std::to_string(job.value()) + ", type " + std::to_string(combo.type) +
                            ", " + std::to_string(combo.workers) + " workers, horizon slot " +
                            std::to_string(t) + ")";
        return;
      }
    }
    if (FreshStepCost(first, last, combo.type, combo.workers, cpus_per_gpu) != cost[c]) {
      pricing_mismatch_ = "kept step cost differs from a fresh sum (job " +
                          std::to_string(job.value()) + ", step " + std::to_string(step) + ")";
    }
  }
}

// Step cost by pricing every slot afresh (the computation before the kept prices).
double PromiseLedger::FreshStepCost(int first, int last, std::size_t type, int k,
                                    double cpus_per_gpu) const {
  double cost = 0.0;
  for (int t = first; t < last && std::isfinite(cost); ++t) {
    const auto greedy =
        Oracle(Contents(StateAt(static_cast<std::size_t>(t))), cpus_per_gpu, type, k);
    cost += greedy ? greedy->first : kInf;
  }
  return cost;
}

// A slot's placement and the state it leads to are kept per (state, combination), so a run of
// equal slots is placed once.
std::vector<PlanRun> PromiseLedger::Promise(const Schedule& best, const StepGrid& grid,
                                            double cpus_per_gpu, std::int64_t now_slot) {
  std::vector<PlanRun> plan;
  for (std::size_t step = 0; step < best.per_slot.size(); ++step) {
    const SlotChoice& c = best.per_slot[step];
    if (c.units == 0) continue;
    const auto type = static_cast<std::size_t>(c.type);
    const std::size_t combo = ComboIndex(type, c.workers, cpus_per_gpu);
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
      if (o_.pricing == PricingMode::kReference) {
        fresh = Oracle(Contents(id), cpus_per_gpu, type, c.workers);
        if (!fresh) continue;  // cannot happen: the same prices and room as when chosen
        gpus = fresh->second.gpus;
        cpus = fresh->second.cpus;
        next = Apply(id, gpus, cpus, +1);
      } else {
        const std::uint32_t placed =
            id == last_id ? last_placed : Transition(id, combo, type, c.workers, cpus_per_gpu);
        last_id = id;
        last_placed = placed;
        if (placed == kNone) continue;  // as above
        gpus = GpusOf(transitions_[placed]);
        cpus = CpusOf(transitions_[placed]);
        next = transitions_[placed].next;
      }
      timeline_[index] = next;  // its prices rose
      const std::int64_t abs_slot = now_slot + t;
      PlanRun* back = plan.empty() ? nullptr : &plan.back();
      if (back != nullptr && back->end == abs_slot && back->entry.type == c.type &&
          back->entry.workers == c.workers && std::ranges::equal(back->entry.gpus, gpus) &&
          std::ranges::equal(back->entry.cpus, cpus)) {
        ++back->end;
      } else {
        plan.push_back(PlanRun{
            abs_slot, abs_slot + 1,
            PlanEntry{c.type, c.workers, {gpus.begin(), gpus.end()}, {cpus.begin(), cpus.end()}}});
      }
    }
  }
  return plan;
}

std::optional<std::pair<double, PlanEntry>> PromiseLedger::Oracle(SlotView use, double cpus_per_gpu,
                                                                  std::size_t type, int k) const {
  return ReferenceGreedy(servers_, PriceCurve{lower_, upper_}, o_.ps, use, cpus_per_gpu, type, k);
}

// Gives back a leaving job's promises after the current slot (whose GPUs are in use).
void PromiseLedger::Release(const std::vector<PlanRun>& plan, std::int64_t now_slot) {
  for (const PlanRun& run : plan) {
    std::uint32_t before = kNone;  // a run of equal slots: one subtraction
    std::uint32_t after = kNone;
    for (std::int64_t slot = std::max(run.first, std::max(now_slot + 1, timeline_base_));
         slot < run.end; ++slot) {
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

}  // namespace gavel::policy::oasis
