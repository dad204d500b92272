#include "gavel/core/utility.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gavel/core/parse_number.h"

namespace gavel {

double UtilityFunction::At(double jct_seconds) const {
  if (family == UtilityFamily::kLinear) return value * std::max(0.0, 1.0 - jct_seconds / midpoint);
  const double exponent = steepness * (jct_seconds - midpoint);
  if (exponent > 700.0) return 0.0;  // exp overflows; the utility is 0 to double precision
  return value / (1.0 + std::exp(exponent));
}

Result<UtilityFamily> ParseUtilityFamily(std::string_view name) {
  if (name == "sigmoid") return UtilityFamily::kSigmoid;
  if (name == "linear") return UtilityFamily::kLinear;
  return Status::InvalidArgument("utility family \"" + std::string(name) +
                                 "\" is not sigmoid or linear");
}

const char* UtilityFamilyName(UtilityFamily family) {
  return family == UtilityFamily::kSigmoid ? "sigmoid" : "linear";
}

Result<UtilityFunction> ParseUtility(std::string_view text) {
  std::vector<std::string_view> parts;
  std::string_view rest = text;
  while (true) {
    const std::size_t colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 1);
  }
  GAVEL_ASSIGN_OR_RETURN(const UtilityFamily family, ParseUtilityFamily(parts[0]));
  const std::size_t want = family == UtilityFamily::kSigmoid ? 4 : 3;
  if (parts.size() != want) {
    return Status::InvalidArgument(
        "utility \"" + std::string(text) + "\": expected " +
        (family == UtilityFamily::kSigmoid ? "sigmoid:<value>:<midpoint>:<steepness>"
                                           : "linear:<value>:<zero_at>"));
  }
  const char* names[] = {"", "value", family == UtilityFamily::kSigmoid ? "midpoint" : "zero_at",
                         "steepness"};
  double numbers[4] = {0.0, 0.0, 0.0, 1.0};
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::optional<double> v = ParseFiniteDouble(parts[i]);
    if (!v || !(*v > 0.0) || *v > 1e12) {
      return Status::InvalidArgument("utility \"" + std::string(text) + "\": " + names[i] + " \"" +
                                     std::string(parts[i]) + "\" is not a number in (0, 1e12]");
    }
    numbers[i] = *v;
  }
  return UtilityFunction{family, numbers[1], numbers[2], numbers[3]};
}

std::string FormatUtility(const UtilityFunction& u) {
  char buffer[160];
  if (u.family == UtilityFamily::kSigmoid) {
    std::snprintf(buffer, sizeof buffer, "sigmoid:%.17g:%.17g:%.17g", u.value, u.midpoint,
                  u.steepness);
  } else {
    std::snprintf(buffer, sizeof buffer, "linear:%.17g:%.17g", u.value, u.midpoint);
  }
  return buffer;
}

UtilityFunction DefaultUtility(UtilityFamily family, double duration_seconds, int gpus) {
  const double d = std::max(duration_seconds, 1.0);
  const double value = gpus * d / 3600.0;
  if (family == UtilityFamily::kSigmoid) return UtilityFunction{family, value, 4.0 * d, 2.0 / d};
  return UtilityFunction{family, value, 8.0 * d, 1.0};
}

}  // namespace gavel
