// Chooser: the round's choice of what runs. Per GPU type, a queue of the combinations that can
// run there, sorted by (priority, deficit, allocation) descending with ties in insertion
// order; the queues are visited in the round's type order (the user's, shuffled every round
// for the policies that do), and a greedy scan takes each combination that fits: enough GPUs
// of the type left, and no member already chosen or held. The choose-phase filters of the
// scorers (scorer.h) keep a combination off a type's queue.
//
// Bounded lag (ChooserOptions::lag_bound_restarts = K > 0): restarts cost time, so a
// combination that ran last round on a type keeps its place there while the waiting ones are
// owed little. Each combination has a bound B = K × its restart cost (the largest of its
// members'; JobDescription::restart_cost). The queue is then sorted first by class: "owed"
// (in the allocation on the type with a lag, ComboState::lag, above B), then "incumbent"
// (ran there last round with as many GPUs, and positive priority), then the rest; within a
// class as above, except that the owed go by how much they are owed: the lag, less B for one
// that did not run there last round. A waiting combination therefore displaces a running one
// only once it is owed more than B on the type, and more than B beyond the running one's lag
// when that one is owed too (an allocation the GPUs cannot realise, such as a gang's share of
// a type it cannot share, keeps some combinations owed for good: ranked by priority they
// swapped every round or one of them never ran again); a combination that can run is owed at
// most B plus one round's entitlement when it is chosen while the allocation can be realised
// (docs/architecture.md, "Bounded lag"). A combination
// whose restarts are free (B = 0) is owed as soon as it lags and is never an incumbent.
//
// Moves wait for the second pass. A combination that ran last round on another type (with as
// many GPUs) is skipped on this type in a first scan over the type order unless it runs faster
// here by enough to repay the restart within a round, or runs no slower here and is owed here
// and behind its allocation summed over all types (a move down to a slower type is never made
// in the first scan: the job leaves its faster GPUs only when outranked there); a second scan
// then fills what GPUs are left, movers included. Without it the type visited first takes any job whose place is
// elsewhere: under a shuffled type order (the heterogeneity-agnostic policies) or with an
// allocation spread over types the policy is indifferent between, a job's lag grows on every
// type it does not run on while it gets its whole share on one, and it hopped type every few
// rounds, a restart each (max_min_fairness spent 3-4 % of its busy GPU-time on them).
//
// Cost: the queue is visited lazily, in that order, until the type is full. Its candidates
// are the tracked combinations (a heap) and, for policies that run priority-0 combinations,
// the untracked ones: all of key (0, half or 0, 0), those that existed at the last reset
// before the younger ones in insertion order, so a cursor over the insertion order merges them
// in. Policies that skip priority 0 need only the allocation. SchedulerOptions::
// exhaustive_scans visits every combination instead (the tests' oracle).
//
// Who owns what: it owns the type shuffler (PyRandom(seed + 5), the original's), and the
// round's scratch (which jobs are taken, the gathered queue keys). It computes the priorities
// of the combinations in the allocation as it gathers them (TimeAccounting), and reads the
// rest of the table.
//
// Thread-safety: none; owned by one RoundScheduler and used on its thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "gavel/core/py_random.h"
#include "gavel/mechanism/job_table.h"
#include "gavel/mechanism/scorer.h"
#include "gavel/mechanism/time_accounting.h"

namespace gavel::mechanism {

struct ChooserOptions {
  std::uint64_t seed = 0;                // the simulation seed; the shuffler uses seed + 5
  bool shuffles_gpu_type_order = false;  // the policy's capability
  bool skips_zero_priority = false;      // the policy's capability (FIFO-like policies)
  bool exhaustive_scans = false;
  // The bounded lag's K (in restarts per bound); 0 = off (Gavel's queues).
  double lag_bound_restarts = 0.0;
};

// A combination chosen to run on a type this round.
struct Chosen {
  int slot;
  int type;
  int scale_factor;
};

class Chooser {
 public:
  // `filters`: the scorers whose choose-phase filter applies, in list order; they must
  // outlive the chooser.
  Chooser(JobTable& table, TimeAccounting& accounting, ChooserOptions options,
          std::vector<const Scorer*> filters);

  // The round's type order (advances the shuffler for policies that shuffle).
  std::vector<int> TypeOrder();
  // What runs this round. `allocated` lists the combinations in the allocation.
  std::vector<Chosen> Choose(std::span<const int> type_order, std::span<const int> allocated,
                             const ScoreContext& context);

 private:
  // Free GPUs per type during one choice, and the jobs already chosen or held (job_stamp_ ==
  // stamp_). Both only shrink, so a combination blocked once stays blocked.
  struct Capacity {
    std::vector<int> left;
    int total_left = 0;
  };
  Capacity BeginChoice();
  bool Blocked(const ComboState& c, const Capacity& capacity, std::size_t type) const;
  void Take(int slot, int type, Capacity& capacity, std::vector<Chosen>& chosen);
  // Positive throughput on the type (the first member's; the pairs' filter checks the
  // second's) and every filter admits it.
  bool Runs(const ComboState& c, std::size_t type, const ScoreContext& context) const;
  // The bounded lag's rank of c on `type`: its class (0 owed, 1 incumbent, 2 the rest; 2 when
  // off) and, among the owed, how much: its lag, less B unless it is the incumbent.
  struct LagRank {
    int lag_class = 2;
    double owed = 0.0;
    bool operator==(const LagRank&) const = default;
    // Visited after `other`: a later class, or owed less within class 0.
    bool After(const LagRank& other) const {
      if (lag_class != other.lag_class) return lag_class > other.lag_class;
      return owed < other.owed;
    }
  };
  // `restart` is c's CombinationRestartCost, computed once per candidate.
  LagRank RankOf(const ComboState& c, std::size_t type, double restart,
                 const ScoreContext& context) const;
  // Whether c, which ran last round on another type, waits for the second pass on `type`
  // (bounded lag only; see the header comment).
  // `rank` is RankOf(c, type, restart, context).
  bool Defers(const ComboState& c, std::size_t type, double restart, const LagRank& rank,
              const ScoreContext& context) const;
  // The scans over the type order: a second one for deferred moves under the bounded lag.
  int Passes() const { return options_.lag_bound_restarts > 0.0 ? 2 : 1; }
  std::vector<Chosen> ChooseExhaustive(std::span<const int> type_order,
                                       const ScoreContext& context);

  JobTable* table_;
  TimeAccounting* accounting_;
  ChooserOptions options_;
  std::vector<const Scorer*> filters_;
  PyRandom type_shuffler_;
  std::vector<std::uint32_t> job_stamp_;  // by record index: chosen in round (stamp)
  std::uint32_t stamp_ = 0;
  // The gathered candidates: a live combination of the pool, and its queue keys per type
  // (candidate_keys_[candidate × types + type]).
  struct Candidate {
    std::uint64_t seq;
    int slot;
    int scale_factor;
    bool pair;
    std::array<std::size_t, 2> member_index;
  };
  struct CandidateKey {
    LagRank rank;
    double priority;
    double deficit;
    double allocation;  // 0 outside the allocation
    bool runs;
    bool deferred;  // Defers: skipped in the first pass
  };
  std::vector<Candidate> candidates_;
  std::vector<CandidateKey> candidate_keys_;
};

}  // namespace gavel::mechanism
