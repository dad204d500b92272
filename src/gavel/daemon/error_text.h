// How the daemon's error messages quote what they name: a value in double quotes, a list of
// names joined by ", ". Shared so that every refusal reads the same.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace gavel::daemon {

inline std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

inline std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace gavel::daemon
