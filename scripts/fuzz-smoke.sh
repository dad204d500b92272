#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan, UBSan) and runs each briefly
# from its seed corpus in fuzz/corpus/<name>/: FUZZ_SECONDS each (default 20), one per folder of fuzz/corpus/.
# Measured in a fresh clone without ccache on a 2-core machine (`time scripts/fuzz-smoke.sh`):
# 592 s, of which ~430 s building the fuzz preset and 160 s of runs (`make test` uses 5 s per
# target, `make fuzz` the default). New inputs go to a scratch copy of the corpus, not into
# the tree.
# A crash leaves its input in build/fuzz/artifacts/ and fails the script: keep that input as
# a regression test (a unit test beside the parser, and a file in fuzz/corpus/<name>/).
#
#   scripts/fuzz-smoke.sh              every target
#   scripts/fuzz-smoke.sh snapshot     only these targets
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-20}"
jobs="${JOBS:-$(nproc)}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"

bin=build/fuzz/fuzz
artifacts=build/fuzz/artifacts
scratch=build/fuzz/scratch-corpus
mkdir -p "$artifacts"
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

failed=()
for name in "${targets[@]}"; do
  [ -x "$bin/${name}_fuzz" ] || { echo "fuzz-smoke: no target ${name}_fuzz" >&2; exit 1; }
  rm -rf "${scratch:?}/$name" && mkdir -p "$scratch/$name"
  echo "fuzz-smoke: $name for ${seconds}s" >&2
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a parser must not balloon.
  if ! ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
       UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
       "$bin/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/${name}-" \
       "$scratch/$name" "fuzz/corpus/$name" > "$artifacts/$name.log" 2>&1; then
    tail -40 "$artifacts/$name.log" >&2
    failed+=("$name")
  else
    grep -E "^stat::number_of_executed_units|^Done" "$artifacts/$name.log" | tail -1 >&2 || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz-smoke: FAILED: ${failed[*]} (inputs in $artifacts/)" >&2
  exit 1
fi
echo "fuzz-smoke: all ${#targets[@]} targets ran ${seconds}s without a crash" >&2
