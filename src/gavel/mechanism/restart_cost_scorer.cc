#include "gavel/mechanism/restart_cost_scorer.h"

namespace gavel::mechanism {

bool RestartCostScorer::AdmitsChoice(const ComboState& c, int type,
                                     const ScoreContext& context) const {
  if (c.id.is_pair() || c.last_round < 0 || c.last_round != context.round - 1 ||
      c.last_type == type) {
    return true;
  }
  const JobRecord& record = context.table.records()[c.member_index[0]];
  const double restart = record.restart_cost.value();
  const double stay_rate = c.tput_a[static_cast<std::size_t>(c.last_type)];
  const double move_rate = c.tput_a[static_cast<std::size_t>(type)];
  if (!(restart > 0.0) || !(stay_rate > 0.0) || !(move_rate > 0.0)) return true;
  const double remaining = record.total_steps - record.steps_run;
  return remaining / move_rate + restart < remaining / stay_rate;
}

double RestartCostScorer::KeepScore(const ComboState& c, const ScoreContext& context) const {
  return CombinationRestartCost(context.table, c);
}

}  // namespace gavel::mechanism
