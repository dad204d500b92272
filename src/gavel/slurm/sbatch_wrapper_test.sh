#!/usr/bin/env bash
# scripts/gavel-sbatch against a stand-in `gavel` that records its arguments: the script's
# #SBATCH/#GAVEL lines and the command line become the `gavel submit` a user would type
# (command line winning, GPU counts as the scale factor, a type warned about and dropped),
# sbatch's "Submitted batch job ID" is printed, and bad input is refused naming the line.
set -euo pipefail
src=$1
dir=$(mktemp -d /tmp/gavel_sbatch_XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$dir/gavel" <<FAKE
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > "$dir/args"
echo 42
FAKE
chmod +x "$dir/gavel"
cat >"$dir/train.sh" <<'SCRIPT'
#!/bin/sh
#SBATCH -J resnet --gres=gpu:v100:2
#SBATCH --partition=gpu --time=1:00:00
#SBATCH --export=ALL,LR=0.1
#GAVEL --steps 1000 --gavel-job-type ResNet-50
#GAVEL --gavel-throughput v100=4.5
python3 train.py "$@"
#SBATCH --gres=gpu:8
SCRIPT
out=$(GAVEL="$dir/gavel" "$src/scripts/gavel-sbatch" --scheduler 127.0.0.1:7 -J mine \
      "$dir/train.sh" --epochs 3 2>"$dir/err") || fail "gavel-sbatch: $(cat "$dir/err")"
[ "$out" = "Submitted batch job 42" ] || fail "printed '$out'"
want=(submit --scheduler 127.0.0.1:7 --name resnet --scale-factor 2 --env LR=0.1 --steps 1000
      --job-type ResNet-50 --throughput v100=4.5 --name mine -- /bin/sh "$dir/train.sh" --epochs 3)
mapfile -t got <"$dir/args"
[ "${got[*]}" = "${want[*]}" ] || fail "gavel got '${got[*]}', want '${want[*]}'"
grep -q "GPU type 'v100' ignored" "$dir/err" || fail "no warning for the GPU type: $(cat "$dir/err")"
grep -q -- "--partition ignored" "$dir/err" || fail "no warning for --partition: $(cat "$dir/err")"

# Bad input: refused, naming where.
printf '#!/bin/sh\n#SBATCH --gres=gpu:k80:x\ntrue\n' >"$dir/bad.sh"
if GAVEL="$dir/gavel" "$src/scripts/gavel-sbatch" --steps 1 "$dir/bad.sh" 2>"$dir/err"; then fail "bad GRES accepted"; fi
grep -q "bad.sh:2: 'gpu:k80:x' is not a GPU count" "$dir/err" || fail "message: $(cat "$dir/err")"
printf '#!/bin/sh\ntrue\n' >"$dir/nosteps.sh"
if GAVEL="$dir/gavel" "$src/scripts/gavel-sbatch" "$dir/nosteps.sh" 2>"$dir/err"; then fail "no steps accepted"; fi
grep -q "total steps are required" "$dir/err" || fail "message: $(cat "$dir/err")"
if GAVEL="$dir/gavel" "$src/scripts/gavel-sbatch" --steps 1 --bogus "$dir/nosteps.sh" 2>"$dir/err"; then fail "unknown option accepted"; fi
grep -q "unknown option '--bogus'" "$dir/err" || fail "message: $(cat "$dir/err")"
echo ok
