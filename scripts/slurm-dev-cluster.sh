#!/usr/bin/env bash
# slurm-dev-cluster.sh start|stop|env DIR — a loopback Slurm cluster that lives entirely in DIR.
#
#   start DIR  writes DIR/slurm.conf, DIR/gres.conf and a fresh munge key, starts munged (its own
#              socket in DIR), slurmctld and one slurmd per node (all on 127.0.0.1, free ports),
#              waits until every node is idle, and prints the environment to use:
#                  export SLURM_CONF=DIR/etc/slurm.conf
#              (eval "$(scripts/slurm-dev-cluster.sh start DIR)" sets it in the calling shell).
#   stop DIR   cancels the cluster's jobs and waits for their steps to end, then stops every
#              daemon started from DIR (by the pid files in DIR) and waits for them.
#   env DIR    prints the environment again.
#
# The nodes have fake GPUs declared as GRES of two types (docs/slurm.md): by default
#   gnode1: gpu:k80:2    gnode2: gpu:v100:2    gnode3: gpu:k80:1,gpu:v100:1
# GAVEL_SLURM_NODES overrides the layout: "name=gres;name=gres", e.g.
#   GAVEL_SLURM_NODES="a=gpu:k80:4;b=gpu:p100:2,gpu:v100:2"
# Each GPU is a File= entry naming a device node that exists in every Linux container (/dev/null's
# character-device siblings are not needed: Slurm only stat()s the file and, with the
# task/none plugin, never confines a job to it); CUDA_VISIBLE_DEVICES is set by Slurm as for
# real GPUs. No cgroups and no systemd are needed (proctrack/pgid, task/none): this is a
# development cluster, not an isolating one.
#
# Needs root (slurmd runs jobs as their submitting user) and Debian's slurm-wlm and munge
# (scripts/install-deps.sh). Safe to run several clusters side by side in different DIRs.
set -euo pipefail

usage() { echo "usage: $0 start|stop|env DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

print_env() {
  echo "export SLURM_CONF=$dir/etc/slurm.conf"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

stop_pidfile() {  # stop_pidfile FILE: TERM the process named in FILE and wait for it to go
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# The node layout, as "name gres" lines.
node_lines() {
  local spec=${GAVEL_SLURM_NODES:-"gnode1=gpu:k80:2;gnode2=gpu:v100:2;gnode3=gpu:k80:1,gpu:v100:1"}
  local IFS=';'
  for entry in $spec; do
    [ -n "$entry" ] || continue
    case $entry in
      *=gpu:*) echo "${entry%%=*} ${entry#*=}" ;;
      *) echo "slurm-dev-cluster: bad node entry '$entry' in GAVEL_SLURM_NODES (want name=gpu:TYPE:N[,...])" >&2; exit 2 ;;
    esac
  done
}

start() {
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || { echo "slurm-dev-cluster: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "slurm-dev-cluster: needs root (slurmd)" >&2; exit 1; }
  if [ -s "$dir/run/slurmctld.pid" ] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
    echo "slurm-dev-cluster: a cluster already runs in $dir (stop it first)" >&2; exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$dir/etc" "$dir/munge" "$dir/run" "$dir/log" "$dir/state" "$dir/spool"
  chmod 0700 "$dir/munge"

  # munge: its own key and socket, so that the cluster trusts only itself.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed"

  local host ctld_port node_lines_out
  host=$(hostname -s)
  ctld_port=$(free_port)
  node_lines_out=$(node_lines)
  local cpus
  cpus=$(nproc)
  {
    echo "# Written by scripts/slurm-dev-cluster.sh: a loopback development cluster."
    echo "ClusterName=gaveldev"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
    echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/pgid"
    echo "TaskPlugin=task/none"
    echo "SwitchType=switch/none"
    echo "MpiDefault=none"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=gpu"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "ReturnToService=2"
    echo "MinJobAge=300"
    echo "KillWait=5"
    echo "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    echo "# GPUs of each node; every node is the one loopback host on its own port."
    local name gres port nodes=""
    while read -r name gres; do
      port=$(free_port)
      echo "NodeName=$name NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=$cpus RealMemory=1000 Gres=$gres State=UNKNOWN"
      nodes="${nodes:+$nodes,}$name"
    done <<<"$node_lines_out"
    echo "PartitionName=gpu Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$dir/etc/slurm.conf"

  # gres.conf: one File= per fake GPU (distinct tty devices: Slurm needs distinct files to
  # count devices, and only stat()s them).
  local tty=0 item type count
  {
    echo "AutoDetect=off"
    while read -r name gres; do
      local IFS=','
      for item in $gres; do
        type=$(cut -d: -f2 <<<"$item")
        count=$(cut -d: -f3 <<<"$item")
        echo "NodeName=$name Name=gpu Type=$type File=/dev/tty[$tty-$((tty + count - 1))]"
        tty=$((tty + count))
      done
      unset IFS
    done <<<"$node_lines_out"
  } >"$dir/etc/gres.conf"

  export SLURM_CONF=$dir/etc/slurm.conf
  slurmctld -f "$SLURM_CONF"
  while read -r name gres; do
    mkdir -p "$dir/spool/$name"
    slurmd -f "$SLURM_CONF" -N "$name"
  done <<<"$node_lines_out"

  # Wait until every node is idle (slurmd registered with its GRES).
  local want got
  want=$(wc -l <<<"$node_lines_out")
  for _ in $(seq 300); do
    got=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || true)
    [ "$got" -ge "$want" ] && { print_env; return 0; }
    sleep 0.1
  done
  echo "slurm-dev-cluster: nodes did not come up within 30 s; logs in $dir/log" >&2
  sinfo -N -o '%N %T %G %E' >&2 || true
  exit 1
}

# The slurmstepd processes of this cluster: each keeps its step's socket in the cluster's spool.
cluster_stepds() {
  local pid
  for pid in $(pgrep -x slurmstepd 2>/dev/null || true); do
    if ls -l "/proc/$pid/fd" 2>/dev/null | grep -qF -- "$dir/"; then echo "$pid"; fi
  done
}

# Cancels every job of the cluster and waits until its steps are gone: slurmd does not end the
# steps it started when it stops (each runs under its own slurmstepd), so without this the
# jobs' processes (the pilots' `gavel worker`s, their training processes) outlive the cluster.
# scancel sends SIGTERM, then SIGKILL after KillWait (5 s); whatever remains after that is
# killed here.
cancel_jobs() {
  local ctld=$dir/run/slurmctld.pid ids pids
  if [ -s "$ctld" ] && kill -0 "$(cat "$ctld")" 2>/dev/null; then
    ids=$(SLURM_CONF=$dir/etc/slurm.conf squeue -h -o '%A' 2>/dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086  # one argument per job id
      SLURM_CONF=$dir/etc/slurm.conf scancel $ids 2>/dev/null || true
      for _ in $(seq 150); do
        [ -z "$(SLURM_CONF=$dir/etc/slurm.conf squeue -h -o '%A' 2>/dev/null || true)" ] && break
        sleep 0.1
      done
    fi
  fi
  for _ in $(seq 100); do
    pids=$(cluster_stepds)
    [ -z "$pids" ] && return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

stop() {
  [ -d "$dir" ] || { echo "slurm-dev-cluster: no directory $dir" >&2; exit 1; }
  dir=$(cd "$dir" && pwd)
  cancel_jobs
  local f
  for f in "$dir"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  stop_pidfile "$dir/run/slurmctld.pid"
  stop_pidfile "$dir/run/munged.pid"
  return 0
}

case $cmd in
  start) start ;;
  stop) stop ;;
  env) dir=$(cd "$dir" && pwd); print_env ;;
  *) usage ;;
esac
