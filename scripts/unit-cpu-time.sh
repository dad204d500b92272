#!/usr/bin/env bash
# A compiler (and linker) launcher that logs the CPU seconds (user + sys) of each compile or
# link into $UNIT_CPU_TIME_LOG, one line "user+sys wall output", so a build's cost per unit
# can be read on a loaded machine (CPU time barely depends on the load; wall time does).
#
#   CCACHE_DISABLE=1 UNIT_CPU_TIME_LOG=/tmp/units.log \
#     cmake --preset debug -B /tmp/b -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/unit-cpu-time.sh \
#       -DCMAKE_CXX_LINKER_LAUNCHER=$PWD/scripts/unit-cpu-time.sh
#   cmake --build /tmp/b -j2; sort -rn /tmp/units.log | head
set -u
log="${UNIT_CPU_TIME_LOG:?set UNIT_CPU_TIME_LOG to the log file}"
out="?"
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
t="$(mktemp)"
/usr/bin/time -f "%U %S %e" -o "$t" "$@"
rc=$?
read -r user sys wall < <(tail -n 1 "$t")  # after "Command exited with non-zero status"
rm -f "$t"
awk -v u="$user" -v s="$sys" -v w="$wall" -v o="$out" 'BEGIN { printf "%.2f %s %s\n", u + s, w, o }' >>"$log"
exit $rc
