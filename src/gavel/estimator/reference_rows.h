// ReferenceRows: online estimation of the co-located throughputs of a job whose type the
// throughput table does not know, from the pairs it was measured in (docs/estimator.md, "In
// the daemon"). The estimator's method (throughput_estimator.h) with measurements in place of
// profiling runs:
//
//   The reference rows are the table's normalised co-located throughputs of its job types of
//   one scale factor, N[i][b·n + k] = T_b(i next to k) / T_b(i alone), over the table's GPU
//   types b (those without "unconsolidated" in the name) and the n reference types k. A new
//   job's row is observed where it ran next to a reference type (its measured co-located
//   steps/s over its isolated steps/s); Complete fills in the rest by low-rank matrix
//   completion over [reference rows; the job's row] (matrix_completion.h: PMF by alternating
//   least squares, estimates clipped to [0, 1]) and matches the job to the reference row
//   closest in cosine distance (ties within 1e-12 by Euclidean distance, then reference order,
//   as the estimator's default mode), so that a reference type can stand in for the job where
//   a partner's rate next to it is needed.
//
// Immutable after Create; every method is const and thread-safe (the completion's generator is
// local to a call and seeded by the caller, so results are reproducible).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gavel/core/matrix.h"
#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/estimator/matrix_completion.h"

namespace gavel::estimator {

// One measured entry of a job's row: its normalised co-located throughput (steps/s next to
// the partner over steps/s alone) on a GPU type next to a reference type.
struct RowObservation {
  int gpu_type = 0;      // index into ThroughputTable::gpu_types()
  int partner_key = 0;   // index into ThroughputTable::job_types(); must be a reference type
  double normalized = 0.0;
  friend bool operator==(const RowObservation&, const RowObservation&) = default;
};

// A job's completed row.
struct CompletedRow {
  std::vector<double> values;  // per column (GPU type block × reference); observed as observed
  int match = 0;               // table key index of the reference type closest to the row
  std::size_t observed = 0;    // distinct columns observed
  bool completed = false;      // matrix completion ran (some column was not observed)
};

// The completion's settings for online use: the original's rank, a lighter ridge and a tighter
// stopping rule than its pmf_solve (whose `mean change per entry < 1e-3` stops after a few
// sweeps, far from the fit: a hidden row of an exactly rank-2 table came out 0.03–0.07 off),
// bounded at 200 sweeps (tens of milliseconds for the shipped table's 26 × 78).
inline PmfOptions OnlinePmfOptions() {
  return PmfOptions{.rank = 10, .regularization = 3e-3, .tolerance = 1e-5, .max_iterations = 200};
}

class ReferenceRows {
 public:
  // The reference types are `references` (table keys of `scale_factor`), or every job type of
  // the table with that scale factor when empty. Errors (InvalidArgument): no table GPU type,
  // no reference type, a reference that is not a table key of that scale factor.
  static Result<std::unique_ptr<const ReferenceRows>> Create(
      std::shared_ptr<const ThroughputTable> table, int scale_factor,
      std::vector<JobTypeKey> references = {});

  int scale_factor() const { return scale_factor_; }
  std::size_t num_references() const { return keys_.size(); }
  // The column of (GPU type, partner key), if the type is a column and the key a reference.
  std::optional<std::size_t> Column(int gpu_type, int partner_key) const;
  // The reference row of table key `key` at a column (the table's normalised value).
  std::optional<double> Reference(int key, std::size_t column) const;

  // Completes a job's row from its observations (later observations of a column replace
  // earlier ones). Errors: no observation (InvalidArgument: nothing to complete from), an
  // observation outside the columns (InvalidArgument), a completion without finite solution
  // (FailedPrecondition). `seed` seeds the completion's starting factors.
  Result<CompletedRow> Complete(std::span<const RowObservation> observed,
                                const PmfOptions& options, std::uint64_t seed) const;

 private:
  ReferenceRows() = default;

  std::shared_ptr<const ThroughputTable> table_;
  int scale_factor_ = 1;
  std::vector<int> keys_;             // table key index per reference, ascending
  std::vector<int> column_block_;     // table GPU type index -> column block, -1 if none
  std::vector<int> reference_of_key_; // table key index -> reference index, -1 if none
  Matrix rows_;                       // references × (blocks · references)
};

}  // namespace gavel::estimator
