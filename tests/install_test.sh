#!/usr/bin/env bash
# `cmake --install` (the README's `make install`) puts the shipped data files under
# PREFIX/share/gavel, and the installed `gavel` reads them from there rather than from the
# source tree it was built from (src/gavel/core/shipped_data.h); GAVEL_DATA_DIR overrides.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
data="$tmp/prefix/share/gavel"
for f in simulation_throughputs.json placement_penalty.csv restart_overhead.csv \
         philly_job_distribution.csv; do
  cmp -s "$source_dir/data/$f" "$data/$f" || fail "share/gavel/$f is not the shipped file"
done
gavel="$tmp/prefix/bin/gavel"
run() { "$gavel" simulate -c 1:1:1 -p fifo --seed 0 -l 3600 -s 0 -e 5 --realistic --json - "$@"; }

run > "$tmp/installed.json" || fail "the installed gavel cannot simulate"
# Proof that it reads the installed copy, not the source tree's: a damaged installed table
# fails the run, naming the installed file.
cp "$data/simulation_throughputs.json" "$tmp/table.json"
echo '{}' > "$data/simulation_throughputs.json"
if run > /dev/null 2> "$tmp/err"; then fail "a damaged installed table was not read"; fi
grep -q "$data/simulation_throughputs.json" "$tmp/err" ||
  fail "the error does not name the installed table: $(cat "$tmp/err")"
# GAVEL_DATA_DIR wins over the installed copy, and gives the same run as before.
GAVEL_DATA_DIR="$source_dir/data" run > "$tmp/override.json" ||
  fail "GAVEL_DATA_DIR=$source_dir/data did not take over"
python3 - "$tmp/installed.json" "$tmp/override.json" <<'PY' || fail "the runs differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for key in ("average_jct_seconds", "restarts", "failed_jobs"):
    assert a[key] == b[key], (key, a[key], b[key])
PY
# `gavel profile` runs the installed measuring program (named in its error when it fails).
cp "$tmp/table.json" "$data/simulation_throughputs.json"
[ -x "$data/gavel_profile.py" ] && cmp -s "$source_dir/python/gavel_profile.py" "$data/gavel_profile.py" ||
  fail "share/gavel/gavel_profile.py is not the source's, executable"
if "$gavel" profile --models A3C --python /bin/false --out "$tmp/rows.json" 2> "$tmp/err"; then
  fail "gavel profile succeeded with a failing interpreter"
fi
grep -q "$data/gavel_profile.py failed" "$tmp/err" ||
  fail "gavel profile did not run the installed program: $(cat "$tmp/err")"
echo "install_test: data installed under share/gavel and read from there"
