// Scorer: one named preference of the phases that realise an allocation — choosing what runs
// this round and placing it on GPUs — in the way the Kubernetes scheduling framework composes
// Filter and Score plugins. The allocation stays the one language between every scheduler and
// the mechanism (the chooser's queues order combinations by the priorities it implies); what
// varies is how it is realised, and each way is a scorer, registered in one list (scorers.h).
//
// A scorer implements the extension points it cares about; the others keep their defaults:
//   Filter (choose)  AdmitsChoice: may this combination run on this GPU type this round?
//                    The chooser skips it on that type's queue when any filter says no.
//   Score (place)    KeepScore: how much keeping a combination on last round's GPUs (all
//                    still free, same type, same count) is worth over a fresh placement; the
//                    placer keeps them when the scorers' sum is positive.
//   Pick (place)     PickGpus: where a combination placed afresh goes. The first scorer in
//                    the list that answers decides; Demand says what it needs of the hosts.
// docs/architecture.md lists the scorers and what each trades.
//
// Thread-safety: scorers are immutable after construction; the phases call them on the
// scheduler's thread with a context that lives for the call.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/job_table.h"
#include "gavel/mechanism/placement.h"

namespace gavel::mechanism {

// What a scorer may read of the round being planned.
struct ScoreContext {
  const JobTable& table;
  std::int64_t round = 0;  // the round being planned (the previous one is round - 1)
  Seconds round_length{0.0};
};

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;

  // Filter. Whether the chooser calls this scorer at all (a round asks once per candidate and
  // type of every filtering scorer).
  virtual bool filters_choice() const { return false; }
  virtual bool AdmitsChoice(const ComboState& /*c*/, int /*type*/,
                            const ScoreContext& /*context*/) const {
    return true;
  }

  // Score: the worth of keeping `c` on last round's GPUs.
  virtual double KeepScore(const ComboState& /*c*/, const ScoreContext& /*context*/) const {
    return 0.0;
  }

  // Pick: fresh GPUs of layout type `type` for `c`, taken from `pool`; nullopt from a scorer
  // that does not pick, or (from one that does) when the combination does not fit this round
  // and waits.
  virtual bool picks() const { return false; }
  virtual WorkerDemand Demand(const ComboState& /*c*/, const ScoreContext& /*context*/) const {
    return {};
  }
  virtual std::optional<std::vector<WorkerId>> PickGpus(const ComboState& /*c*/, int /*type*/,
                                                        const WorkerDemand& /*demand*/,
                                                        ResourcePool& /*pool*/) const {
    return std::nullopt;
  }
};

}  // namespace gavel::mechanism
