#!/usr/bin/env bash
# The `gavel` front (src/gavel/cli/front_main.cc): the client commands run in it without the
# solvers' libraries, and every other command is the engine's, answered as the engine answers.
# Usage: front_test.sh GAVEL_FRONT GAVEL_ENGINE
set -euo pipefail
front=$1
engine=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "front_test: $*" >&2; exit 1; }

# What the client commands need and nothing of the engine's: no Coin-OR, LAPACK, Slurm, SQLite
# or mimalloc among the front's own shared libraries; the engine has them (a check that a
# renamed library cannot pass by accident).
readelf -d "$front" | grep NEEDED > "$tmp/front.needed"
readelf -d "$engine" | grep NEEDED > "$tmp/engine.needed"
grep -q 'libgrpc++' "$tmp/front.needed" || fail "the front does not link gRPC: $(cat "$tmp/front.needed")"
for lib in libClp libCbc libslurm libsqlite3 liblapack libmimalloc; do
  if grep -q "$lib" "$tmp/front.needed"; then fail "the front links $lib"; fi
done
grep -q 'libClp' "$tmp/engine.needed" || fail "the engine does not link libClp: the check above proves nothing"

# Another command: the engine's answer, byte for byte, and its exit status.
"$front" policies > "$tmp/front.out"
"$engine" policies > "$tmp/engine.out"
cmp -s "$tmp/front.out" "$tmp/engine.out" || fail "gavel policies differs from gavel-engine policies"
front_status=0
"$front" allocate --no-such-flag > /dev/null 2> "$tmp/front.err" || front_status=$?
engine_status=0
"$engine" allocate --no-such-flag > /dev/null 2> "$tmp/engine.err" || engine_status=$?
[ "$front_status" -ne 0 ] || fail "a bad allocate flag was accepted"
[ "$front_status" -eq "$engine_status" ] || fail "a bad flag exits $front_status, the engine $engine_status"
cmp -s "$tmp/front.err" "$tmp/engine.err" || fail "a bad flag's error differs: $(cat "$tmp/front.err")"
"$front" --help > "$tmp/help"
for command in simulate serve jobs submit; do
  grep -q "^  $command" "$tmp/help" || fail "gavel --help does not list $command"
done

# The front alone, without the engine beside it: client commands still run (here against no
# scheduler: the client's own error), every other command names the missing engine.
cp "$front" "$tmp/gavel"
status=0
"$tmp/gavel" policies > /dev/null 2> "$tmp/err" || status=$?
[ "$status" -eq 127 ] || fail "without the engine, policies exited $status, not 127"
grep -q "$tmp/gavel-engine" "$tmp/err" || fail "the error does not name the engine: $(cat "$tmp/err")"
status=0
"$tmp/gavel" jobs --scheduler 127.0.0.1:1 --timeout-seconds 2 > /dev/null 2> "$tmp/err" || status=$?
[ "$status" -eq 1 ] || fail "gavel jobs against no scheduler exited $status, not 1: $(cat "$tmp/err")"
if grep -q 'gavel-engine' "$tmp/err"; then fail "gavel jobs went to the engine: $(cat "$tmp/err")"; fi
echo "front_test: ok"
