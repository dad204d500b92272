// ProfiledGpuType: throughput-table rows for a GPU type the table lacks, from what `gavel
// profile` measured on it (docs/profiling.md): the single-GPU job types' rates alone and, for
// some pairs, next to each other on one device. What was not measured is filled in from the
// table:
//
//   Nearest type. The table's GPU type (not *_unconsolidated) whose single-GPU rates differ
//   from the measured ones by the most uniform factor: least variance of log(measured / table)
//   over the measured job types, ties by the smallest mean. That mean is the speed level.
//   Isolated rates not measured: the nearest type's rate times the level.
//   Multi-GPU job types (scale factor s > 1): the single-GPU rate times the nearest type's
//   ratio rate(s) / rate(1), the way the table relates one model's scale factors on one type;
//   their pairs take the nearest type's normalised co-located rates (rate next to partner /
//   rate alone).
//   Single-GPU pairs not measured: completed by the estimator's matrix completion
//   (matrix_completion.h, ProfiledPmfOptions below) over the normalised co-located rates of every
//   table GPU type plus the new one (rows: job types; columns: GPU type x partner), clipped to
//   [0, 1]. With no pair measured at all there is nothing to complete from, and the nearest
//   type's normalised rates are taken as they are.
//
// A free function of its inputs; thread-safe. Deterministic for a given seed.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gavel/core/status.h"
#include "gavel/core/throughput_table.h"
#include "gavel/estimator/reference_rows.h"

namespace gavel::estimator {

struct ProfileMeasurements {
  // Steps/s alone, by single-GPU job type name ("ResNet-18 (batch size 64)"); 0: did not fit.
  std::map<std::string, double> isolated;
  struct Pair {
    std::string a, b;
    std::array<double, 2> rates{};  // steps/s of a and of b while sharing the device
                                    // (a == b: their mean is written for both)
  };
  std::vector<Pair> pairs;
};

// The completion's settings here: the original's rank with a heavier ridge than the daemon's
// (OnlinePmfOptions' 0.003). A whole column block of the matrix is new and only partly observed,
// and a light ridge overfits it: with v100 hidden and a third of its pairs observed, the mean
// error of the unmeasured pairs was 0.25-0.28 at 0.003, 0.16-0.18 at 0.1, 0.155-0.159 at 0.3 and
// 0.18-0.19 at 1.0 (three choices of the observed third; profiled_gpu_type_test).
inline PmfOptions ProfiledPmfOptions() {
  return PmfOptions{.rank = 10, .regularization = 0.3, .tolerance = 1e-5, .max_iterations = 200};
}

struct ProfiledGpuTypeOptions {
  std::string gpu_type;   // the new type's name; must not be a type of the table
  std::uint64_t seed = 0; // the completion's starting factors
  PmfOptions completion = ProfiledPmfOptions();
};

struct ProfiledGpuType {
  std::string table_json;           // {"<gpu type>": {...}} in the table's format
  std::string nearest_type;         // the table type the unmeasured values come from
  double speed_level = 1.0;         // geometric mean of measured / nearest type's rates
  std::vector<std::string> derived_isolated;  // single-GPU job types not measured
  int pairs_measured = 0;           // single-GPU pairs (unordered) measured
  int pairs_completed = 0;          // single-GPU pairs estimated: completed, or the nearest type's
};

// Errors (InvalidArgument): an empty or existing GPU type name, a measured job type that is not
// a single-GPU type of the table, a rate that is negative or not finite, no positive isolated
// rate (nothing to relate the table to); FailedPrecondition when the completion fails.
Result<ProfiledGpuType> CompleteProfiledGpuType(std::shared_ptr<const ThroughputTable> table,
                                                const ProfileMeasurements& measured,
                                                const ProfiledGpuTypeOptions& options);

}  // namespace gavel::estimator
