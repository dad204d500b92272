// The YARN capacity scheduler as the Tiresias and Gandiva papers run it as their baseline
// (docs/policies.md, "YARN capacity scheduler"): one queue, jobs in arrival order, no
// preemption. Every job that ran last round (PolicyJob::running_type, from the mechanism)
// keeps its GPU type; then waiting jobs in arrival order take whole GPUs of one type until
// the head of the queue fits nowhere (head-of-line blocking: nobody behind it starts).
// Heterogeneity-agnostic type choice (queue_discipline.h). Stateless: what runs is the
// mechanism's fact, so a restarted daemon keeps its running jobs too.
#pragma once

#include <memory>

#include "gavel/policy/policy.h"

namespace gavel::policy {

std::unique_ptr<Policy> MakeYarnCapacity(const PolicyOptions& options);

}  // namespace gavel::policy
