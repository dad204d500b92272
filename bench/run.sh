#!/usr/bin/env bash
# Builds the release preset and runs the policy benchmarks (bench/README.md).
#
#   bench/run.sh [--quick] [--large] [--filter REGEX] [-- <more policy_bench flags>]
#   bench/run.sh --table FILE.json     # the Markdown table of an earlier run
#
#   --quick          up to 512 jobs
#   --large          also 10,000 and 100,000 jobs for the policies without space sharing
#   --filter REGEX   only benchmarks whose name (<policy>/<jobs>/...) matches REGEX
#   GAVEL_BENCH_BUILD_DIR=DIR  build in DIR instead of the release preset's build/release
#
# Writes bench/results/<UTC date-time>.json (Google Benchmark's JSON) and prints a compact
# table of median seconds per allocation, one row per policy.
#
# Everything runs from main() at the end, so that bash has read the whole file before the
# long benchmark starts (editing a running script otherwise changes what it does).
set -euo pipefail

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

# Prints the tables of one results file (style "text" or "markdown"): the median wall-clock
# seconds per allocation over the repetitions that ran (or why a point has no time), then the
# median process CPU seconds per allocation (what the solve computed; on a busy machine the
# wall-clock time also holds the time the benchmark waited for a core).
print_table() {
  python3 - "$1" "$2" <<'PY'
import json, re, statistics, sys
path, style = sys.argv[1], sys.argv[2]
with open(path) as f:
    data = json.load(f)
units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
times, cpus, errors, labels, order = {}, {}, {}, {}, []
for b in data["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    m = re.match(r"^([^/]*)/(\d+)(/.*)?$", b["name"])
    if not m:
        continue
    key = (m.group(1), int(m.group(2)))
    if m.group(1) not in order:
        order.append(m.group(1))
    if b.get("error_occurred"):
        errors.setdefault(key, b.get("error_message", "error"))
        continue
    times.setdefault(key, []).append(b["real_time"] * units[b["time_unit"]])
    if "cpu_s" in b:
        cpus.setdefault(key, []).append(b["cpu_s"])
    if b.get("label"):
        labels[key] = b["label"]
sizes = sorted({n for (_, n) in list(times) + list(errors)})

def cell(key, values):
    if key in values:
        t = statistics.median(values[key])
        mark = "†" if labels.get(key, "").startswith("fallback") else ""
        return (f"{t:.3g}" if t >= 1e-3 else f"{t:.2e}") + mark
    if key in times:
        return ""
    if key in errors:
        msg = errors[key]
        if msg.startswith("not run"):
            return "not run"
        if "UNIMPLEMENTED" in msg:
            return "pending"
        return "error"
    return ""

for title, values in (("median wall-clock seconds per allocation", times),
                      ("median CPU seconds per allocation", cpus)):
    if not values:
        continue
    if style == "markdown":
        print(f"{title} ({path}):")
        print()
        print("| policy | " + " | ".join(str(n) for n in sizes) + " |")
        print("|---|" + "---:|" * len(sizes))
        for p in order:
            print(f"| {p} | " + " | ".join(cell((p, n), values) for n in sizes) + " |")
    else:
        width = max([len(p) for p in order] + [6])
        print(f"{title} ({path})")
        print(f"{'policy':<{width}} " + " ".join(f"{n:>9}" for n in sizes))
        for p in order:
            print(f"{p:<{width}} " + " ".join(f"{cell((p, n), values):>9}" for n in sizes))
    print()

# Why points have no time (or only a fallback's, marked †): one line per policy and message.
notes = {}
for (p, n), e in errors.items():
    if (p, n) not in times:
        notes.setdefault((p, e), []).append(n)
for (p, n), label in labels.items():
    if label.startswith("fallback"):
        notes.setdefault((p, "† " + label), []).append(n)
if notes:
    print("Notes:" if style == "markdown" else "notes:")
    bullet = "- " if style == "markdown" else "  "
    for p in order:
        for (q, e), ns in notes.items():
            if q == p:
                print(f"{bullet}{p} ({', '.join(str(n) for n in sorted(ns))} jobs): {e}")
PY
}

main() {
  cd "$(dirname "$0")/.."
  local root
  root=$(pwd)

  local quick=0 large=0 filter=""
  local -a extra=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --quick) quick=1 ;;
      --large) large=1 ;;
      --filter)
        [[ $# -ge 2 ]] || { echo "run.sh: --filter needs a REGEX" >&2; return 2; }
        filter="$2"; shift ;;
      --table)
        [[ $# -ge 2 ]] || { echo "run.sh: --table needs a FILE" >&2; return 2; }
        print_table "$2" markdown; return 0 ;;
      -h|--help) usage; return 0 ;;
      --) shift; extra+=("$@"); break ;;
      *) echo "run.sh: unknown option $1" >&2; usage >&2; return 2 ;;
    esac
    shift
  done

  # GAVEL_BENCH_BUILD_DIR builds elsewhere than the release preset's build/release (for work
  # beside others who use that tree), with the same optimisation flags.
  local build_dir="${GAVEL_BENCH_BUILD_DIR:-}"
  if [[ -z "$build_dir" ]]; then
    build_dir="$root/build/release"
    cmake --preset release >/dev/null
    cmake --build --preset release --target policy_bench
  else
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build_dir" --target policy_bench
  fi

  local -a flags=()
  if [[ $quick -eq 1 ]]; then flags+=(--gavel_max_jobs=512); fi
  if [[ $large -eq 1 ]]; then flags+=(--gavel_large); fi
  if [[ -n "$filter" ]]; then flags+=("--benchmark_filter=$filter"); fi

  mkdir -p bench/results
  local out
  out="bench/results/$(date -u +%Y-%m-%dT%H%M%SZ).json"
  echo "policy_bench ${flags[*]} ${extra[*]} -> $out"
  # The console shows each point's median and every skipped point; the JSON file keeps every
  # repetition and aggregate.
  local status
  set +e
  "$build_dir/bench/policy_bench" "${flags[@]}" "${extra[@]}" \
    --benchmark_out="$out" --benchmark_out_format=json \
    --benchmark_display_aggregates_only=true 2>&1 | grep --line-buffered -v -E '_(mean|stddev|cv) '
  status=${PIPESTATUS[0]}
  set -e
  if [[ $status -ne 0 ]]; then
    echo "run.sh: policy_bench failed (exit $status)" >&2
    return "$status"
  fi
  echo
  print_table "$out" text
}

main "$@"
exit
