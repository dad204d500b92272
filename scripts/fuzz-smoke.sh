#!/usr/bin/env bash
# Runs each libFuzzer target briefly from its seed corpus in fuzz/corpus/<name>/: FUZZ_SECONDS
# each (default 20), one target per folder of fuzz/corpus/. The targets live in the `debug`
# preset's tree (clang, ASan, UBSan, every unit instrumented for coverage), built beside the
# tests: after `make test-debug` the build
# step below has nothing to do; alone, it builds only the `fuzzers` target and what it links.
# New inputs go to a scratch copy of the corpus, not into the tree.
# A crash leaves its input in build/debug/fuzz-artifacts/ and fails the script: keep that
# input as a regression test (a unit test beside the parser, and a file in
# fuzz/corpus/<name>/).
#
#   scripts/fuzz-smoke.sh              every target
#   scripts/fuzz-smoke.sh snapshot     only these targets
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-20}"
jobs="${JOBS:-$(nproc)}"
cmake --preset debug >/dev/null
cmake --build --preset debug -j "$jobs" --target fuzzers

bin=build/debug/fuzz
artifacts=build/debug/fuzz-artifacts
scratch=build/debug/fuzz-scratch-corpus
mkdir -p "$artifacts"
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

# One target: fuzz it for $seconds, then report (exit status: the fuzzer's).
fuzz_one() {
  local name="$1"
  rm -rf "${scratch:?}/$name" && mkdir -p "$scratch/$name"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a parser must not balloon.
  if ! ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
       UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
       "$bin/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/${name}-" \
       "$scratch/$name" "fuzz/corpus/$name" > "$artifacts/$name.log" 2>&1; then
    tail -40 "$artifacts/$name.log" >&2
    return 1
  fi
  echo "fuzz-smoke: $name: $(grep -E "^stat::number_of_executed_units|^Done" \
    "$artifacts/$name.log" | tail -1)" >&2
}

# Each libFuzzer process uses one core, so $jobs targets run at once: each still gets its
# $seconds of a whole core, and the run takes 1/$jobs of the time (CI: 2 cores).
for name in "${targets[@]}"; do
  [ -x "$bin/${name}_fuzz" ] || { echo "fuzz-smoke: no target ${name}_fuzz" >&2; exit 1; }
done
echo "fuzz-smoke: ${#targets[@]} targets, ${seconds}s each, $jobs at a time" >&2
declare -A running=()  # pid -> target
failed=()
# Waits for one target to finish (bash 5.1's wait -n -p) and records a failure.
reap_one() {
  local pid
  if wait -n -p pid; then
    :
  else
    failed+=("${running[$pid]}")
  fi
  unset "running[$pid]"
}
for name in "${targets[@]}"; do
  while [ ${#running[@]} -ge "$jobs" ]; do reap_one; done
  fuzz_one "$name" &
  running[$!]="$name"
done
while [ ${#running[@]} -gt 0 ]; do reap_one; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz-smoke: FAILED: ${failed[*]} (inputs in $artifacts/)" >&2
  exit 1
fi
echo "fuzz-smoke: all ${#targets[@]} targets ran ${seconds}s without a crash" >&2
