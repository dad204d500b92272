// Gandiva with its introspective mechanisms (Xiao et al., OSDI'18; docs/policies.md
// "gandiva_introspective"), on the round mechanism:
//   * time slicing: when jobs want more GPUs than the cluster has, the jobs that have waited
//     longest since their last run take the GPUs each round; the others are suspended at the
//     round boundary and resumed when their turn comes (round-robin with a round quantum);
//   * packing by introspection: a job that found no GPU is packed onto a GPU running a job of
//     the same size; after the pair has run once its measured throughputs are compared with
//     the members' alone, and a pair whose normalised throughput (Σ packed / alone) is below
//     `keep` is unpacked and never tried again;
//   * grow-shrink: when GPUs are left over, elastic jobs grow (one worker at a time, while
//     that raises their throughput) up to their maximum; when the cluster is oversubscribed
//     they shrink to their minimum;
//   * migration: a job keeps the GPU type it ran on while it still fits there; otherwise it
//     moves to the type with the most free GPUs, and the round mechanism re-consolidates its
//     GPUs (its placement keeps a job's GPUs when they are still free and otherwise fills
//     servers in order, which is Gandiva's defragmenting migration at round granularity).
// Stateful (the pairs it measured); single-threaded like every Policy.
#pragma once

#include <memory>

#include "gavel/core/status.h"
#include "gavel/policy/policy.h"

namespace gavel::policy {

struct GandivaIntrospectiveOptions {
  double keep = 1.0;  // least normalised throughput of a pair worth keeping
};

Result<std::unique_ptr<Policy>> MakeGandivaIntrospective(const PolicyOptions& options);
std::unique_ptr<Policy> MakeGandivaIntrospectiveWithDefaults(const PolicyOptions& options);

}  // namespace gavel::policy
