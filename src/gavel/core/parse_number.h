// Whole-string number parsing for everything Gavel reads as text (flags, CSV cells, trace
// fields, ids): std::from_chars over the entire string, so no leading spaces, no trailing text,
// no locale, and an unsigned type refuses "-1" instead of wrapping it to 2^64-1 as stoull does.
// Callers that accept more (Python's int()/float() whitespace and '+') strip it first.
// Pure functions; thread-safe.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace gavel {

// An integer of type T spelling all of `text` (decimal digits, a '-' only for signed T);
// nullopt when empty, partial, or out of T's range.
template <typename T>
  requires std::is_integral_v<T>
std::optional<T> ParseInteger(std::string_view text) {
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

inline std::optional<std::uint64_t> ParseUint64(std::string_view text) {
  return ParseInteger<std::uint64_t>(text);
}

// A finite decimal number spelling all of `text`; nullopt when empty, partial, beyond a
// double's range (1e999), NaN or an infinity.
inline std::optional<double> ParseFiniteDouble(std::string_view text) {
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace gavel
