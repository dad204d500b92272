// Dominant resource fairness (Ghodsi et al., NSDI'11; docs/policies.md, "DRF") over the GPU
// types and, where the cluster's host resources are given, host CPU cores and memory. Each job
// is a user with one gang "task": its whole demand (scale_factor GPUs, spread over the types it
// can run on in proportion to their sizes, and scale_factor × cpus_per_gpu / mem_gb_per_gpu).
// Progressive filling raises every job's time share x_i (weighted by priority_weight) so that
// dominant shares stay equal, freezing the jobs that use a saturated resource or reach x = 1.
// X[i][j] = x_i × c_j / Σ_{types job i can run on} c. Stateless; pure.
#pragma once

#include <memory>
#include <vector>

#include "gavel/policy/policy.h"

namespace gavel::policy {

// Progressive filling (the DRF paper's §4, continuous): `demands[u][r]` per task of user u,
// `capacity[r]`, `max_tasks[u]` (may be infinity), `weights[u]` > 0. Returns each user's
// (fractional) tasks: dominant shares divided by weights are equal among users not frozen,
// and a user freezes when a resource it uses is saturated or it reaches max_tasks. Users with
// no demand get max_tasks when finite, else 0.
std::vector<double> ProgressiveFilling(const std::vector<std::vector<double>>& demands,
                                       const std::vector<double>& capacity,
                                       const std::vector<double>& max_tasks,
                                       const std::vector<double>& weights);

std::unique_ptr<Policy> MakeDrf(const PolicyOptions& options);

}  // namespace gavel::policy
