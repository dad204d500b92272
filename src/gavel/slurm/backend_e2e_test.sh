#!/usr/bin/env bash
# End to end: `gavel serve --backend slurm` on the loopback Slurm of
# scripts/slurm-dev-cluster.sh, jobs submitted with `gavel submit` running
# examples/training/train.py under the Python iterator. Truths checked, each from a source
# independent of the daemon's own count:
#   * the daemon's cluster is Slurm's: one pilot job per (node, GPU type), as squeue lists
#     them, and `gavel workers` shows exactly the GPUs sinfo reports, by type;
#   * a daemon killed with -9 mid-run and restarted adopts the running pilots (Slurm still
#     lists exactly the same job ids, none added) and loses no job and no checkpointed step;
#   * a node's slurmd killed with -9 mid-run (and restarted) loses no job;
#   * every job ends with exactly its steps: the daemon's count, and the training program's own
#     checkpoint (step and the order-sensitive checksum of the steps it ran, each once in order);
#   * `gavel cancel` ends a job running inside Slurm; a job submitted with scripts/gavel-sbatch
#     (a batch script with #SBATCH lines) runs like the others.
# Usage: backend_e2e_test.sh GAVEL_BINARY SOURCE_DIR. Exit 77 (skipped) without root or Slurm.
set -euo pipefail
gavel=$1
src=$2
. "$(dirname "$0")/test_lib.sh"
slurm_test_dir e2e
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null || true
  [ -n "${SLURM_CONF:-}" ] && scancel --quiet --full --signal=KILL --name="$(pilot_names)" 2>/dev/null || true
  "$src/scripts/slurm-dev-cluster.sh" stop "$dir/cluster" >/dev/null 2>&1 || true
  # Job processes the pilots started lead process groups of their own (proctrack/pgid does not
  # follow them): end what still runs from this test's directory.
  for pid in $(pgrep -f "$dir" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  if [ "${keep:-0}" = 1 ]; then echo "keeping $dir" >&2; else rm -rf "$dir"; fi
}
pilot_names() { squeue -h -o '%j' | grep '^gavel-' | sort -u | paste -sd, -; }
trap cleanup EXIT
fail() {
  keep=1
  echo "FAIL: $*" >&2
  tail -n 30 "$dir/serve.err" >&2 || true
  exit 1
}

eval "$("$src/scripts/slurm-dev-cluster.sh" start "$dir/cluster")"

start_daemon() {
  : >"$dir/serve.out"
  "$gavel" serve --backend slurm --listen "127.0.0.1:${port:-0}" --state "$dir/state" \
    --round-seconds 2 --heartbeat-seconds 0.5 --heartbeat-timeout-seconds 3 \
    --report-grace-seconds 1.5 --retry-backoff-seconds 1 --slurm-reconcile-seconds 1 \
    >"$dir/serve.out" 2>>"$dir/serve.err" &
  daemon_pid=$!
  for _ in $(seq 150); do
    if grep -q '^listening on ' "$dir/serve.out"; then
      addr=$(sed -n 's/^listening on //p' "$dir/serve.out")
      port=${addr##*:}
      return 0
    fi
    kill -0 "$daemon_pid" 2>/dev/null || fail "gavel serve exited"
    sleep 0.1
  done
  fail "gavel serve did not start"
}
jobs_json() { "$gavel" jobs --scheduler "$addr" -o json; }
py() { python3 -c "$@"; }

start_daemon
# ---- The cluster is Slurm's ----
sinfo_gpus=$(sinfo -h -N -o '%G' | tr ',' '\n' | awk -F: '{n[$2]+=$3} END {for (t in n) print t, n[t]}' | sort)
for _ in $(seq 100); do
  workers=$("$gavel" workers --scheduler "$addr" -o json)
  gavel_gpus=$(py 'import json,sys,collections
w=json.load(sys.stdin)
c=collections.Counter(x["gpu_type"] for x in w)
print("\n".join(f"{t} {n}" for t, n in sorted(c.items())))' <<<"$workers")
  [ "$gavel_gpus" = "$sinfo_gpus" ] && break
  sleep 0.2
done
[ "$gavel_gpus" = "$sinfo_gpus" ] || fail "gavel workers by type '$gavel_gpus', sinfo '$sinfo_gpus'"
pilots_before=$(squeue -h -o '%i %j %N' | grep ' gavel-' | sort)
[ "$(wc -l <<<"$pilots_before")" -eq 4 ] || fail "pilots: $pilots_before"

# ---- Jobs ----
declare -A steps=([1]=300 [2]=120 [3]=600 [4]=250 [5]=400)
types=("" "ResNet-18 (batch size 64)" "Transformer (batch size 16)" "LM (batch size 20)" \
       "ResNet-18 (batch size 64)" "LM (batch size 20)")
for i in 1 2 3 4; do
  id=$("$gavel" submit --scheduler "$addr" --steps "${steps[$i]}" --job-type "${types[$i]}" \
       -- python3 "$src/examples/training/train.py" --exec-log "$dir/exec-$i.log")
  [ "$id" = "$i" ] || fail "submit gave id '$id', want $i"
done
# The fifth as a Slurm user would: a batch script through scripts/gavel-sbatch.
printf '#!/bin/sh\n#SBATCH -J lm --gres=gpu:1\n#GAVEL --steps %s\nexec python3 %s --exec-log %s\n' \
  "${steps[5]}" "$src/examples/training/train.py" "$dir/exec-5.log" >"$dir/lm.sh"
out=$(GAVEL=$gavel "$src/scripts/gavel-sbatch" --scheduler "$addr" --gavel-job-type "${types[5]}" "$dir/lm.sh")
[ "$out" = "Submitted batch job 5" ] || fail "gavel-sbatch printed '$out'"

# ---- kill -9 of the daemon mid-run ----
for _ in $(seq 150); do
  progress=$(jobs_json | py 'import json,sys; print(sum(j["steps_done"] for j in json.load(sys.stdin)))')
  [ "$progress" -gt 0 ] && break
  sleep 0.2
done
[ "$progress" -gt 0 ] || fail "no progress"
before=$(jobs_json)
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""
sleep 1
start_daemon
after=$(jobs_json)
py 'import json,sys
b=json.loads(sys.argv[1]); a=json.loads(sys.argv[2])
assert [j["id"] for j in a] == [j["id"] for j in b], "jobs lost"
for x, y in zip(b, a): assert y["steps_done"] >= x["steps_done"], (x, y)' "$before" "$after" \
  || fail "jobs or progress lost over the daemon's kill -9"
sleep 2
pilots_after=$(squeue -h -o '%i %j %N' | grep ' gavel-' | sort)
[ "$pilots_after" = "$pilots_before" ] || fail "pilots changed: '$pilots_before' -> '$pilots_after'"

# ---- kill -9 of a node's slurmd mid-run, restarted ----
node_pid=$(cat "$dir/cluster/run/slurmd-gnode2.pid")
kill -KILL "$node_pid"
sleep 2
slurmd -f "$SLURM_CONF" -N gnode2

# ---- cancel ----
cancel_id=$("$gavel" submit --scheduler "$addr" --steps 100000 --job-type "Transformer (batch size 16)" \
            -- python3 "$src/examples/training/train.py")
"$gavel" cancel --scheduler "$addr" "$cancel_id" >/dev/null || fail "cancel"

# ---- Every job ends with exactly its steps ----
for _ in $(seq 600); do
  final=$(jobs_json)
  active=$(py 'import json,sys; print(sum(j["state"] in ("queued","running") for j in json.load(sys.stdin)))' <<<"$final")
  [ "$active" -eq 0 ] && break
  sleep 0.2
done
[ "$active" -eq 0 ] || fail "jobs still active: $final"
py '
import json, sys
jobs = {j["id"]: j for j in json.loads(sys.argv[1])}
steps = json.loads(sys.argv[2]); ckpt = sys.argv[3]; cancel = int(sys.argv[4])
M = (1 << 61) - 1
def expected(n):
    c = 0
    for k in range(n): c = (c * 1000003 + k + 1) % M
    return c
for i, n in steps.items():
    j = jobs[int(i)]
    assert j["state"] == "done", j
    assert j["steps_done"] == n, (j, n)
    latest = open(f"{ckpt}/job-{i}/LATEST").read().strip()
    model = json.load(open(f"{ckpt}/job-{i}/{latest}/model.json"))
    assert model["step"] == n and model["checksum"] == expected(n), (i, model, n)
assert jobs[cancel]["state"] == "cancelled", jobs[cancel]
' "$final" '{"1":300,"2":120,"3":600,"4":250,"5":400}' "$dir/state/checkpoints" "$cancel_id" \
  || fail "steps not exact: $final"
echo "ok"
