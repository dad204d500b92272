#!/usr/bin/env bash
# End to end: `gavel sweep --slurm` on the loopback Slurm of scripts/slurm-dev-cluster.sh.
# Truths: the CSV a Slurm sweep gathers has exactly the rows of the same sweep run locally
# (every column but wall_seconds); a point whose array task fails (cancelled here while
# pending, the partition held down so it cannot have started) leaves no row, makes the sweep
# exit 1 naming it, and a rerun runs only that point (an array of one task) and completes
# the CSV.
# Usage: sweep_e2e_test.sh GAVEL_BINARY SOURCE_DIR. Exit 77 (skipped) without root or Slurm.
set -euo pipefail
gavel=$1
src=$2
. "$(dirname "$0")/test_lib.sh"
slurm_test_dir sweep
cleanup() {
  "$src/scripts/slurm-dev-cluster.sh" stop "$dir/cluster" >/dev/null 2>&1 || true
  if [ "${keep:-0}" = 1 ]; then echo "keeping $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
fail() { keep=1; echo "FAIL: $*" >&2; exit 1; }
eval "$("$src/scripts/slurm-dev-cluster.sh" start "$dir/cluster")"
cd "$dir"

sweep=("$gavel" sweep -c 4:4:4 -p fifo,max_min_fairness_perf --seeds 0,1 --rates 0 -s 2 -e 8)
"${sweep[@]}" --out local >local.log 2>&1 || fail "local sweep: $(cat local.log)"

# The first Slurm sweep: its array waits on a partition held down; task 1 is cancelled.
scontrol update PartitionName=gpu State=DOWN
"${sweep[@]}" --out slurm --slurm --slurm-partition gpu >first.log 2>&1 &
sweep_pid=$!
array=""
for _ in $(seq 200); do
  array=$(squeue -h -n gavel-sweep -o '%F' | head -n1)
  [ -n "$array" ] && break
  sleep 0.1
done
[ -n "$array" ] || fail "no array submitted: $(cat first.log)"
scancel "${array}_1"
scontrol update PartitionName=gpu State=UP
status=0
wait "$sweep_pid" || status=$?
[ "$status" -eq 1 ] || fail "first sweep exited $status, want 1: $(cat first.log)"
grep -q "point(s) failed" first.log || fail "no failure reported: $(cat first.log)"
grep -q "task-${array}_1.out" first.log || fail "failed task's log not named: $(cat first.log)"
[ "$(($(wc -l <slurm/sweep.csv) - 1))" -eq 3 ] || fail "want 3 rows: $(cat slurm/sweep.csv)"

# The rerun: one task, and the CSV complete.
"${sweep[@]}" --out slurm --slurm >second.log 2>&1 || fail "rerun: $(cat second.log)"
grep -q "job array [0-9]*, 1 task(s)" second.log || fail "rerun did not run one task: $(cat second.log)"

python3 - local/sweep.csv slurm/sweep.csv <<'PY' || fail "CSVs differ"
import csv, sys
def rows(path):
    with open(path) as f:
        out = []
        for row in csv.DictReader(f):
            row.pop("wall_seconds")
            out.append(tuple(sorted(row.items())))
        return sorted(out)
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == 4, a
assert a == b, (a, b)
PY
[ -s slurm/report.html ] || fail "no report"
echo "ok"
