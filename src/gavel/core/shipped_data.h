// Where the data files the binary ships with are found (the throughput table, the Philly job
// distribution, the physics tables): the files of data/ that `make install` copies to
// PREFIX/share/gavel/.
//
// Contract: ShippedDataFile(name) is the path of `name` in the first of
//   1. $GAVEL_DATA_DIR, when set and not empty (an operator's own copy; no fallback from it,
//      so a wrong setting shows as "cannot open" naming that directory);
//   2. <directory of the running executable>/../share/gavel, when it holds `name` (an
//      installed binary, whatever prefix it was installed under);
//   3. the source tree's data/ (the build tree's binaries and the tests).
// It names a path and opens nothing: a missing file is the caller's error to report.
// Thread-safe (reads the environment and /proc/self/exe only).
#pragma once

#include <string>
#include <string_view>

namespace gavel {

std::string ShippedDataFile(std::string_view name);

// The path of a helper program the binary runs (python/gavel_profile.py for `gavel profile`),
// which `make install` puts in PREFIX/share/gavel: there when the running executable's
// ../share/gavel holds it, else the source tree's python/. Thread-safe.
std::string ShippedProgramFile(std::string_view name);

}  // namespace gavel
