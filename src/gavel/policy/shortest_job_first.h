// Shortest job first, preemptive (shortest remaining time first): jobs ordered by estimated
// remaining time take whole GPUs until none fits. agnostic: time estimated at the job's mean
// throughput over the cluster's GPUs, each job on the type with the most free GPUs; perf: time estimated on
// the job's fastest type and each job placed on its fastest fitting type. Stateless.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"
#include "gavel/policy/variant.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeShortestJobFirst(Variant variant, const PolicyOptions& options);

}  // namespace gavel::policy
