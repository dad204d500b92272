// RestartCostScorer ("restart_cost"): prefers keeping a job where it ran. A job that ran last
// round on one GPU type is a candidate on another type only if moving gains more than the
// restart costs over its expected remaining time: with R steps left, rate a where it ran and
// b on the new type, only if R / b + restart < R / a. And keeping last round's GPUs is worth
// the restart it avoids (KeepScore), so it keeps them even without keep_gpus. The restart
// cost is the job's own (JobDescription::restart_cost: the simulator's restart overhead
// table under --restart-aware; 0 = free, and the scorer changes nothing). Pairs move freely.
// It trades the allocation's type shares for fewer restarts: a job held on a slower type
// gets less of the faster one than the policy asked for.
// Thread-safety: immutable.
#pragma once

#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

class RestartCostScorer final : public Scorer {
 public:
  std::string_view name() const override { return "restart_cost"; }
  bool filters_choice() const override { return true; }
  bool AdmitsChoice(const ComboState& c, int type, const ScoreContext& context) const override;
  double KeepScore(const ComboState& c, const ScoreContext& context) const override;
};

}  // namespace gavel::mechanism
