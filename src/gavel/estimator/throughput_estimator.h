// ThroughputEstimator: Gavel's estimate of how fast two jobs run while sharing one GPU, for a
// cluster that has not measured every pair (docs/estimator.md; the original's
// scheduler/throughput_estimator.py).
//
//   Offline, K reference job types are profiled fully: their normalised co-located throughput
//   N[i][t·n + k] = (steps/s of i next to k on GPU type t) / (steps/s of i alone on t).
//   When a job arrives, it is profiled against each reference type on each GPU type with
//   probability P (a coin per entry); the unmeasured entries of its row are filled in by
//   low-rank matrix completion over [reference rows; its row] (matrix_completion.h), and the
//   job is matched to the reference type whose row is closest in cosine distance. Until a
//   pair has run, the estimate for jobs a, b on type t is
//       { N[ref a][t, ref b] · alone_a(t),  N[ref b][t, ref a] · alone_b(t) }
//   (isolated throughputs are always the table's). RecordMeasurement replaces a pair's
//   estimate on a type by what was measured.
//
// Two behaviours (EstimatorOptions::compat_gavel; docs/differences.md):
//   compat   the original's: single-GPU jobs only (the 26 (model, 1) types; a multi-GPU job
//            is an error); float32 normalised values; the reference choice and the coins from
//            Python's random.Random(seed + 4) and the completion's start from numpy's global
//            generator seeded with `seed`, consumed job after job; the quirk that a profiled
//            entry is read at column t·|R| + j of the job's full row instead of the column of
//            reference j; a job whose completed row is zero (or whose completion fails) gets a
//            random reference type; ties and NaN distances ordered as Python's sort does.
//   default  one family of types per scale factor (K reference types in each, or all of them
//            when the family is smaller), so multi-GPU jobs are estimated too; the profiled
//            entry is the one of the reference it was measured against; only the cluster's
//            GPU types are profiled (options.profiled_gpu_types), the others completed; every
//            job draws its coins and its completion start from its own generator (seeded by
//            the run seed and its id), so a job's match does not depend on the jobs before it
//            and a larger P profiles a superset of the entries; no random fallback: a job
//            with no profiled entry is matched to the reference closest to the mean reference
//            row, and matching breaks ties (and zero rows) by Euclidean distance, then by
//            reference order.
//
// Thread-safety: none (one simulation or daemon thread).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/core/matrix.h"
#include "gavel/core/py_random.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/estimator/matrix_completion.h"
#include "gavel/estimator/numpy_random.h"

namespace gavel::estimator {

struct EstimatorOptions {
  double profiling_percentage = 1.0;  // P in [0, 1]
  int num_reference_models = 26;      // K >= 1 (per scale factor; capped by the family size)
  std::uint64_t seed = 0;             // the run seed
  bool compat_gavel = false;
  // The models in the original's job-table order (the order the reference choice indexes and
  // ties break in); every one must have a (model, 1) entry in the table.
  std::vector<std::string> models;
  // Default mode: the GPU types a new job can be profiled on (table names; the cluster's);
  // empty = every type. Compat profiles on every type, as the original does.
  std::vector<std::string> profiled_gpu_types;
  PmfOptions completion;
};

// The outcome of matching one job.
struct Match {
  JobTypeKey reference;     // the reference type that stands in for the job
  bool true_type = false;   // the reference type is the job's own type
  bool fell_back = false;   // compat: random choice (zero row or failed completion);
                            // default: no entry profiled (matched to the mean reference row)
  bool completed = false;   // matrix completion ran (some entry was not profiled)
};

class ThroughputEstimator {
 public:
  // The table's GPU types without "unconsolidated" in the name are the estimator's columns.
  // Errors (InvalidArgument): P outside [0, 1], K < 1 or larger than the number of models, a
  // model without a (model, 1) entry, an unknown profiled GPU type.
  static Result<std::unique_ptr<ThroughputEstimator>> Create(
      std::shared_ptr<const ThroughputTable> table, EstimatorOptions options);

  // Profiles and matches a new job (call in arrival order; ids need not be dense). Errors:
  // the job is known already; its type is not in the table; compat: it is multi-GPU.
  Result<Match> AddJob(JobId job, const JobTypeKey& type);

  // {steps/s of a, steps/s of b} while jobs a and b share one GPU of the table's GPU type
  // `gpu_type` (index into ThroughputTable::gpu_types()): the measured values if the pair was
  // measured there, else the estimate. {0, 0} for jobs of different scale factors or a type
  // that is not a column. Precondition: both jobs were added.
  std::array<double, 2> Colocated(JobId a, JobId b, int gpu_type) const;
  // |estimated − table| of the normalised co-located throughput of a and of b on `gpu_type`
  // (the estimate before any measurement); NaN for a member that cannot run there alone.
  std::array<double, 2> NormalizedError(JobId a, JobId b, int gpu_type) const;
  // The pair was measured on `gpu_type`: later Colocated calls return these values.
  void RecordMeasurement(JobId a, JobId b, int gpu_type, std::array<double, 2> steps_per_s);
  bool Measured(JobId a, JobId b, int gpu_type) const;

  // The reference types of the jobs with this scale factor (empty if none), in table order.
  std::vector<JobTypeKey> ReferenceTypes(int scale_factor) const;
  const EstimatorOptions& options() const { return options_; }

 private:
  struct Family {
    int scale_factor = 1;
    std::vector<std::string> models;  // in the options' model order
    std::vector<int> keys;            // table key index per model
    Matrix normalized;                // n × (columns · n)
    std::vector<int> refs;            // indices into models, ascending
  };
  struct JobInfo {
    int family = 0;
    int true_type = 0;  // index into the family's models
    int reference = 0;  // index into the family's models
  };

  ThroughputEstimator(std::shared_ptr<const ThroughputTable> table, EstimatorOptions options);
  Status BuildFamilies();
  int MatchCompat(const Family& f, int true_type, Match& match);
  int MatchDefault(const Family& f, int true_type, JobId job, Match& match);
  double Normalized(const Family& f, int type, int column, int other) const;

  std::shared_ptr<const ThroughputTable> table_;
  EstimatorOptions options_;
  std::vector<int> columns_;          // table GPU type index per column block
  std::vector<int> column_of_type_;   // table GPU type index -> column block, -1 if none
  std::vector<bool> profiled_;        // per column block (default mode)
  std::vector<Family> families_;
  std::map<int, int> family_of_scale_;
  PyRandom rng_;               // compat: coins and fallbacks (seed + 4)
  NumpyRandomState numpy_;     // compat: the completion's starting factors (seed)
  std::unordered_map<JobId, JobInfo> jobs_;
  std::map<std::tuple<std::uint64_t, std::uint64_t, int>, std::array<double, 2>> measured_;
};

// The order in which CPython 3.11's list.sort leaves `keys` (fewer than 64), comparing with `<`
// only, so NaN keys land where Python puts them. Exposed for tests.
std::vector<std::size_t> PythonSmallSortOrder(const std::vector<double>& keys);

}  // namespace gavel::estimator
