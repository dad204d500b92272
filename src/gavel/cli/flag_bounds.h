// CLI11 validators that hold every numeric flag to its documented range (docs/formats.md,
// "Bounds"; the constants are in core/bounds.h). They run on the text before CLI11 converts
// it, so `--seed -1` is refused instead of wrapping to 2^64-1 in an unsigned option, and NaN,
// infinities and values like 1e999 never reach a command. CLI11 prefixes each message with
// the flag's name ("--seed: ..."). Header-only; stateless; thread-safe.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"

namespace gavel::cli {

// A finite decimal number within [lo, hi] (each end included).
inline CLI::Validator Bounded(double lo, double hi, const char* unit = "") {
  char description[96];
  std::snprintf(description, sizeof description, "in [%g, %g]%s", lo, hi, unit);
  return CLI::Validator(
      [lo, hi, unit](std::string& text) -> std::string {
        const std::optional<double> value = ParseFiniteDouble(text);
        if (!value) return "`" + text + "` is not a finite number";
        if (bounds::CheckRange(*value, lo, hi, "", unit).ok()) return std::string();
        char range[96];
        std::snprintf(range, sizeof range, " is outside [%g, %g]%s", lo, hi, unit);
        return "`" + text + "`" + range;
      },
      description);
}

// An integer (decimal digits, no sign) within [lo, hi].
inline CLI::Validator BoundedInteger(std::uint64_t lo, std::uint64_t hi) {
  const std::string description =
      "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, description](std::string& text) -> std::string {
        const std::optional<std::uint64_t> value = ParseUint64(text);
        if (!value || *value < lo || *value > hi) return "`" + text + "` is not " + description;
        return std::string();
      },
      description);
}

inline CLI::Validator SeedFlag() { return BoundedInteger(0, bounds::kMaxSeed); }

}  // namespace gavel::cli
