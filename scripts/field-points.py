#!/usr/bin/env python3
"""One policy against the field's schedulers, point by point (bench/README.md, "las_perf
against the field").

Runs `gavel simulate -c CLUSTER --num-gpus-per-server G -m --realistic -p POLICY --seed S
--jobs-per-hour R -s 0 -e 80 --json FILE` for every cluster, rate, seed and policy not run yet
(results kept in --out, one JSON file per run, so a second call only adds what is missing),
at most --jobs at a time under `nice -n 19`, then prints one row per (cluster, rate): the
candidate's mean average JCT over the seeds, its restart share, the lowest mean among the
field schedulers that drained every seed, and the candidate minus it paired by seed (mean and
95 % Student-t interval). A run cut as saturated averages only the jobs it finished, so a
scheduler cut on any seed is listed as cut, not compared.

  scripts/field-points.py --clusters 12:6:18,24:8:8 --seeds 40-44 --rates 0.2,0.6 \
      --candidates las_perf,las_perf:upgrade=1.1 --out /tmp/field
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import statistics
import subprocess
import sys

FIELD = ["tiresias_2das", "tiresias_gittins", "themis", "gandiva_introspective", "drf",
         "yarn_cs", "oasis", "tetris"]

# Two-sided 95 % Student-t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 14: 2.145, 19: 2.093, 24: 2.064, 29: 2.045}


def t95(df):
    if df in T95:
        return T95[df]
    return T95[max(k for k in T95 if k <= df)] if df > 0 else float("nan")


def seeds_of(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


def result_path(out, cluster, servers, policy, seed, rate):
    safe = re.sub(r"[^A-Za-z0-9_.=-]", "_", policy)
    return os.path.join(out, f"{cluster.replace(':', '-')}_{servers.replace(':', '-')}_"
                             f"{safe}_{seed}_{rate}.json")


def run(binary, cluster, servers, policy, seed, rate, path):
    if os.path.exists(path):
        return
    cmd = ["nice", "-n", "19", binary, "simulate", "-c", cluster, "--num-gpus-per-server",
           servers, "-m", "--realistic", "-p", policy, "--seed", str(seed),
           "--jobs-per-hour", str(rate), "-s", "0", "-e", "80", "--json", path + ".tmp"]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    os.replace(path + ".tmp", path)


def paired(a, b):
    d = [x - y for x, y in zip(a, b)]
    mean = statistics.fmean(d)
    half = t95(len(d) - 1) * statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else 0.0
    return mean, half


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clusters", required=True, help="comma-separated V100:P100:K80 counts")
    p.add_argument("--servers", default="4:4:4", help="--num-gpus-per-server")
    p.add_argument("--seeds", required=True, help="e.g. 40-44 or 1,3,5")
    p.add_argument("--rates", required=True, help="comma-separated jobs per hour")
    p.add_argument("--candidates", default="las_perf", help="comma-separated; ';' between "
                   "policies whose options contain commas; '|' where options also contain "
                   "';' (thresholds=a;b)")
    p.add_argument("--field", default=",".join(FIELD))
    p.add_argument("--binary", default="build/release/src/gavel/cli/gavel")
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--no-run", action="store_true", help="report what is there")
    args = p.parse_args()

    sep = "|" if "|" in args.candidates else ";" if ";" in args.candidates else ","
    candidates = [c for c in args.candidates.split(sep) if c]
    field = [f for f in args.field.split(",") if f]
    clusters = args.clusters.split(",")
    seeds = seeds_of(args.seeds)
    rates = args.rates.split(",")
    os.makedirs(args.out, exist_ok=True)
    work = [(c, pol, s, r) for c in clusters for r in rates for pol in field + candidates
            for s in seeds]
    if not args.no_run:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run, args.binary, c, args.servers, pol, s, r,
                                   result_path(args.out, c, args.servers, pol, s, r))
                       for c, pol, s, r in work]
            for f in futures:
                f.result()

    def load(c, pol, s, r):
        path = result_path(args.out, c, args.servers, pol, s, r)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    print("| cluster | rate | candidate | JCT h | restart share | best drained field, JCT h | "
          "candidate - it, paired h | candidate - oasis, paired h | field cut (seeds) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in clusters:
        for r in rates:
            runs = {pol: [load(c, pol, s, r) for s in seeds] for pol in field + candidates}
            if any(x is None for pol in runs for x in runs[pol]):
                continue
            jct = {pol: [x["average_jct_seconds"] / 3600 for x in xs] for pol, xs in runs.items()}
            cut = {pol: sum(1 for x in xs if x["saturated"]) for pol, xs in runs.items()}
            drained = [f for f in field if cut[f] == 0]
            best = min(drained, key=lambda f: statistics.fmean(jct[f])) if drained else None
            cuts = ", ".join(f"{f} {cut[f]}" for f in field if cut[f])
            for cand in candidates:
                share = statistics.fmean(x["restart_share"] for x in runs[cand])
                name = cand + (f" (cut {cut[cand]})" if cut[cand] else "")
                vs_best = ("%+.4f ± %.4f" % paired(jct[cand], jct[best])) if best else ""
                vs_oasis = "%+.4f ± %.4f" % paired(jct[cand], jct["oasis"]) \
                    if "oasis" in jct else ""
                best_text = f"{best} {statistics.fmean(jct[best]):.4f}" if best else "none"
                print(f"| {c} {args.seeds} | {r} | {name} | {statistics.fmean(jct[cand]):.4f} | "
                      f"{100 * share:.2f}% | {best_text} | {vs_best} | {vs_oasis} | {cuts} |")


if __name__ == "__main__":
    main()
