// KeepGpusScorer ("keep_gpus"): a combination that ran last round on a type and runs there
// again keeps its GPUs when they are all still free: its lease is extended, with no restart
// (no checkpoint, no reload). It trades placement quality for continuity: a job kept where it
// was may stay spread over servers that have since freed up.
// Thread-safety: immutable.
#pragma once

#include "gavel/mechanism/scorer.h"

namespace gavel::mechanism {

class KeepGpusScorer final : public Scorer {
 public:
  std::string_view name() const override { return "keep_gpus"; }
  double KeepScore(const ComboState& /*c*/, const ScoreContext& /*context*/) const override {
    return 1.0;
  }
};

}  // namespace gavel::mechanism
