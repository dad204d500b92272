#!/usr/bin/env bash
# Test of scripts/slurm-dev-cluster.sh: start a loopback cluster in a fresh directory, check
# that Slurm itself reports the GPU GRES the script was asked for (sinfo, independent of the
# script's files), that srun places a job on a node of the requested GPU type and hands it as
# many devices as it asked for, that everything lives under the directory, and that stop leaves
# no daemon and no job step behind. Exit 77 (skipped) without root or Slurm.
set -euo pipefail
script=$1/scripts/slurm-dev-cluster.sh
. "$(dirname "$0")/test_lib.sh"
slurm_test_dir dev
cleanup() { "$script" stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$dir"/log/*; do echo "== $f" >&2; tail -n 20 "$f" >&2; done; exit 1; }

export GAVEL_SLURM_NODES="na=gpu:k80:2;nb=gpu:v100:1,gpu:p100:2"
env_line=$("$script" start "$dir") || fail "start"
[ "$env_line" = "export SLURM_CONF=$dir/etc/slurm.conf" ] || fail "printed '$env_line'"
eval "$env_line"

# Slurm's own view of the GRES, node by node.
got=$(sinfo -h -N -o '%N %G' | sort)
want=$'na gpu:k80:2\nnb gpu:v100:1,gpu:p100:2'
[ "$got" = "$want" ] || fail "sinfo shows '$got', want '$want'"
[ "$(sinfo -h -N -t idle -o '%N' | wc -l)" -eq 2 ] || fail "nodes not idle"

# srun by GPU type lands on the node that has it, with that many devices.
out=$(timeout 60 srun --gres=gpu:p100:2 bash -c 'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"') \
  || fail "srun p100"
set -- $out
[ "$1" = nb ] || fail "p100 job ran on '$1'"
[ "$(tr ',' '\n' <<<"$2" | wc -l)" -eq 2 ] || fail "p100 job saw devices '$2'"
out=$(timeout 60 srun --gres=gpu:k80:1 bash -c 'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"') \
  || fail "srun k80"
set -- $out
[ "$1" = na ] || fail "k80 job ran on '$1'"
[ "$(tr ',' '\n' <<<"$2" | wc -l)" -eq 1 ] || fail "k80 job saw devices '$2'"
# A request no node can satisfy is refused, not queued for ever.
if timeout 30 srun --immediate=5 --gres=gpu:v100:2 true 2>/dev/null; then fail "v100:2 ran"; fi

# Everything under the directory: the config names no path outside it but devices and tools.
if grep -E '=/' "$dir/etc/slurm.conf" | grep -v "=$dir" >/dev/null; then
  fail "slurm.conf names paths outside $dir"
fi

# A running batch job with a step (as the pilots are): stop must end the step's processes too,
# not only the daemons. The step's command records its pid in the directory.
sbatch --gres=gpu:k80:1 -o "$dir/log/job.out" \
  --wrap "srun bash -c 'echo \$\$ > $dir/step.pid; exec sleep 600'" >/dev/null || fail "sbatch"
for _ in $(seq 300); do [ -s "$dir/step.pid" ] && break; sleep 0.1; done
[ -s "$dir/step.pid" ] || fail "the job's step did not start"
step_pid=$(cat "$dir/step.pid")
kill -0 "$step_pid" 2>/dev/null || fail "step process $step_pid not running"

pids=$(cat "$dir"/run/*.pid)
"$script" stop "$dir" || fail "stop"
for pid in $pids; do
  if kill -0 "$pid" 2>/dev/null; then fail "process $pid still runs after stop"; fi
done
if kill -0 "$step_pid" 2>/dev/null; then fail "the job's step process $step_pid still runs after stop"; fi
if pgrep -x slurmstepd >/dev/null && for p in $(pgrep -x slurmstepd); do ls -l /proc/$p/fd 2>/dev/null; done | grep -qF "$dir/"; then
  fail "a slurmstepd of the cluster still runs after stop"
fi
echo "ok"
