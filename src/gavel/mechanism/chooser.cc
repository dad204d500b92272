#include "gavel/mechanism/chooser.h"

#include <algorithm>

namespace gavel::mechanism {

Chooser::Chooser(JobTable& table, TimeAccounting& accounting, ChooserOptions options,
                 std::vector<const Scorer*> filters)
    : table_(&table),
      accounting_(&accounting),
      options_(options),
      filters_(std::move(filters)),
      type_shuffler_(options.seed + 5) {}

std::vector<int> Chooser::TypeOrder() {
  std::vector<int> order = table_->layout().preference_order();
  if (options_.shuffles_gpu_type_order) type_shuffler_.Shuffle(order);
  return order;
}

Chooser::Capacity Chooser::BeginChoice() {
  const ClusterLayout& layout = table_->layout();
  Capacity capacity;
  capacity.left.resize(static_cast<std::size_t>(layout.num_types()));
  for (int t = 0; t < layout.num_types(); ++t) {
    capacity.left[static_cast<std::size_t>(t)] = layout.gpu_count(t);
    capacity.total_left += layout.gpu_count(t);
  }
  job_stamp_.resize(table_->records().size(), 0);
  ++stamp_;
  for (const auto& [job, until] : table_->held()) job_stamp_[table_->Index(job)] = stamp_;
  return capacity;
}

bool Chooser::Blocked(const ComboState& c, const Capacity& capacity, std::size_t type) const {
  const auto taken = [&](std::size_t member) {
    return job_stamp_[c.member_index[member]] == stamp_;
  };
  return c.scale_factor > capacity.left[type] || taken(0) || (c.id.is_pair() && taken(1));
}

void Chooser::Take(int slot, int type, Capacity& capacity, std::vector<Chosen>& chosen) {
  const ComboState& c = table_->combo(slot);
  capacity.left[static_cast<std::size_t>(type)] -= c.scale_factor;
  capacity.total_left -= c.scale_factor;
  for (int i = 0; i < c.id.size(); ++i) {
    job_stamp_[c.member_index[static_cast<std::size_t>(i)]] = stamp_;
  }
  chosen.push_back(Chosen{slot, type, c.scale_factor});
}

bool Chooser::Runs(const ComboState& c, std::size_t type, const ScoreContext& context) const {
  if (c.tput_a[type] <= 0.0) return false;
  for (const Scorer* filter : filters_) {
    if (!filter->AdmitsChoice(c, static_cast<int>(type), context)) return false;
  }
  return true;
}

Chooser::LagRank Chooser::RankOf(const ComboState& c, std::size_t type, double restart,
                                 const ScoreContext& context) const {
  if (!(options_.lag_bound_restarts > 0.0) || c.priority[type] <= 0.0) return LagRank{2, 0.0};
  const double bound = options_.lag_bound_restarts * restart;
  const bool incumbent = c.RanBefore(context.round, static_cast<int>(type));
  // Free restarts (the daemon's jobs before a start-up was measured): B = 0, so such a
  // combination is owed as soon as it lags, and as an incumbent it holds nothing.
  if (c.lag[type] > bound) return LagRank{0, incumbent ? c.lag[type] : c.lag[type] - bound};
  if (!(restart > 0.0)) return LagRank{2, 0.0};
  return LagRank{incumbent ? 1 : 2, 0.0};
}

bool Chooser::Defers(const ComboState& c, std::size_t type, double restart, const LagRank& rank,
                     const ScoreContext& context) const {
  if (!(options_.lag_bound_restarts > 0.0)) return false;
  if (c.last_round < 0 || c.last_round != context.round - 1 ||
      static_cast<std::size_t>(c.last_type) == type ||
      static_cast<int>(c.last_workers.size()) != c.scale_factor) {
    return false;  // did not run last round, or ran here: not a move
  }
  if (!(restart > 0.0)) return false;
  // A move to a type where the combination runs faster by enough to repay the restart within
  // one round is made at once (heterogeneity-aware policies move jobs up this way).
  const double round = context.round_length.value();
  const auto from = static_cast<std::size_t>(c.last_type);
  const auto faster = [&](const std::vector<double>& tput) {
    return tput[type] * (round - restart) > tput[from] * round;
  };
  if (round > restart && faster(c.tput_a) && (!c.id.is_pair() || faster(c.tput_b))) {
    return false;
  }
  // Never in the first pass to a slower type: there it repays a lag at a loss of speed and
  // a restart, and moves up again once it is not owed there.
  if (c.tput_a[type] < c.tput_a[from] || (c.id.is_pair() && c.tput_b[type] < c.tput_b[from])) {
    return true;
  }
  // Otherwise a move pays off only when the combination is behind its allocation as a whole: a lag on
  // this type that time on another made up for (an allocation the policy split across types
  // it is indifferent between) is not worth a restart.
  const double bound = options_.lag_bound_restarts * restart;
  double owed = 0.0;
  for (double lag : c.lag) owed += lag;
  return !(rank.lag_class == 0 && owed > bound);
}

std::vector<Chosen> Chooser::Choose(std::span<const int> type_order, std::span<const int> allocated,
                                    const ScoreContext& context) {
  if (options_.exhaustive_scans) return ChooseExhaustive(type_order, context);
  struct Entry {
    LagRank rank;
    double priority;
    double deficit;
    double allocation;
    std::uint64_t seq;
    int slot;
  };
  Capacity capacity = BeginChoice();
  const bool skips_zero = options_.skips_zero_priority;
  // Every live combination in the allocation is in the pool: the allocation itself, or the
  // tracked ones (singles from admission, pairs once allocated).
  const std::span<const int> pool =
      skips_zero ? allocated : std::span<const int>(accounting_->tracked());
  const auto nt = static_cast<std::size_t>(table_->num_types());
  // One pass over the pool gathers every live candidate's queue keys for all types into flat
  // scratch: the per-type scans read that instead of each visiting the combinations'
  // scattered per-type vectors (a tenth of a saturated simulation otherwise).
  candidates_.clear();
  candidate_keys_.clear();
  for (int slot : pool) {
    ComboState& c = table_->combo(slot);
    if (!c.alive) continue;
    if (c.in_allocation) {
      accounting_->UpdateAllocatedPriority(c);
      accounting_->Entitle(c);
    }
    candidates_.push_back(Candidate{c.seq, slot, c.scale_factor, c.id.is_pair(), c.member_index});
    const double restart = CombinationRestartCost(*table_, c);
    for (std::size_t t = 0; t < nt; ++t) {
      const LagRank rank = RankOf(c, t, restart, context);
      candidate_keys_.push_back(CandidateKey{rank, c.priority[t], c.deficit[t],
                                             c.in_allocation ? c.allocation[t] : 0.0,
                                             Runs(c, t, context),
                                             Defers(c, t, restart, rank, context)});
    }
  }
  // Untracked combinations are candidates too unless priority 0 is skipped; the cursor over
  // the insertion order that finds them is skipped when every live one is tracked (always so
  // without pairs).
  const std::vector<int>& order = table_->order();
  const bool untracked_candidates = !skips_zero && candidates_.size() < table_->num_alive();
  std::vector<Chosen> chosen;
  std::vector<Entry> entries;
  entries.reserve(candidates_.size());
  const auto after = [](const Entry& a, const Entry& b) {
    if (a.rank != b.rank) return a.rank.After(b.rank);
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.deficit != b.deficit) return a.deficit < b.deficit;
    if (a.allocation != b.allocation) return a.allocation < b.allocation;
    return a.seq > b.seq;
  };
  for (int pass = 0; pass < Passes() && capacity.total_left > 0; ++pass) {
    for (int t : type_order) {
      const auto ut = static_cast<std::size_t>(t);
      const auto taken = [&](std::size_t index) { return job_stamp_[index] == stamp_; };
      entries.clear();
      for (std::size_t k = 0; k < candidates_.size(); ++k) {
        const Candidate& c = candidates_[k];
        const CandidateKey& key = candidate_keys_[k * nt + ut];
        // Blocked (as Blocked), cannot run here, or skipped at priority 0.
        if (c.scale_factor > capacity.left[ut] || taken(c.member_index[0]) ||
            (c.pair && taken(c.member_index[1]))) {
          continue;
        }
        if (!key.runs || (skips_zero && key.priority <= 0.0) || (pass == 0 && key.deferred)) {
          continue;
        }
        entries.push_back(
            Entry{key.rank, key.priority, key.deficit, key.allocation, c.seq, c.slot});
      }
      // A heap yields the order lazily: a full sort of n²/2 entries each round dominated whole
      // simulations (gandiva at 6 jobs/h: 891 s), while a round needs only the first few.
      std::make_heap(entries.begin(), entries.end(), after);
      auto unvisited = entries.end();
      std::size_t cursor = 0;  // in the insertion order: the next untracked candidate
      const auto next_untracked = [&]() -> const ComboState* {
        for (; untracked_candidates && cursor < order.size(); ++cursor) {
          const ComboState& c = table_->combo(order[cursor]);
          if (c.alive && !c.tracked && !Blocked(c, capacity, ut) && Runs(c, ut, context)) {
            return &c;
          }
        }
        return nullptr;
      };
      while (capacity.left[ut] > 0) {
        const ComboState* untracked = next_untracked();
        bool from_heap = unvisited != entries.begin();
        if (from_heap && untracked != nullptr) {
          const Entry candidate{
              LagRank{2, 0.0}, 0.0, accounting_->UntrackedDeficit(*untracked), 0.0,
              untracked->seq, -1};
          from_heap = !after(entries.front(), candidate);
        }
        int slot;
        if (from_heap) {
          std::pop_heap(entries.begin(), unvisited, after);
          --unvisited;
          slot = unvisited->slot;
        } else if (untracked != nullptr) {
          slot = order[cursor++];
        } else {
          break;
        }
        if (Blocked(table_->combo(slot), capacity, ut)) continue;
        Take(slot, t, capacity, chosen);
      }
      if (capacity.total_left == 0) break;
    }
  }
  return chosen;
}

// The plain scan: every live combination is a candidate on every type.
std::vector<Chosen> Chooser::ChooseExhaustive(std::span<const int> type_order,
                                              const ScoreContext& context) {
  struct Entry {
    LagRank rank;
    double priority;
    double deficit;
    double allocation;
    int position;  // in the insertion order
  };
  const std::vector<int>& order = table_->order();
  Capacity capacity = BeginChoice();
  std::vector<Chosen> chosen;
  std::vector<Entry> entries;
  entries.reserve(order.size());
  for (int pass = 0; pass < Passes() && capacity.total_left > 0; ++pass) {
    for (int t : type_order) {
      const auto ut = static_cast<std::size_t>(t);
      entries.clear();
      for (std::size_t pos = 0; pos < order.size(); ++pos) {
        const ComboState& c = table_->combo(order[pos]);
        if (!c.alive || Blocked(c, capacity, ut) || !Runs(c, ut, context)) continue;
        if (options_.skips_zero_priority && c.priority[ut] <= 0.0) continue;
        const double restart = CombinationRestartCost(*table_, c);
        const LagRank rank = RankOf(c, ut, restart, context);
        if (pass == 0 && Defers(c, ut, restart, rank, context)) continue;
        entries.push_back(Entry{rank, c.priority[ut], c.deficit[ut],
                                c.in_allocation ? c.allocation[ut] : 0.0, static_cast<int>(pos)});
      }
      // Visited in (lag rank, priority, deficit, allocation, position) order, a total order,
      // until the type is full.
      const auto after = [](const Entry& a, const Entry& b) {
        if (a.rank != b.rank) return a.rank.After(b.rank);
        if (a.priority != b.priority) return a.priority < b.priority;
        if (a.deficit != b.deficit) return a.deficit < b.deficit;
        if (a.allocation != b.allocation) return a.allocation < b.allocation;
        return a.position > b.position;
      };
      std::make_heap(entries.begin(), entries.end(), after);
      for (auto unvisited = entries.end(); unvisited != entries.begin() && capacity.left[ut] > 0;) {
        std::pop_heap(entries.begin(), unvisited, after);
        --unvisited;
        const int slot = order[static_cast<std::size_t>(unvisited->position)];
        if (Blocked(table_->combo(slot), capacity, ut)) continue;
        Take(slot, t, capacity, chosen);
      }
      if (capacity.total_left == 0) break;
    }
  }
  return chosen;
}

}  // namespace gavel::mechanism
