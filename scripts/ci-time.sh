#!/usr/bin/env bash
# Times each phase of `make test` (the same commands as the Makefile's test-release,
# test-debug and test-fuzz) as CI runs it: a fresh clone of HEAD, no ccache, JOBS=2.
# Prints one line per phase (seconds, and the load average, since the build machine is
# shared) and the total; record them in bench/README.md, "CI time".
#
#   scripts/ci-time.sh [CLONE_DIR]      (default: a new temporary directory)
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$(mktemp -d /tmp/gavel-ci-time.XXXXXX)}"
git clone -q "$src" "$dir" || exit 1
cd "$dir" || exit 1
unset CMAKE_CXX_COMPILER_LAUNCHER CMAKE_C_COMPILER_LAUNCHER
export CCACHE_DISABLE=1 JOBS=2
total=0
status=0
for phase in release-build release-ctest debug-build debug-ctest fuzz; do
  start=$(date +%s)
  case $phase in
    release-build) make deps && cmake --preset release -DGAVEL_UNIT_TESTS_IN_ALL=OFF \
                     -DGAVEL_BENCHMARKS_IN_ALL=OFF >/dev/null &&
                   cmake --build --preset release -j 2 ;;
    release-ctest) ctest --preset release -L slow ;;
    debug-build) cmake --preset debug >/dev/null && cmake --build --preset debug -j 2 ;;
    debug-ctest) ctest --preset debug ;;
    fuzz) FUZZ_SECONDS=5 scripts/fuzz-smoke.sh ;;
  esac
  rc=$?
  [ $rc -eq 0 ] || status=1
  seconds=$(( $(date +%s) - start ))
  total=$(( total + seconds ))
  echo "ci-time: $phase ${seconds}s rc=$rc load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
echo "ci-time: total ${total}s (clone in $dir)" >&2
exit $status
