// Builds a policy's problem (policy::PolicyInput) straight from the scheduler's job table,
// without going through a snapshot: jobs sorted by id, GPU types sorted by name, isolated
// throughputs from the throughput table and, for packing policies, every two jobs of equal
// scale factor as a space-sharing pair with its co-located throughputs (docs/policies.md).
// Shared by the round scheduler and the simulator's fluid ("ideal") mode. Free functions;
// thread-safe.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "gavel/core/colocated_matrix.h"
#include "gavel/core/elastic.h"
#include "gavel/core/ids.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/mechanism/cluster_layout.h"
#include "gavel/policy/policy_input.h"

namespace gavel::mechanism {

// What the builder needs to know about one active job.
struct ActiveJobInfo {
  JobId id;
  int table_key = -1;  // index into ThroughputTable::job_types()
  int scale_factor = 1;
  double priority_weight = 1.0;
  double steps_remaining = 0.0;
  Seconds arrival{0.0};
  std::optional<Seconds> deadline;  // absolute; none = no SLO
  // Isolated steps/s on each layout type where the caller knows better than the table (e.g.
  // online estimates); empty = the table's.
  std::span<const double> throughputs;
  // Never a space-sharing pair member (elastic jobs: a pair needs one fixed count).
  bool unpairable = false;
};

struct PolicyInputOptions {
  bool pairs = false;  // packing policies
  // Keep pairs that cannot share a GPU anywhere (all co-located throughputs 0). The original
  // hands every same-scale-factor pair to the policy (--compat gavel); by default they are
  // left out, which changes nothing but the problem size.
  bool keep_unusable_pairs = false;
  // A job that needs more GPUs than a type has gets throughput 0 there (it can never be
  // placed there). The original keeps the table's value (--compat gavel: off).
  bool zero_oversized = true;
  std::vector<double> instance_costs;  // $/GPU-hour per type (layout order); empty = none
  // Co-located steps/s of jobs[a] and jobs[b] (a < b) on each layout type where the caller
  // knows better than the table (the throughput estimator's estimates); null = the table's.
  std::function<std::vector<std::array<double, 2>>(std::size_t a, std::size_t b)> colocated;
  // The table's co-located throughputs, dense (the same values without a hash lookup per pair
  // and type); null = read the table. Built for the same table types as the builder is given,
  // with every pairable job's key added. Unused when `colocated` is set.
  const ColocatedMatrix* colocated_table = nullptr;
};

// Throughput-table GPU type index for each layout type; an error names a type the table lacks.
Result<std::vector<int>> TableTypesOf(const ClusterLayout& layout, const ThroughputTable& table);

// Isolated steps/s of the job-type key on each layout type (0 where the table has none).
std::vector<double> IsolatedThroughputs(const ThroughputTable& table,
                                        const std::vector<int>& table_types, int table_key);

// {steps/s of a, steps/s of b} while the job-type keys a and b share a GPU of each layout
// type; {0, 0} where the table has no entry. From a dense table built for the layout's types,
// with both keys added: a view of its row (no copy; valid until the next key is added).
std::span<const std::array<double, 2>> ColocatedThroughputs(
    const ColocatedMatrix& colocated_table, int key_a, int key_b);

// An elastic job's isolated steps/s at every worker count of its range: row k − min_workers,
// one entry per layout type (core/elastic.h: its own curve scaled from the declared count's
// throughput, or the table's entries of the same model at other scale factors, per type).
// Oversized counts are not zeroed here (the caller knows the layout).
std::vector<std::vector<double>> ElasticThroughputs(const ThroughputTable& table,
                                                    const std::vector<int>& table_types,
                                                    int table_key, const ElasticSpec& spec);

// `jobs` must be sorted by id. Times are measured at `now`.
policy::PolicyInput BuildPolicyInputForJobs(const ClusterLayout& layout,
                                            const ThroughputTable& table,
                                            const std::vector<int>& table_types,
                                            std::span<const ActiveJobInfo> jobs, Seconds now,
                                            const PolicyInputOptions& options);

}  // namespace gavel::mechanism
