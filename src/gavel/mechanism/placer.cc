#include "gavel/mechanism/placer.h"

#include <algorithm>

namespace gavel::mechanism {

Placer::Placer(JobTable& table, PlacerOptions options, std::vector<const Scorer*> scorers)
    : table_(&table),
      options_(options),
      scorers_(std::move(scorers)),
      picker_(nullptr),
      pool_(table.layout()) {
  for (const Scorer* scorer : scorers_) {
    if (picker_ == nullptr && scorer->picks()) picker_ = scorer;
  }
  GAVEL_CHECK_MSG(picker_ != nullptr, "the scorer list has no scorer that picks GPUs");
}

std::vector<Placed> Placer::Place(std::span<const int> type_order,
                                  std::span<const Chosen> chosen, const ScoreContext& context) {
  const std::int64_t round = context.round;
  ResourcePool& pool = pool_;
  pool.Reset(table_->layout());
  std::vector<Placed> placed;
  std::vector<Chosen> list;
  const auto keep_score = [&](const ComboState& c) {
    double score = 0.0;
    for (const Scorer* scorer : scorers_) score += scorer->KeepScore(c, context);
    return score;
  };
  for (int t : type_order) {
    list.clear();
    for (const Chosen& c : chosen) {
      if (c.type == t) list.push_back(c);
    }
    std::stable_sort(list.begin(), list.end(), [](const Chosen& a, const Chosen& b) {
      return a.scale_factor > b.scale_factor;
    });
    for (std::size_t begin = 0; begin < list.size();) {
      std::size_t end = begin;
      while (end < list.size() && list[end].scale_factor == list[begin].scale_factor) ++end;
      // Those that keep last round's GPUs first, so that fresh placements go around them.
      for (std::size_t k = begin; k < end; ++k) {
        ComboState& c = table_->combo(list[k].slot);
        if (!c.RanBefore(round, t) || !(keep_score(c) > 0.0)) continue;
        if (!pool.TryTake(c.last_workers, picker_->Demand(c, context))) continue;
        c.placed_round = round;
        placed.push_back(Placed{list[k].slot, t, c.last_workers});
      }
      for (std::size_t k = begin; k < end; ++k) {
        ComboState& c = table_->combo(list[k].slot);
        if (c.placed_round == round) continue;
        // The original silently leaves jobs that are not in the allocation unplaced.
        if (options_.unallocated_stay_idle && !c.in_allocation) continue;
        std::optional<std::vector<WorkerId>> workers =
            picker_->PickGpus(c, t, picker_->Demand(c, context), pool);
        if (!workers) continue;
        c.placed_round = round;
        placed.push_back(Placed{list[k].slot, t, std::move(*workers)});
      }
      begin = end;
    }
  }
  return placed;
}

}  // namespace gavel::mechanism
