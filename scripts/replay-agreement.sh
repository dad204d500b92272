#!/usr/bin/env bash
# Live against simulated on one machine: starts `gavel serve` and loopback `gavel worker`s of a
# cluster shape (default the Gavel paper's physical cluster, 8 v100 + 16 p100 + 24 k80 in
# agents of 4 GPUs), writes a continuous trace of single- and multi-GPU jobs, replays it with
# `gavel replay --compare` and leaves the live and simulated results in OUT.
#
#   scripts/replay-agreement.sh [--policy P] [--time-scale S] [--jobs N] [--seed K]
#       [--cluster V:P:K] [--gpus-per-agent G] [--interarrival-minutes M]
#       [--minutes A:B] [--sizes W1:W2:W4] [--burst B] [--serve-arg ARG]...
#       [--trace FILE [--trace-format F]] [--out DIR] [--gavel BINARY]
#       [-- extra replay flags]
#
# The trace: N jobs of random table types (seeded), Poisson arrivals every M minutes on
# average (in bursts of B jobs arriving together, bursts every B x M minutes on average, when
# --burst is given), each lasting uniformly A to B minutes alone on a V100 (steps = minutes x
# the table's V100 rate), sizes 1, 2 and 4 GPUs in proportions W1:W2:W4 (default 39:6:5).
# --trace replays FILE instead (any format `gavel replay` reads, csv by default: an operator's
# own trace or a held-out one); the generator's options are then ignored.
# --serve-arg passes one more flag to `gavel serve` (repeatable). The daemon's rounds are the
# simulator's 360 s divided by S. The machine must have a core or so free per 16 GPUs: a loaded
# machine stretches start-ups and rounds beyond what the simulation models
# (docs/runtime.md, "Where live and simulated runs differ").
set -euo pipefail

policy=max_min_fairness_perf
time_scale=15
jobs=50
seed=0
cluster=8:16:24
gpus_per_agent=4
interarrival=1.5
minutes=30:120
sizes=39:6:5
burst=1
serve_args=()
trace=
trace_format=csv
out=
gavel=
while [ $# -gt 0 ]; do
  case "$1" in
    --policy) policy=$2; shift 2 ;;
    --time-scale) time_scale=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --cluster) cluster=$2; shift 2 ;;
    --gpus-per-agent) gpus_per_agent=$2; shift 2 ;;
    --interarrival-minutes) interarrival=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --serve-arg) serve_args+=("$2"); shift 2 ;;
    --trace) trace=$2; shift 2 ;;
    --trace-format) trace_format=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --gavel) gavel=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "replay-agreement.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
gavel=${gavel:-$root/build/release/src/gavel/cli/gavel}
[ -x "$gavel" ] || { echo "replay-agreement.sh: no gavel binary at $gavel (build it, or --gavel)" >&2; exit 2; }
[ -z "$trace" ] || [ -r "$trace" ] || { echo "replay-agreement.sh: --trace $trace: no such readable file" >&2; exit 2; }
work=$(mktemp -d)
out=${out:-$work/out}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 2
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work/state" "$work/ckpt" "$work"/agent-*
}
trap cleanup EXIT

if [ -n "$trace" ]; then
  cp "$trace" "$work/trace.csv"
else
python3 - "$root/data/simulation_throughputs.json" "$work/trace.csv" "$jobs" "$seed" \
    "$interarrival" "$minutes" "$sizes" "$burst" <<'EOF'
import ast, csv, json, random, sys
table_file, trace_file, jobs, seed, interarrival, minutes, sizes, burst = sys.argv[1:]
low, high = (float(x) for x in minutes.split(":"))
weights = [float(x) for x in sizes.split(":")]
burst = int(burst)
v100 = json.load(open(table_file))["v100"]
by_size = {}
for key, entry in v100.items():
    job_type, size = ast.literal_eval(key)
    if entry.get("null", 0) > 0:
        by_size.setdefault(size, []).append((job_type, entry["null"]))
rng = random.Random(int(seed))
arrival = 0.0
with open(trace_file, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["job_type", "scale_factor", "total_steps", "arrival_time"])
    for i in range(int(jobs)):
        size = rng.choices([1, 2, 4], weights=weights)[0]
        job_type, rate = rng.choice(sorted(by_size[size]))
        seconds = rng.uniform(low, high) * 60.0
        w.writerow([job_type, size, int(rate * seconds), f"{arrival:.3f}"])
        if (i + 1) % burst == 0:
            arrival += rng.expovariate(1.0 / (float(interarrival) * burst * 60.0))
EOF
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
IFS=: read -r v100 p100 k80 <<<"$cluster"
total=$((v100 + p100 + k80))
round=$(python3 -c "print(360.0 / $time_scale)")
"$gavel" serve --listen "127.0.0.1:$port" --state "$work/state" --policy "$policy" \
    --round-seconds "$round" --checkpoint-dir "$work/ckpt" --expected-gpus "$total" \
    ${serve_args[@]+"${serve_args[@]}"} >"$work/serve.log" 2>&1 &
pids+=($!)
agent=0
for spec in "v100:$v100" "p100:$p100" "k80:$k80"; do
  type=${spec%%:*}
  left=${spec#*:}
  while [ "$left" -gt 0 ]; do
    gpus=$((left < gpus_per_agent ? left : gpus_per_agent))
    "$gavel" worker --scheduler "127.0.0.1:$port" --type "$type" --gpus "$gpus" \
        --work-dir "$work/agent-$agent" --checkpoint-dir "$work/ckpt" \
        >"$work/agent-$agent.log" 2>&1 &
    pids+=($!)
    agent=$((agent + 1))
    left=$((left - gpus))
  done
done
sleep 5  # the agents register; replay reads the cluster once at its start
if [ -n "$trace" ]; then
  what="trace $trace"
else
  what="$jobs jobs, seed $seed"
  trace_format=csv
fi
echo "replay-agreement: $policy, $cluster in agents of $gpus_per_agent, ${round}-s rounds (${time_scale}x), $what -> $out"
"$gavel" replay --trace "$work/trace.csv" --trace-format "$trace_format" --scheduler "127.0.0.1:$port" \
    --time-scale "$time_scale" --out "$out" --compare "$@"
cp "$work/trace.csv" "$out/trace.csv"
cp "$work/serve.log" "$out/serve.log"
