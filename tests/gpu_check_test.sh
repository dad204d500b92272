#!/usr/bin/env bash
# scripts/gpu-check.sh without a GPU.
#   gpu_check_test.sh plan SOURCE_DIR      its plan (--dry-run) on cuda and on cpu, and bad options
#   gpu_check_test.sh cpu GAVEL SOURCE_DIR its profile and register steps run on the CPU
# Exit 77 (skipped) when the cpu run finds no python3 that imports torch and torchvision.
set -uo pipefail
mode="$1"
fail() { echo "gpu_check_test: $*" >&2; exit 1; }

if [ "$mode" = plan ]; then
  script="$2/scripts/gpu-check.sh"
  plan="$("$script" --dry-run)" || fail "cuda plan exited $?"
  for want in "[build] cmake --build --preset release --target gavel runtime_torch_e2e_test" \
              "profile --device cuda --gpu-type gpu --pairs --steps 20 --warmup 3" \
              "--models CycleGAN" "--models A3C" \
              "[torch] env GAVEL_TRAIN_DEVICE=cuda" "  torch: planned"; do
    grep -qF -- "$want" <<<"$plan" || fail "cuda plan lacks '$want':"$'\n'"$plan"
  done
  plan="$("$script" --device cpu --gpu-type mycpu --dry-run)" || fail "cpu plan exited $?"
  for want in "profile --device cpu --gpu-type mycpu --pairs --steps 1 --warmup 0 --max-batch 1" \
              "worker --type mycpu" "[torch] env GAVEL_TRAIN_DEVICE=cpu"; do
    grep -qF -- "$want" <<<"$plan" || fail "cpu plan lacks '$want':"$'\n'"$plan"
  done
  grep -qF -- "--models CycleGAN" <<<"$plan" && fail "the cpu plan profiles CycleGAN"
  "$script" --device tpu >/dev/null 2>&1; [ $? = 2 ] || fail "--device tpu not refused"
  "$script" --only bogus --dry-run >/dev/null 2>&1; [ $? = 2 ] || fail "--only bogus not refused"
  "$script" --gavel /bin/true --dry-run >/dev/null 2>&1; [ $? = 2 ] ||
    fail "--gavel with the torch step not refused"
  echo "gpu_check_test: plans ok"
  exit 0
fi

gavel="$2"
script="$3/scripts/gpu-check.sh"
python3 -c 'import torch, torchvision' 2>/dev/null || /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null ||
  { echo "gpu_check_test: no python3 imports torch and torchvision: skipped"; exit 77; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
log="$("$script" --device cpu --gpu-type cpucheck --only profile,register --gavel "$gavel" --out "$out" 2>&1)"
code=$?
echo "$log"
[ $code = 0 ] || fail "the cpu run exited $code"
grep -q "  profile: ok" <<<"$log" || fail "no profile: ok"
grep -q "  register: ok" <<<"$log" || fail "no register: ok"
grep -q "ResNet-50 (batch size 64).*alone" <<<"$log" || fail "no rate printed"
echo "gpu_check_test: cpu run ok"
