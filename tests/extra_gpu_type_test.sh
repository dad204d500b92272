#!/usr/bin/env bash
# A GPU type the shipped table lacks: `gavel serve --throughputs-extra ROWS` lets an agent of
# the type in ROWS register, and refuses one of a type in neither, pointing at `gavel profile`.
# `gavel simulate` plans on it. The rows here are hand-made (v100's, twice as fast) so that no
# PyTorch is needed.
# Usage: extra_gpu_type_test.sh GAVEL SOURCE_DIR
set -uo pipefail
gavel=$1
source_dir=$2
tmp=$(mktemp -d)
pids=()
# A process that ignores SIGTERM for 5 s is killed: the test never hangs on its own children.
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "extra_gpu_type_test: $*" >&2; for f in "$tmp"/*.log; do echo "== $f" >&2; tail -n 5 "$f" >&2; done; exit 1; }

python3 - "$source_dir/data/simulation_throughputs.json" "$tmp/h100.json" <<'PY'
import json, sys
v100 = json.load(open(sys.argv[1]))["v100"]
rows = {k: {p: (2 * v if p == "null" else [2 * x for x in v]) for p, v in row.items()}
        for k, row in v100.items()}
json.dump({"h100": rows}, open(sys.argv[2], "w"))
PY

# A port free now (another test running beside this one may hold a random pick).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$gavel" serve --listen "127.0.0.1:$port" --state "$tmp/state" --throughputs-extra "$tmp/h100.json" \
  >"$tmp/serve.log" 2>&1 &
pids+=($!)
"$gavel" worker --scheduler "127.0.0.1:$port" --type h100 --gpus 2 --work-dir "$tmp/h100" \
  >"$tmp/h100.log" 2>&1 &
pids+=($!)
registered=0
for _ in $(seq 1 60); do
  if timeout 10 "$gavel" workers --scheduler "127.0.0.1:$port" -o json 2>/dev/null | grep -q '"h100"'; then
    registered=1; break
  fi
  sleep 0.5
done
[ $registered = 1 ] || fail "the h100 agent did not register"

# The agent keeps retrying (the daemon may be restarted with the type's rows); each refusal
# names the way to get them.
timeout 8 "$gavel" worker --scheduler "127.0.0.1:$port" --type a100 --work-dir "$tmp/a100" \
  >"$tmp/a100.log" 2>&1
grep -q 'gpu_type: "a100" is not a GPU type of the throughput table.*gavel profile --gpu-type a100' \
  "$tmp/a100.log" || fail "the a100 agent's refusal does not point at gavel profile"
timeout 10 "$gavel" workers --scheduler "127.0.0.1:$port" -o json | grep -q '"a100"' && fail "a100 registered"

# A table file that defines a type twice is refused at start, naming both files.
timeout 30 "$gavel" serve --listen "127.0.0.1:0" --state "$tmp/state2" \
  --throughputs-extra "$tmp/h100.json" --throughputs-extra "$tmp/h100.json" >"$tmp/twice.log" 2>&1 &&
  fail "a type defined twice was accepted"
grep -q 'h100.json: "h100": GPU type already in' "$tmp/twice.log" || fail "no clear error: $(cat "$tmp/twice.log")"
# `gavel simulate` on the added type: the same jobs on GPUs twice as fast finish sooner.
jct() {
  "$gavel" simulate -c 4 --worker-types "$1" --num-gpus-per-server 4 -p max_min_fairness \
    --jobs-per-hour 2 -s 0 -e 10 --seed 0 --throughputs-extra "$tmp/h100.json" --json - 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["average_jct_seconds"])'
}
v100=$(jct v100) && h100=$(jct h100) || fail "simulate with --throughputs-extra failed"
python3 -c "import sys; sys.exit(0 if $h100 < 0.75 * $v100 else 1)" ||
  fail "average JCT on h100 ($h100 s) is not below v100's ($v100 s)"
echo "extra_gpu_type_test: a profiled type registers, an unknown one is refused, simulate uses it"
