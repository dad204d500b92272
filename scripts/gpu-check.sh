#!/usr/bin/env bash
# The accelerator check: one command for a Linux machine with an NVIDIA GPU (docs/profiling.md,
# "The accelerator check"). It builds what it needs, then
#   1. profile   `gavel profile` on the device: seven job types alone and every pair of them
#                sharing the one device, both members' co-located rates measured;
#   2. register  `gavel serve` with those rows beside the shipped table, and a `gavel worker`
#                of the profiled type registering (a type the shipped table lacks);
#   3. torch     the PyTorch end-to-end test on the device (runtime_torch_e2e_test): a
#                single-GPU job and a 2-rank DDP job through agents, an agent and its jobs
#                killed with -9 and the daemon killed with -9, both jobs finishing with exactly
#                their steps and the weights of an uninterrupted run;
# prints a summary and exits non-zero when any step failed.
#
#   scripts/gpu-check.sh [--device cuda|cpu] [--gpu-type NAME] [--out DIR] [--dry-run]
#                        [--only profile,register,torch] [--gavel BIN]
#
# --device cpu runs the same steps on the CPU with tiny settings (a check of the script itself
# on a machine without a GPU); --dry-run prints the commands without running any; --only runs
# some of the steps; --gavel uses that binary and builds nothing (without the torch step).
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
device=cuda
gpu_type=""
out=""
dry=0
only="profile,register,torch"
gavel=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --gpu-type) gpu_type="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --gavel) gavel="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$device" in
  cuda|cpu) ;;
  *) echo "gpu-check: --device must be cuda or cpu, not $device" >&2; exit 2 ;;
esac
[ -n "$gpu_type" ] || gpu_type="$([ "$device" = cpu ] && echo cpu || echo gpu)"
[ -n "$out" ] || out="$root/build/gpu-check"
build_it=1
if [ -n "$gavel" ]; then
  build_it=0
  case ",$only," in *,torch,*) echo "gpu-check: --gavel builds nothing: leave out the torch step (--only)" >&2; exit 2 ;; esac
fi
[ -n "$gavel" ] || gavel="$root/build/release/src/gavel/cli/gavel"
for step in ${only//,/ }; do
  case "$step" in profile|register|torch) ;; *) echo "gpu-check: --only: unknown step $step" >&2; exit 2 ;; esac
done
wanted() { case ",$only," in *,"$1",*) return 0 ;; esac; return 1; }
torch_test="$root/build/release/src/gavel/daemon/runtime_torch_e2e_test"
rows="$out/profile-$gpu_type.json"

if [ "$device" = cuda ]; then
  steps=(--steps 20 --warmup 3)
  models=("ResNet-18 (batch size 64)" "ResNet-50 (batch size 64)" "Transformer (batch size 64)"
          "LM (batch size 20)" "Recommendation (batch size 1024)" "A3C" "CycleGAN")
else
  steps=(--steps 1 --warmup 0 --max-batch 1)
  models=("ResNet-18 (batch size 64)" "ResNet-50 (batch size 64)")
fi
model_args=()
for m in "${models[@]}"; do model_args+=(--models "$m"); done

results=()
failed=0
# run NAME COMMAND...: runs (or prints) one step and records its outcome.
run() {
  local name="$1"; shift
  if [ "$dry" = 1 ]; then
    printf '[%s]' "$name"; printf ' %q' "$@"; printf '\n'
    results+=("$name: planned")
    return 0
  fi
  echo "== $name: $*" >&2
  local start=$SECONDS
  if "$@"; then
    results+=("$name: ok ($((SECONDS - start)) s)")
  else
    results+=("$name: FAILED (exit $?, $((SECONDS - start)) s)")
    failed=1
  fi
}

preflight() {
  if [ "$device" = cuda ]; then
    command -v nvidia-smi >/dev/null || { echo "gpu-check: no nvidia-smi: no NVIDIA driver here" >&2; return 1; }
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || return 1
  fi
  local python
  for python in python3 /usr/bin/python3; do
    if "$python" -c 'import torch, torchvision' 2>/dev/null; then
      "$python" -c "import torch; print('torch', torch.__version__, 'cuda available:', torch.cuda.is_available())"
      if [ "$device" = cuda ]; then
        "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' ||
          { echo "gpu-check: torch sees no CUDA device (Debian's python3-torch is CPU-only: use a CUDA build of PyTorch, e.g. GAVEL_TEST_PYTHON=/path/to/venv/bin/python3)" >&2; return 1; }
      fi
      return 0
    fi
  done
  echo "gpu-check: no python3 imports torch and torchvision (scripts/install-deps.sh)" >&2
  return 1
}

build() {
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  if command -v ccache >/dev/null; then
    export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  fi
  (cd "$root" &&
    { [ -f build/release/build.ninja ] || cmake --preset release >/dev/null; } &&
    cmake --build --preset release --target gavel runtime_torch_e2e_test)
}

profile() {
  mkdir -p "$out" && "$gavel" profile --device "$device" --gpu-type "$gpu_type" --pairs \
    "${steps[@]}" "${model_args[@]}" --out "$rows" || return 1
  # Every measured job type ran alone, and both members of every pair ran next to each other.
  python3 - "$rows" "$gpu_type" "${models[@]}" <<'EOF'
import json, sys
rows, gpu_type, models = json.load(open(sys.argv[1]))[sys.argv[2]], sys.argv[2], sys.argv[3:]
bad = 0
for a in models:
    alone = rows["('%s', 1)" % a]["null"]
    print("%-34s alone %9.3f steps/s" % (a, alone))
    bad += alone <= 0
    for b in models[models.index(a):]:
        together = rows["('%s', 1)" % a]["('%s', 1)" % b]
        print("  next to %-34s %9.3f + %9.3f steps/s" % (b, together[0], together[1]))
sys.exit(1 if bad else 0)
EOF
}

register() {
  local dir="$out/register" port=$((50200 + RANDOM % 500))
  rm -rf "$dir" && mkdir -p "$dir"
  "$gavel" serve --listen "127.0.0.1:$port" --state "$dir/state" --round-seconds 30 \
    --throughputs-extra "$rows" >"$dir/serve.log" 2>&1 &
  local serve=$!
  sleep 2
  "$gavel" worker --scheduler "127.0.0.1:$port" --type "$gpu_type" --gpus 1 \
    --work-dir "$dir/worker" >"$dir/worker.log" 2>&1 &
  local worker=$!
  local ok=1 i
  for i in $(seq 1 30); do
    if "$gavel" workers --scheduler "127.0.0.1:$port" -o json 2>/dev/null | grep -q "\"$gpu_type\""; then
      ok=0; break
    fi
    sleep 1
  done
  kill "$worker" "$serve" 2>/dev/null
  wait "$worker" "$serve" 2>/dev/null
  [ $ok = 0 ] || { echo "gpu-check: the $gpu_type worker did not register:"; tail -5 "$dir/serve.log" "$dir/worker.log"; }
  return $ok
}

torch_job() {
  GAVEL_TRAIN_DEVICE="$device" "$torch_test" --gtest_brief=1
}

if [ "$dry" = 1 ]; then
  [ $build_it = 1 ] && run build cmake --build --preset release --target gavel runtime_torch_e2e_test
  wanted profile && run profile "$gavel" profile --device "$device" --gpu-type "$gpu_type" --pairs \
    "${steps[@]}" "${model_args[@]}" --out "$rows"
  wanted register && run register "$gavel" serve --throughputs-extra "$rows" "..." "+" "$gavel" \
    worker --type "$gpu_type"
  wanted torch && run torch env GAVEL_TRAIN_DEVICE="$device" "$torch_test"
else
  run preflight preflight
  [ $failed = 0 ] && [ $build_it = 1 ] && run build build
  if [ $failed = 0 ]; then
    wanted profile && run profile profile
    wanted register && run register register
    wanted torch && run torch torch_job
  fi
fi

echo "== gpu-check summary (device $device, type $gpu_type, rows $rows)"
printf '  %s\n' "${results[@]}"
exit $failed
