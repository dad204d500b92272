// The list of scorers (scorer.h) the realisation phases use, and the options that select
// them. One list, in one place: a new preference is one scorer file and one line in
// MakeScorers, with no edit to the chooser, the placer or the coordinator.
// Thread-safety: the list is immutable once made.
#pragma once

#include <memory>
#include <vector>

#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

struct RealisationOptions {
  // Fresh GPUs by topology (host resources, one server, one rack) instead of consolidation.
  bool topology_aware_placement = false;
  bool space_sharing = false;  // the policy space-shares (pairs exist)
  // Keep a combination on last round's GPUs where they are all free (the original's rule).
  bool keep_last_gpus = true;
  // Weigh each job's restart cost (JobDescription::restart_cost) against moving it.
  bool restart_costs = false;
  // Bounded lag (chooser.h): a job that ran last round keeps its place until a waiting one is
  // owed more than this many of its restart costs; 0 = off (Gavel's queues).
  double lag_bound_restarts = 0.0;
};

// The bounded lag's K where restarts cost something (the simulator's physics, `gavel serve`'s
// measured start-ups) and the policy leaves the choice of what runs to the mechanism: a
// waiting job displaces a running one once it is owed more than 200 restarts' worth of time
// (4,000-7,000 s with the simulator's shipped restart overheads), so a swap costs at most
// 0.5 % of the time it makes up (docs/architecture.md, "Bounded lag").
inline constexpr double kDefaultLagBoundRestarts = 200.0;

using ScorerList = std::vector<std::unique_ptr<const Scorer>>;

// The scorers `options` select, in the order the phases consult them.
ScorerList MakeScorers(const RealisationOptions& options);

// The list's scorers that filter the choice, and all of them (for the placer), as the
// phases take them.
std::vector<const Scorer*> ChoiceFilters(const ScorerList& scorers);
std::vector<const Scorer*> AllScorers(const ScorerList& scorers);

}  // namespace gavel::mechanism
