#include "gavel/mechanism/scorers.h"

#include "gavel/mechanism/consolidation_scorer.h"
#include "gavel/mechanism/keep_gpus_scorer.h"
#include "gavel/mechanism/pair_scorer.h"
#include "gavel/mechanism/restart_cost_scorer.h"
#include "gavel/mechanism/topology_scorer.h"

namespace gavel::mechanism {

ScorerList MakeScorers(const RealisationOptions& options) {
  ScorerList list;
  if (options.keep_last_gpus) list.push_back(std::make_unique<KeepGpusScorer>());
  if (options.space_sharing) list.push_back(std::make_unique<PairScorer>());
  if (options.topology_aware_placement) list.push_back(std::make_unique<TopologyScorer>());
  list.push_back(std::make_unique<ConsolidationScorer>());  // picks unless topology did
  if (options.restart_costs) list.push_back(std::make_unique<RestartCostScorer>());
  return list;
}

std::vector<const Scorer*> ChoiceFilters(const ScorerList& scorers) {
  std::vector<const Scorer*> filters;
  for (const auto& scorer : scorers) {
    if (scorer->filters_choice()) filters.push_back(scorer.get());
  }
  return filters;
}

std::vector<const Scorer*> AllScorers(const ScorerList& scorers) {
  std::vector<const Scorer*> all;
  for (const auto& scorer : scorers) all.push_back(scorer.get());
  return all;
}

}  // namespace gavel::mechanism
