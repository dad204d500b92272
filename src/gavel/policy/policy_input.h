// PolicyInput: the immutable problem a policy allocates for, built once per allocation
// from a snapshot (or by the round scheduler from its job table). Rows are jobs sorted by
// id, columns are GPU types sorted by name: X[i][j] is the fraction of wall-clock time job i
// should spend on type j. Plain data; thread-compatible; policies only read it.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/matrix.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/core/units.h"
#include "gavel/core/utility.h"

namespace gavel::policy {

struct PolicyJob {
  JobId id;
  int scale_factor = 1;           // s_i: GPUs needed at once
  double priority_weight = 1.0;   // w_i
  double steps_remaining = 0.0;   // 0 when unknown (only for policies that do not plan with it)
  Seconds time_since_start{0.0};  // now − arrival
  std::optional<Seconds> slo_time_left;  // deadline − now
  int entity = -1;                // index into PolicyInput::entities; -1 = none
  // Themis' app (a group of jobs such as one hyper-parameter search); jobs with the same
  // non-negative value form one app, -1 = the job is an app on its own.
  int app = -1;
  // What the round mechanism knows about the job's history (the queue-discipline policies
  // read it; 0 / -1 where the caller does not know, e.g. `gavel allocate` and the fluid mode):
  double attained_gpu_seconds = 0.0;  // GPUs × seconds run so far, over all types
  int running_type = -1;              // GPU type it ran on in the last round; -1 = not running
  // Its time share on each type in the allocation the mechanism realises now; empty where it
  // has none (a new job, `gavel allocate`). Policies that prefer to stay put read it.
  std::vector<double> current_allocation;
  Seconds waiting{0.0};               // now − the end of its last run (− arrival if never ran)
  double cpus_per_gpu = 0.0;          // host demands per GPU (0 = none)
  double mem_gb_per_gpu = 0.0;
  // Elastic jobs (core/elastic.h): the range of worker counts it may run at, and its
  // throughput at each count, row k − min_workers, one column per GPU type (0 where the type
  // has fewer GPUs). Fixed-size jobs: min = max = scale_factor and no rows. scale_factor is
  // the count it runs at now (its declared one unless a policy resized it).
  int min_workers = 1;
  int max_workers = 1;
  Matrix throughput_by_workers;
  bool elastic() const { return max_workers > min_workers; }
  // Throughput at `workers` on type `type` (the job's whole throughput for elastic jobs; the
  // caller passes input.throughput for its current count otherwise).
  double ElasticThroughput(int workers, std::size_t type) const {
    return throughput_by_workers(static_cast<std::size_t>(workers - min_workers), type);
  }
  // Utility of the job as a function of its completion time (core/utility.h), if it has one.
  std::optional<UtilityFunction> utility;
};

// Two jobs that may share the same GPU(s) (space sharing). `first < second` (job indices).
struct JobPair {
  int first = 0;
  int second = 0;
};

struct PolicyInput {
  std::vector<std::string> gpu_types;  // sorted; every type has at least one GPU
  std::vector<double> gpu_counts;      // c_j
  std::vector<int> gpus_per_server;    // per type
  std::vector<PolicyJob> jobs;         // sorted by id
  // T[i][j]: steps/s of job i alone on type j (whole job, all its GPUs). 0 = cannot run there,
  // also when the job needs more GPUs than the type has.
  Matrix throughput;
  // Space-sharing candidates (packing policies only), sorted by (first, second): every two
  // jobs of equal scale factor whose co-located throughputs are known and not all zero.
  std::vector<JobPair> pairs;
  Matrix pair_throughput_first;   // pairs × types: steps/s of pair.first while sharing
  Matrix pair_throughput_second;  // pairs × types: steps/s of pair.second while sharing
  std::vector<std::string> entities;   // sorted
  std::vector<double> entity_weights;  // parallel to entities (1.0 where not given)
  std::vector<double> instance_costs;  // $/GPU-hour per type; empty when not given
  // The cluster's host CPU cores and memory in total (every server's); 0 = not limited.
  double host_cpus = 0.0;
  double host_mem_gb = 0.0;
  // Seconds since the start of the run (the round mechanism's clock; 0 where unknown). Only
  // policies that plan in absolute time slots (oasis) read it.
  double now_seconds = 0.0;

  std::size_t num_jobs() const { return jobs.size(); }
  std::size_t num_types() const { return gpu_types.size(); }
  // Index of `gpu_type` in gpu_types, or -1.
  int TypeIndex(const std::string& gpu_type) const;
};

struct InputRequirements {
  bool pairs = false;                // build space-sharing pairs
  bool keep_unusable_pairs = false;  // keep pairs whose co-located throughputs are all zero
  bool steps_remaining = false;      // every job must give steps_remaining
  bool instance_costs = false;       // every GPU type must have a price
};

// How AddSpaceSharingPairs judges the candidates.
struct PairOptions {
  bool keep_unusable = false;  // keep pairs whose co-located throughputs are all zero
  // Set a pair's throughputs to 0 on every type with fewer GPUs than its scale factor, after
  // the usability test (a pair usable only there is kept, with zeros, as the round scheduler
  // always has).
  bool zero_oversized = false;
};

// Fills input.pairs and the pair matrices from input.jobs and input.gpu_counts: every two jobs
// a < b of equal scale factor, in order, for which `colocated(a, b, per_type)` fills
// `per_type[j]` (a std::span<std::array<double, 2>>, one entry per GPU type) with the two
// members' co-located steps/s and returns true; false means the pair is unknown (left out).
template <class Colocated>
void AddSpaceSharingPairs(PolicyInput& input, const PairOptions& options,
                          const Colocated& colocated) {
  const std::size_t m = input.num_jobs();
  const std::size_t n = input.num_types();
  std::vector<std::array<double, 2>> per_type(n);
  std::vector<double> first;
  std::vector<double> second;
  input.pairs.clear();
  for (std::size_t a = 0; a < m; ++a) {
    for (std::size_t b = a + 1; b < m; ++b) {
      const int scale_factor = input.jobs[a].scale_factor;
      if (input.jobs[b].scale_factor != scale_factor) continue;
      per_type.assign(n, {0.0, 0.0});  // a callback that skips a type leaves 0, not the last pair's
      if (!colocated(a, b, std::span<std::array<double, 2>>(per_type))) continue;
      bool usable = false;
      for (const std::array<double, 2>& t : per_type) usable = usable || t[0] > 0.0 || t[1] > 0.0;
      if (!usable && !options.keep_unusable) continue;
      input.pairs.push_back(JobPair{static_cast<int>(a), static_cast<int>(b)});
      for (std::size_t j = 0; j < n; ++j) {
        const bool oversized =
            options.zero_oversized && scale_factor > static_cast<int>(input.gpu_counts[j]);
        first.push_back(oversized ? 0.0 : per_type[j][0]);
        second.push_back(oversized ? 0.0 : per_type[j][1]);
      }
    }
  }
  input.pair_throughput_first = Matrix(input.pairs.size(), n);
  input.pair_throughput_second = Matrix(input.pairs.size(), n);
  input.pair_throughput_first.data() = std::move(first);
  input.pair_throughput_second.data() = std::move(second);
}

// The index in input.pairs of the pair of jobs a and b (either order), or nullopt when they
// are no candidate pair. Relies on input.pairs being sorted by (first, second) with
// first < second, as AddSpaceSharingPairs builds them: a binary search, no index to build.
std::optional<std::size_t> PairIndexOf(const PolicyInput& input, std::size_t a, std::size_t b);

// Builds the problem from a snapshot. `table` supplies throughputs for jobs that name a
// job_type (it may be null when every job gives its own throughputs). Errors name the job
// and field: an unknown job type, a missing required value.
Result<PolicyInput> BuildPolicyInput(const ClusterSnapshot& snapshot, const ThroughputTable* table,
                                     const InputRequirements& requirements);

}  // namespace gavel::policy
