// Placer: puts the round's chosen combinations on GPUs. Per type in the round's type order,
// largest first (ties in choice order); within each size, first those whose scorers prefer
// keeping last round's GPUs (all still free), then the rest on fresh GPUs, picked by the
// picking scorer (consolidation, or topology with host resources: scorer.h). A combination
// the picker cannot fit waits this round.
//
// Who owns what: it owns the pool of free GPUs and host resources (placement.h), reset at
// every round (its memory kept across rounds, its contents not), and marks the combinations it placed (ComboState::
// placed_round). The scorers are the list's (scorers.h) and outlive it.
//
// Thread-safety: none; owned by one RoundScheduler and used on its thread.
#pragma once

#include <span>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/mechanism/chooser.h"
#include "gavel/mechanism/job_table.h"
#include "gavel/mechanism/placement.h"
#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

struct PlacerOptions {
  // Compat::unallocated_stay_idle: combinations not in the allocation are never placed afresh.
  bool unallocated_stay_idle = false;
};

// A chosen combination with its GPUs.
struct Placed {
  int slot;
  int type;
  std::vector<WorkerId> workers;
};

class Placer {
 public:
  // `scorers`: every scorer of the list, in its order; exactly one of them picks.
  Placer(JobTable& table, PlacerOptions options, std::vector<const Scorer*> scorers);

  std::vector<Placed> Place(std::span<const int> type_order, std::span<const Chosen> chosen,
                            const ScoreContext& context);

 private:
  JobTable* table_;
  PlacerOptions options_;
  std::vector<const Scorer*> scorers_;
  const Scorer* picker_;
  ResourcePool pool_;  // the round's free GPUs; reset by every Place
};

}  // namespace gavel::mechanism
