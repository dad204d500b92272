// Job utility as a function of completion time (after OASiS, INFOCOM'18): what a job is
// worth to its owner when it completes `jct` seconds after it arrived. Two shipped families:
//   sigmoid  f(t) = value / (1 + exp(steepness · (t − midpoint)))   (OASiS's γ1, γ2, γ3)
//   linear   f(t) = value · max(0, 1 − t / zero_at)                 (linear decay to 0)
// Both are non-increasing in t, as OASiS requires. Text form (traces, docs/formats.md):
//   "sigmoid:<value>:<midpoint s>:<steepness 1/s>"   "linear:<value>:<zero_at s>"
// Plain value and pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "gavel/core/status.h"

namespace gavel {

enum class UtilityFamily { kSigmoid, kLinear };

struct UtilityFunction {
  UtilityFamily family = UtilityFamily::kSigmoid;
  double value = 1.0;      // utility at t = 0 (sigmoid: its supremum), > 0
  double midpoint = 1.0;   // sigmoid: t where f = value/2; linear: t where f reaches 0; > 0
  double steepness = 1.0;  // sigmoid only, 1/s, > 0
  double At(double jct_seconds) const;
  friend bool operator==(const UtilityFunction&, const UtilityFunction&) = default;
};

// "sigmoid" or "linear".
Result<UtilityFamily> ParseUtilityFamily(std::string_view name);
const char* UtilityFamilyName(UtilityFamily family);

// The text form above; errors name the part at fault.
Result<UtilityFunction> ParseUtility(std::string_view text);
std::string FormatUtility(const UtilityFunction& utility);

// The utility `--utility <family>` gives a generated job that needs `gpus` GPUs for
// `duration` seconds alone (docs/simulator.md, "Utilities"): worth its GPU-hours; the sigmoid
// halves at 4 × duration with steepness 2 / duration, the linear one reaches 0 at 8 × duration.
UtilityFunction DefaultUtility(UtilityFamily family, double duration_seconds, int gpus);

}  // namespace gavel
