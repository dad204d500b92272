// The reference pricing of OASiS's subroutine, as first written: the cheapest `k` workers of a
// GPU type (each a GPU plus its CPU cores) and the job's parameter servers in one slot, found
// greedily by price with every server priced by the curve and all of them sorted. Slow and
// plain on purpose: it is the oracle the ledger's kept prices (oasis_promises.h) are checked
// against, bit for bit, and the pricing a test may select instead of them (oasis_testing.h).
//
// A pure function; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <utility>

#include "gavel/policy/oasis_plan.h"

namespace gavel::policy::oasis {

// The cost and placement of `k` workers of `type` with `cpus_per_gpu` cores each, plus
// ps.For(k) parameter servers of ps.cpus cores (on CPU-limited clusters: those whose servers
// have cpus > 0), on `servers` holding `use`, at `price`; nullopt when they do not fit. Ties in
// price go to the lower server index.
std::optional<std::pair<double, PlanEntry>> ReferenceGreedy(std::span<const Server> servers,
                                                            const PriceCurve& price,
                                                            const ParameterServers& ps,
                                                            SlotView use, double cpus_per_gpu,
                                                            std::size_t type, int k);

}  // namespace gavel::policy::oasis
