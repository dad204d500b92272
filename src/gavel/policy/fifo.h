// FIFO (docs/policies.md): jobs in id (arrival) order take whole GPUs of one type until none fits
// (head-of-line blocking). agnostic: a random fitting type, sticky across calls; perf: the
// fastest fitting type, recomputed each call; packed: perf, then queued jobs share a GPU
// with a running job when the pair's normalised throughput exceeds 1.5. Stateful (agnostic
// mode's sticky assignments and random generator, seeded from PolicyOptions::seed).
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeFifo(Variant variant, const PolicyOptions& options);

}  // namespace gavel::policy
