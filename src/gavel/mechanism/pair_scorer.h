// PairScorer ("space_sharing_pairs"): a space-sharing pair is a candidate on a GPU type only
// where both members progress at their co-located rates (the chooser itself checks the first
// member, as it does for a single). Registered for the policies that space-share. It trades
// nothing the allocation wants: a pair with a member at rate 0 would hold GPUs for one job at
// a co-located job's speed.
// Thread-safety: immutable.
#pragma once

#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

class PairScorer final : public Scorer {
 public:
  std::string_view name() const override { return "space_sharing_pairs"; }
  bool filters_choice() const override { return true; }
  bool AdmitsChoice(const ComboState& c, int type,
                    const ScoreContext& /*context*/) const override {
    return !c.id.is_pair() || c.tput_b[static_cast<std::size_t>(type)] > 0.0;
  }
};

}  // namespace gavel::mechanism
