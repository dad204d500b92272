// Internal to gavel_sim: the fluid ("ideal", `--ideal`) simulation, a mode the original offers
// too. Instead of rounds, the policy's allocation is applied exactly between events: job j
// progresses at
//   r_j = Σ_t X[j][t]·T[j][t] + Σ_{pairs p ∋ j} Σ_t X[p][t]·T_p,j[t]   steps/s,
// the allocation is recomputed at every arrival and completion, and a job completes at the
// exact time its remaining steps run out. This is what the round mechanism approximates; the
// original's version of this mode crashes at the commit studied, so there is no
// compat variant: rounds, leases and placement do not exist here.
#pragma once

#include "gavel/core/status.h"
#include "gavel/sim/setup.h"
#include "gavel/sim/simulator.h"

namespace gavel::sim::internal {

Result<SimulationResult> SimulateIdeal(const SimulationOptions& options, RunSetup setup);

}  // namespace gavel::sim::internal
