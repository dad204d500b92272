#!/usr/bin/env bash
# The live/simulated agreement sweep at 60x: runs scripts/replay-agreement.sh once per point
# (a seeded trace shape on a small loopback cluster under one policy), one point at a time,
# and writes a table of live against simulated average JCT with the machine's load beside
# each point.
#
#   scripts/replay-sweep.sh [--out DIR] [--only NAME,...] [--serve-arg ARG]... [--gavel BINARY]
#       [-- extra replay flags]
#
# DIR/sweep.tsv gets one row per point; DIR/NAME/ holds the point's trace, live and simulated
# results and the replay's output. Beside the replay's own simulation (sim_avg_jct_s), each
# point's scaled trace is simulated again with the replay's knobs under both step models
# (sim_fractional_s: progress in fractions of a step; sim_whole_s: `--whole-steps`, the
# replay's model), so one live run compares them. Live runs are timing-sensitive: run the
# sweep at normal priority on a machine without other live runs, and read the load columns.
# --gavel runs the live points with another binary (an older one, for a before/after); the
# re-simulations always use the build's.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=
only=
gavel=$root/build/release/src/gavel/cli/gavel
serve_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --serve-arg) serve_args+=(--serve-arg "$2"); shift 2 ;;
    --gavel) gavel=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "replay-sweep.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
out=${out:-sweep-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out"

# name | policy | cluster V:P:K | GPUs per agent | jobs | sizes 1:2:4 | mean inter-arrival
# (min) | burst | minutes on a V100 | seed
points="
s-spread   | las_perf              | 1:1:1  | 1 | 12 | 1:0:0 | 2   | 1 | 15:40 | 1
s-burst    | las_perf              | 2:2:2  | 2 | 20 | 1:0:0 | 1.5 | 5 | 10:30 | 2
m-spread   | las_perf              | 4:4:4  | 4 | 16 | 6:3:1 | 2   | 1 | 15:40 | 3
m-burst    | max_min_fairness_perf | 4:4:4  | 4 | 24 | 5:3:2 | 1   | 8 | 5:20  | 4
k80-heavy  | max_min_fairness      | 1:2:4  | 4 | 16 | 7:3:0 | 2   | 1 | 15:40 | 5
s-long     | fifo_perf             | 2:2:2  | 2 | 10 | 1:0:0 | 3   | 1 | 40:80 | 6
m-mixed    | las_perf              | 2:2:4  | 2 | 30 | 39:6:5| 1   | 1 | 10:30 | 7
mmf-multi  | max_min_fairness      | 2:2:2  | 2 | 16 | 6:4:0 | 1.5 | 4 | 10:30 | 8
"

tsv=$out/sweep.tsv
[ -f "$tsv" ] || printf 'point\tpolicy\tcluster\tgpus_per_agent\tjobs\tsizes\tinterarrival_min\tburst\tminutes\tseed\tstart_utc\tload_before\tload_after\tlive_avg_jct_s\tsim_avg_jct_s\tdifference_pct\tlive_makespan_s\tsim_makespan_s\tmean_startup_s\tmedian_round_s\tsim_fractional_s\tsim_whole_s\n' >"$tsv"
while IFS='|' read -r name policy cluster gpa jobs sizes inter burst minutes seed; do
  name=$(echo $name)
  [ -n "$name" ] || continue
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  policy=$(echo $policy); cluster=$(echo $cluster); gpa=$(echo $gpa); jobs=$(echo $jobs)
  sizes=$(echo $sizes); inter=$(echo $inter); burst=$(echo $burst); minutes=$(echo $minutes)
  seed=$(echo $seed)
  start=$(date -u +%H:%M)
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  "$root/scripts/replay-agreement.sh" --policy "$policy" --time-scale 60 --jobs "$jobs" \
      --seed "$seed" --cluster "$cluster" --gpus-per-agent "$gpa" --interarrival-minutes "$inter" \
      --burst "$burst" --minutes "$minutes" --sizes "$sizes" --out "$out/$name" --gavel "$gavel" \
      ${serve_args[@]+"${serve_args[@]}"} -- --quiet --max-seconds 900 "$@" \
      >"$out/$name.log" 2>&1 || echo "replay-sweep: $name failed (see $out/$name.log)" >&2
  load_after=$(cut -d' ' -f1 /proc/loadavg)
  python3 - "$out/$name" "$out/$name.log" "$root/build/release/src/gavel/cli/gavel" "$gpa" \
      >>"$tsv" <<PY || true
import json, math, re, subprocess, sys
d, log, gavel, gpa = sys.argv[1:]
live = json.load(open(d + "/live.json")); sim = json.load(open(d + "/simulated.json"))
text = open(log).read()
m = re.search(r"mean start-up ([0-9.]+) s per launch; \d+ rounds timed, median ([0-9.]+) s", text)
knobs = re.search(r"Simulated: (\S+) on (\S+) \((\S+)\), round (\S+) s, restart overhead (\S+) s", text)
settle = re.search(r"idle-cluster arrival pause (\S+) s", text)
# The replay's simulation again: the scaled trace (steps and arrivals / 60, as ScaleTrace) on
# the cluster in agents of gpa GPUs (gpus per server = the gcd of a type's agent sizes).
rows = open(d + "/trace.csv").read().splitlines()
with open(d + "/scaled.csv", "w") as f:
    f.write(rows[0] + "\n")
    for row in rows[1:]:
        t, sf, steps, arrival = row.rsplit(",", 3)
        f.write(f"{t},{sf},{max(1, math.floor(int(steps) / 60 + 0.5))},{float(arrival) / 60!r}\n")
per_server = []
for n in (int(x) for x in knobs.group(2).split(":")):
    sizes = [min(int(gpa), n - k) for k in range(0, n, int(gpa))]
    per_server.append(str(math.gcd(*sizes)))
def simulate(*extra):
    out = subprocess.run([gavel, "simulate", "--trace", d + "/scaled.csv", "--trace-format", "csv",
        "-p", knobs.group(1), "-c", knobs.group(2), "--worker-types", knobs.group(3),
        "--num-gpus-per-server", ":".join(per_server), "-i", knobs.group(4),
        "--restart-overhead", knobs.group(5), "--restart-outside-lease", "--progress", "never",
        *(["--arrival-settle", settle.group(1)] if settle else []), "--json", "-", *extra], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["average_jct_seconds"]
a, b = live["average_jct_seconds"], sim["average_jct_seconds"]
print("\t".join(str(x) for x in ["$name", "$policy", "$cluster", "$gpa", "$jobs", "$sizes",
    "$inter", "$burst", "$minutes", "$seed", "$start", "$load_before", "$load_after",
    f"{a:.1f}", f"{b:.1f}", f"{100 * (a - b) / b:+.1f}", f"{live['makespan_seconds']:.1f}",
    f"{sim['makespan_seconds']:.1f}", m.group(1) if m else "", m.group(2) if m else "",
    f"{simulate():.1f}", f"{simulate('--whole-steps'):.1f}"]))
PY
  tail -1 "$tsv"
done <<<"$points"
