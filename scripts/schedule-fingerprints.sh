#!/usr/bin/env bash
# Per-job schedules of every scheduler on a fixed set of small workloads, and a byte-for-byte
# comparison of two such sets: the check that a change to the round mechanism (or to anything
# under it) changed no scheduling decision.
#
#   scripts/schedule-fingerprints.sh run GAVEL_BINARY OUT_DIR   one per-job CSV per (scheduler,
#                                                               workload) in OUT_DIR
#   scripts/schedule-fingerprints.sh compare DIR_A DIR_B        lists the files that differ (or
#                                                               exist on one side only); exit 1
#                                                               if any does; per-job CSVs whose
#                                                               headers differ are compared on
#                                                               the columns both write
#
# Typical use: build the old binary, `run` it into /tmp/before; build yours, `run` it into
# /tmp/after; `compare /tmp/before /tmp/after`.
#
# The workloads exercise the mechanism's branches: plain arrivals, multi-GPU jobs on
# multi-GPU servers, all jobs at time 0, the original's quirks (--compat gavel), topology
# placement with restart overheads and failures (--realistic), elastic jobs, utilities (oasis'
# admission), throughput estimation for the packing policies, and SLO deadlines and prices
# (the cost policies). Each is small
# (a 4:4:4 or 8:8:8 cluster, 16-20 jobs in the window, light load) so that the whole set runs in a few minutes on two
# cores. Every (scheduler, workload) pair writes `<scheduler>.<workload>.csv` (the per-job CSV
# of `gavel simulate --jobs-csv`) and `<scheduler>.<workload>.rc` (its exit status and, on
# failure, its error message: a scheduler that refuses a workload must keep refusing it the
# same way). JOBS (default: nproc) runs that many simulations at once. The policies named in
# SLOW_POLICIES (default: the LP policies with space sharing, whose problems take minutes on a
# continuous workload with this many pairs) run only the static workloads. A run whose .rc
# file exists is not repeated (an interrupted `run` resumes).
set -euo pipefail

SLOW_POLICIES="${SLOW_POLICIES:-finish_time_fairness_packed max_min_fairness_packed
  max_min_fairness_water_filling_packed max_sum_throughput_normalized_by_cost_packed_SLOs
  min_total_duration_packed}"
SLOW_POLICIES=$(echo $SLOW_POLICIES)  # one line, single spaces

usage() {
  sed -n '2,12p' "$0" >&2
  exit 2
}

# name|arguments (the workloads; keep them small and deterministic: fixed seeds)
workloads() {
  cat <<'EOF'
plain-s0|-c 4:4:4 --jobs-per-hour 1 -s 0 -e 20 --seed 0
plain-s1|-c 4:4:4 --jobs-per-hour 1.5 -s 0 -e 20 --seed 1
multi-gpu|-c 8:8:8 --num-gpus-per-server 4:4:4 -m --jobs-per-hour 0.7 -s 0 -e 16 --seed 2
static|-c 4:4:4 -l 0 -s 0 -e 16 --seed 3
static-multi-gpu|-c 8:8:8 --num-gpus-per-server 4:4:4 -m -l 0 -s 0 -e 12 --seed 10
static-realistic|-c 8:8:8 --num-gpus-per-server 4:4:4 -m --realistic -l 0 -s 0 -e 12 --seed 11
static-costs|-c 4:4:4 --instance-costs 2.48:1.46:0.9 --assign-slos -l 0 -s 0 -e 12 --seed 12
compat|-c 4:4:4 --jobs-per-hour 1 -s 0 -e 20 --seed 4 --compat gavel
realistic|-c 8:8:8 --num-gpus-per-server 4:4:4 -m --realistic --jobs-per-hour 1 -s 0 -e 20 --seed 5
elastic|-c 8:8:8 --num-gpus-per-server 4:4:4 -m --elastic-fraction 0.5 --jobs-per-hour 0.7 -s 0 -e 16 --seed 6
utility|-c 4:4:4 --utility sigmoid --jobs-per-hour 1.5 -s 0 -e 16 --seed 7
estimated|-c 4:4:4 --profiling-percentage 0.5 --jobs-per-hour 1 -s 0 -e 16 --seed 8
slos|-c 4:4:4 --instance-costs 2.48:1.46:0.9 --assign-slos --generate-multi-priority-jobs --jobs-per-hour 1 -s 0 -e 16 --seed 9
EOF
}

run_one() {  # binary out policy workload args...
  local bin=$1 out=$2 policy=$3 name=$4
  shift 4
  local base="$out/$policy.$name"
  [ -f "$base.rc" ] && return 0
  local err
  if err=$("$bin" simulate -p "$policy" "$@" --progress never \
             --jobs-csv "$base.csv" 2>&1 >/dev/null); then
    echo 0 >"$base.rc"
  else
    local rc=$?
    # Killed (an interrupted run): leave no record, so that a resumed run repeats it.
    if [ "$rc" -gt 128 ]; then rm -f "$base.csv"; return 0; fi
    printf '%s\n%s\n' "$rc" "$err" >"$base.rc"
  fi
}
export -f run_one

cmd_run() {
  local bin out
  bin=$(realpath "$1")
  out=$2
  [ -x "$bin" ] || { echo "not an executable: $1" >&2; exit 2; }
  mkdir -p "$out"
  local policies
  policies=$("$bin" policies | awk 'NF && $1 !~ /^(NAME|name|-)/ {print $1}')
  [ -n "$policies" ] || { echo "$bin policies listed no scheduler" >&2; exit 1; }
  for policy in $policies; do
    while IFS='|' read -r name args; do
      # A policy whose solves grow steeply with the queue runs only the workloads whose jobs
      # all arrive at time 0 (minutes per continuous workload otherwise).
      if [[ " $SLOW_POLICIES " == *" $policy "* && $name != static* ]]; then continue; fi
      echo "$bin $out $policy $name $args"
    done < <(workloads)
  done | xargs -L 1 -P "${JOBS:-$(nproc)}" bash -c 'run_one "$@"' _
  local total failed
  total=$(find "$out" -name '*.rc' | wc -l)
  failed=$(grep -Lx 0 "$out"/*.rc | wc -l || true)
  echo "$total runs in $out ($failed refused or failed; see the .rc files)"
}

# Two per-job CSVs whose headers differ (a binary that writes more columns) hold the same
# schedule when every column both name holds the same cells, row by row.
same_on_shared_columns() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as fa, open(sys.argv[2], newline="") as fb:
    a, b = list(csv.DictReader(fa)), list(csv.DictReader(fb))
shared = [c for c in (a[0].keys() if a else []) if b and c in b[0]]
same = len(a) == len(b) and shared and all(
    [ra[c] for c in shared] == [rb[c] for c in shared] for ra, rb in zip(a, b))
sys.exit(0 if same else 1)
PY
}

cmd_compare() {
  local a=$1 b=$2 differ=0 reshaped=0
  [ -d "$a" ] && [ -d "$b" ] || { echo "compare needs two directories" >&2; exit 2; }
  while read -r f; do
    if [ ! -f "$a/$f" ] || [ ! -f "$b/$f" ]; then
      echo "only on one side: $f"
      differ=1
    elif ! cmp -s "$a/$f" "$b/$f"; then
      if [[ $f == *.csv ]] && same_on_shared_columns "$a/$f" "$b/$f"; then
        reshaped=$((reshaped + 1))
      else
        echo "differs: $f"
        differ=1
      fi
    fi
  done < <( (cd "$a" && ls; cd "$b" && ls) | sort -u)
  local n
  n=$( (cd "$a" && ls; cd "$b" && ls) | sort -u | wc -l)
  if [ "$differ" -eq 0 ]; then
    echo "identical: $n files"
  fi
  if [ "$reshaped" -gt 0 ]; then
    echo "($reshaped per-job CSVs compared on the columns both sides write: their headers differ)"
  fi
  return "$differ"
}

[ $# -ge 1 ] || usage
case "$1" in
  run) [ $# -eq 3 ] || usage; cmd_run "$2" "$3" ;;
  compare) [ $# -eq 3 ] || usage; cmd_compare "$2" "$3" ;;
  *) usage ;;
esac
