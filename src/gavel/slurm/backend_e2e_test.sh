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
#   * every job lease ran as a job step of a pilot: squeue -s (sampled all along) lists steps
#     named gavel-job-J.round-R.worker-W of the pilots' job ids, each with one GPU of its
#     pilot's type by GRES, for every job; the job itself saw SLURM_STEP_ID and exactly one
#     CUDA_VISIBLE_DEVICES entry, in its pilot's allocation;
#   * an orderly stop (SIGTERM) of the daemon ends its pilots, and the job they ran was
#     checkpointed and reported before the daemon went (its restart knows the checkpoint's
#     step); with --slurm-keep-pilots the pilots outlive the stop.
# Usage: backend_e2e_test.sh GAVEL_BINARY SOURCE_DIR. Exit 77 (skipped) without root or Slurm.
set -euo pipefail
gavel=$1
src=$2
. "$(dirname "$0")/test_lib.sh"
slurm_test_dir e2e
daemon_pid=""
poller_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null || true
  [ -n "$poller_pid" ] && kill -KILL "$poller_pid" 2>/dev/null || true
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
  "$gavel" serve --backend slurm --listen "127.0.0.1:${port:-0}" --state "$dir/state" "$@" \
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
jobs_json() { "$gavel" jobs --scheduler "$addr" --all -o json; }
py() { PYTHONPATH="$src/python" python3 -c "$@"; }

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
# Slurm's own view of the job steps, sampled until the end (no slurmdbd here, so no sacct).
( while :; do squeue -h -s -o '%i|%j|%b' 2>/dev/null | grep '|gavel-job-' || true; sleep 0.2; done \
    >>"$dir/steps.log" ) &
poller_pid=$!
disown "$poller_pid"

# ---- Jobs ----
declare -A steps=([1]=300 [2]=120 [3]=600 [4]=250 [5]=400)
types=("" "ResNet-18 (batch size 64)" "Transformer (batch size 16)" "LM (batch size 20)" \
       "ResNet-18 (batch size 64)" "LM (batch size 20)")
for i in 1 2 3 4; do
  # The job notes what its process saw of Slurm, then runs the training program.
  id=$("$gavel" submit --scheduler "$addr" --steps "${steps[$i]}" --job-type "${types[$i]}" \
       -- sh -c 'echo "$GAVEL_JOB_ID $SLURM_JOB_ID ${SLURM_STEP_ID:-none} ${CUDA_VISIBLE_DEVICES:-none}" \
                   >>"$0/seen.log"; exec "$@"' "$dir" \
          python3 "$src/examples/training/train.py" --exec-log "$dir/exec-$i.log")
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
from gavel_iterator import CheckpointStore
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
    latest = CheckpointStore(f"{ckpt}/job-{i}").latest()[0]
    model = json.load(open(f"{latest}/model.json"))
    assert model["step"] == n and model["checksum"] == expected(n), (i, model, n)
assert jobs[cancel]["state"] == "cancelled", jobs[cancel]
' "$final" '{"1":300,"2":120,"3":600,"4":250,"5":400}' "$dir/state/checkpoints" "$cancel_id" \
  || fail "steps not exact: $final"

# ---- Every job lease was a Slurm step of a pilot, with one GPU of the pilot's type ----
py '
import sys
pilots = {}  # job id -> GPU type, from squeue before any job ran
for line in sys.argv[1].splitlines():
    job, name, node = line.split()
    pilots[job] = name.rsplit(".", 1)[1]
seen = {}
for line in open(sys.argv[2]):
    step, name, tres = line.strip().split("|")
    job, _, number = step.partition(".")
    assert job in pilots and number.isdigit(), ("a step outside the pilots", line)
    assert tres == "gres:gpu:%s:1" % pilots[job], ("not one GPU of the pilot type", line)
    gavel_job = name.split(".")[0][len("gavel-job-"):]
    seen.setdefault(gavel_job, set()).add(step)
for i in "12345":
    assert seen.get(i), ("no Slurm step seen for job", i, sorted(seen))
for line in open(sys.argv[3]):
    gavel_job, slurm_job, step, devices = line.split()
    assert slurm_job in pilots and step.isdigit(), ("job process outside a step", line)
    assert len(devices.split(",")) == 1 and devices != "none", ("not one GPU bound", line)
print("steps per job:", {j: len(s) for j, s in sorted(seen.items())})
' "$pilots_before" "$dir/steps.log" "$dir/seen.log" || fail "job leases were not Slurm steps"

# ---- An orderly stop ends the pilots; the job they ran is checkpointed and reported ----
long_id=$("$gavel" submit --scheduler "$addr" --steps 100000 --job-type "ResNet-18 (batch size 64)" \
          -- python3 "$src/examples/training/train.py")
for _ in $(seq 150); do
  done_now=$(jobs_json | py 'import json,sys; print(next(j["steps_done"] for j in json.load(sys.stdin) if j["id"]=='"$long_id"'))')
  [ "$done_now" -gt 0 ] && break
  sleep 0.2
done
[ "$done_now" -gt 0 ] || fail "job $long_id made no progress"
kill -TERM "$daemon_pid"
for _ in $(seq 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon_pid" 2>/dev/null && fail "gavel serve did not stop within 30 s of SIGTERM"
wait "$daemon_pid" || fail "gavel serve exited non-zero after SIGTERM"
daemon_pid=""
left=$(squeue -h -o '%i %j %T' | grep ' gavel-' || true)
[ -z "$left" ] || fail "pilots left after an orderly stop: $left"
grep -q "ended 4 pilots" "$dir/serve.err" || fail "the daemon did not report ending its pilots"
ckpt=$(py 'import json,sys
from gavel_iterator import CheckpointStore
latest=CheckpointStore(sys.argv[1]).latest()[0]
print(json.load(open(latest+"/model.json"))["step"])' "$dir/state/checkpoints/job-$long_id")
start_daemon --slurm-keep-pilots
recorded=$(jobs_json | py 'import json,sys; print(next(j["steps_done"] for j in json.load(sys.stdin) if j["id"]=='"$long_id"'))')
[ "$recorded" -eq "$ckpt" ] && [ "$ckpt" -gt 0 ] \
  || fail "job $long_id: checkpoint at step $ckpt, the restarted daemon recorded $recorded"
# The SIGTERM reached the training process through its Slurm step (srun itself would have
# SIGKILLed the step): the iterator says so in the job's log, at the checkpoint's step.
grep -qs "stopped by SIGTERM at step $ckpt\$" "$dir"/state/slurm/*/logs/job-"$long_id".err \
  || fail "job $long_id: no 'stopped by SIGTERM at step $ckpt' in its log"

# ---- With --slurm-keep-pilots they outlive the stop ----
for _ in $(seq 150); do
  kept=$(squeue -h -t running -o '%i %j' | grep ' gavel-' | sort || true)
  [ "$(wc -l <<<"$kept")" -eq 4 ] && [ -n "$kept" ] && break
  sleep 0.2
done
"$gavel" cancel --scheduler "$addr" "$long_id" >/dev/null || fail "cancel $long_id"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "gavel serve --slurm-keep-pilots exited non-zero after SIGTERM"
daemon_pid=""
after_keep=$(squeue -h -t running -o '%i %j' | grep ' gavel-' | sort || true)
[ "$after_keep" = "$kept" ] || fail "--slurm-keep-pilots: pilots '$kept' -> '$after_keep'"
grep -q "leaving the pilots running" "$dir/serve.err" || fail "no --slurm-keep-pilots message"
echo "ok"
