#!/usr/bin/env bash
# The README's main job (`make run`): the paper's 36:36:36 cluster (V100:P100:K80) at a mid
# load of 2 jobs/hour, heterogeneity-agnostic policies against their heterogeneity-aware
# (_perf) versions, one simulation per policy, in parallel. Prints the comparison table
# (average JCT in hours and the _perf speed-up) and writes build/headline/report.html.
# Override the measurement window or seeds with WINDOW_START / WINDOW_END / SEEDS.
set -euo pipefail
cd "$(dirname "$0")/.."

# The binary: `make run` passes its simulator-only build (the `sim` preset).
gavel=${GAVEL:-./build/release/src/gavel/cli/gavel}
out=build/headline
# Start fresh: the sweep would otherwise resume and only reprint earlier results.
rm -rf "$out"

"$gavel" sweep --cluster 36:36:36 \
  --policies max_min_fairness,max_min_fairness_perf,fifo,fifo_perf \
  --seeds "${SEEDS:-0,1,2}" --rates 2 \
  -s "${WINDOW_START:-4000}" -e "${WINDOW_END:-5000}" \
  --out "$out"
echo "Open $out/report.html in a browser (self-contained, works offline); statistics in $out/summary.json."
