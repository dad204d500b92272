#!/usr/bin/env python3
"""Robustness grid for the field's schedulers
(docs/policies.md, "How robust the papers' directions are").

Runs `gavel simulate` over a grid of workload families, cluster shapes, load levels and seeds
and checks, at every point, the headline direction of each paper:

  D1 tiresias_2das  average JCT  <  yarn_cs               (by a wide margin: ratio <= 0.8)
  D2 themis         max rho      <  tiresias_2das, gandiva_introspective, yarn_cs
  D3 oasis          total utility >  fifo, drf            (--utility sigmoid and linear)
  D4 gandiva_introspective average JCT < yarn_cs

Each simulation is one `gavel simulate ... --json` (the CLI the project ships, so the grid
sees exactly what a user does). Results: one CSV row per simulation (--out, default
bench/results/direction-grid.csv) and a summary per direction x workload family printed and
written beside it (direction-grid-summary.md). Standard library only.

Usage:
  scripts/direction-grid.py --gavel build/release/src/gavel/cli/gavel [--jobs 2] [--quick]

Load levels: a job arrival rate that offers `load` times the cluster's capacity in
V100-equivalent GPU-seconds (the mean work per job of each family measured once, from a static
run; schedulers that put jobs on slow types see more), plus `burst`: 2 x GPUs jobs (at least
80) at time 0 (--lam 0), the most congested case, which drains by construction. Every run has
--saturation-limit 1e8 so that all window jobs finish and averages compare the same jobs. --quick runs seeds 0-1 and fewer shapes (a smoke test of the script).
"""

import argparse
import concurrent.futures
import csv
import itertools
import json
import os
import subprocess
import sys
import tempfile

# Rough speed of each type relative to a V100 on the shipped table (mean over job types);
# used only to turn "load" into an arrival rate, not by any scheduler.
SPEED = {"v100": 1.0, "p100": 0.6, "k80": 0.3}
TYPES = ["v100", "p100", "k80"]

FAMILIES = {
    # name: (flags, realistic)
    "gavel-1gpu": (["--workload", "gavel"], False),
    "gavel-multi": (["--workload", "gavel", "-m"], False),
    "philly": (["--workload", "philly"], False),
    "hpo-apps": (["--workload", "gavel", "-m", "--hpo-fraction", "0.5"], False),
    "philly-realistic": (["--workload", "philly", "--realistic", "--num-gpus-per-server",
                          "4:4:4"], True),
    "multi-realistic": (["--workload", "gavel", "-m", "--realistic", "--num-gpus-per-server",
                         "4:4:4"], True),
}
CLUSTERS = ["8:8:8", "36:36:36", "16:0:0", "0:0:24"]
LOADS = ["0.4", "0.7", "burst"]
JCT_POLICIES = ["themis", "tiresias_2das", "gandiva_introspective", "yarn_cs"]
UTILITY_POLICIES = ["oasis", "fifo", "drf"]
UTILITIES = ["sigmoid", "linear"]
WINDOW = 80  # window jobs per simulation: -s 0 -e WINDOW
SIM_TIMEOUT = 90  # seconds of wall time per simulation; a point with a timeout is left out
TIE = 0.01  # ratios within 1 % of 1 count as ties (same decisions), not as failures


def capacity(cluster):
    counts = [int(c) for c in cluster.split(":")]
    return sum(SPEED[t] * c for t, c in zip(TYPES, counts))


def run_sim(gavel, args):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        cmd = ["nice", "-n", "10", gavel, "simulate", "--progress", "never", "--json", path] + args
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SIM_TIMEOUT)
        except subprocess.TimeoutExpired:
            return {"error": "timeout after %d s" % SIM_TIMEOUT}
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()[-300:]}
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def mean_work(gavel, family):
    """Mean V100-equivalent GPU-seconds per job of a family (static run, yarn_cs, 36:36:36)."""
    flags, _ = FAMILIES[family]
    with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as f:
        path = f.name
    try:
        subprocess.run(["nice", "-n", "10", gavel, "simulate", "--progress", "never", "-p",
                        "yarn_cs", "-c", "36:36:36", "--lam", "0", "-s", "0", "-e", "200",
                        "--seed", "99", "--jobs-csv", path] + flags,
                       check=True, capture_output=True)
        total, jobs = 0.0, 0
        with open(path) as f:
            for row in csv.DictReader(f):
                jobs += 1
                total += sum(SPEED[t] * float(row["gpu_seconds_" + t] or 0) for t in TYPES)
        return total / max(jobs, 1)
    finally:
        os.unlink(path)


def point_args(family, cluster, load, seed, work):
    flags, _ = FAMILIES[family]
    # Every window job must finish: a run cut at the saturation limit averages only the jobs
    # each scheduler happened to finish, and compares different sets (Philly's month-long
    # jobs on K80s outlast the default limit).
    args = flags + ["-c", cluster, "--seed", str(seed), "--saturation-limit", "1e8"]
    if load == "burst":
        # Twice as many jobs as GPUs at time 0, so that even 36:36:36 is contended.
        gpus = sum(int(c) for c in cluster.split(":"))
        args += ["--lam", "0", "-s", "0", "-e", str(max(WINDOW, 2 * gpus))]
    else:
        args += ["-s", "0", "-e", str(WINDOW)]
        rate = float(load) * capacity(cluster) * 3600.0 / work
        args += ["--jobs-per-hour", "%.6g" % rate]
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel", default="build/release/src/gavel/cli/gavel")
    ap.add_argument("--jobs", type=int, default=2, help="simulations in parallel")
    ap.add_argument("--out", default="bench/results/direction-grid.csv")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--clusters", default=",".join(CLUSTERS))
    ap.add_argument("--loads", default=",".join(LOADS))
    ap.add_argument("--arrivals-on", default="",
                    help="comma-separated clusters that get the Poisson loads (default: all)")
    opts = ap.parse_args()
    seeds = [int(s) for s in opts.seeds.split(",")]
    families = opts.families.split(",")
    clusters = opts.clusters.split(",")
    loads = opts.loads.split(",")
    if opts.quick:
        seeds, clusters = seeds[:2], clusters[:2]

    works = {f: mean_work(opts.gavel, f) for f in families}
    for f, w in works.items():
        print("mean work %-18s %10.0f V100 GPU-s/job" % (f, w), file=sys.stderr)

    tasks = []
    points = list(itertools.product(families, clusters, loads, seeds))
    if opts.arrivals_on:
        # Poisson arrivals only on these shapes (the bursts cover every shape).
        keep = set(opts.arrivals_on.split(","))
        points = [p for p in points if p[2] == "burst" or p[1] in keep]
    for family, cluster, load, seed in points:
        base = point_args(family, cluster, load, seed, works[family])
        key = dict(family=family, cluster=cluster, load=load, seed=seed)
        for p in JCT_POLICIES:
            tasks.append((dict(key, policy=p, utility=""), base + ["-p", p, "--fairness"]))
        # One utility family per seed (sigmoid on even seeds, linear on odd), to halve the cost.
        u = UTILITIES[seed % len(UTILITIES)]
        for p in UTILITY_POLICIES:
            tasks.append((dict(key, policy=p, utility=u), base + ["-p", p, "--utility", u]))

    fields = ["family", "cluster", "load", "seed", "policy", "utility", "average_jct_seconds",
              "max_rho", "total_utility", "jobs_rejected", "jobs_completed",
              "utilization", "saturated", "wall_seconds", "error"]
    os.makedirs(os.path.dirname(opts.out) or ".", exist_ok=True)
    rows = []
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool, open(opts.out, "w",
                                                                         newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        futures = {pool.submit(run_sim, opts.gavel, a): k for k, a in tasks}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            k = futures[fut]
            r = fut.result()
            fair = r.get("fairness") or {}
            row = dict(k, average_jct_seconds=r.get("average_jct_seconds", ""),
                       max_rho=fair.get("max_rho", ""), total_utility=r.get("total_utility", ""),
                       jobs_rejected=r.get("jobs_rejected", ""),
                       jobs_completed=r.get("jobs_completed", ""),
                       utilization=r.get("utilization", ""), saturated=r.get("saturated", ""),
                       wall_seconds=r.get("wall_seconds", ""), error=r.get("error", ""))
            w.writerow(row)
            f.flush()
            rows.append(row)
            if n % 50 == 0:
                print("%d/%d simulations" % (n, len(tasks)), file=sys.stderr)
    summary = summarise(rows)
    print(summary)
    with open(os.path.splitext(opts.out)[0] + "-summary.md", "w") as f:
        f.write(summary)


def summarise(rows):
    """Per direction x family: points where the direction holds, and the geometric-mean
    margin (ratio of the paper's scheduler to the worst of its opponents)."""
    by = {}
    for r in rows:
        if r["error"]:
            continue
        by[(r["family"], r["cluster"], r["load"], r["seed"], r["utility"], r["policy"])] = r
    points = sorted({k[:4] for k in by})
    checks = {
        "D1 2DAS JCT < 0.8 x YARN-CS": [],
        "D2 Themis max rho lowest": [],
        "D3 OASiS utility > FIFO, DRF": [],
        "D4 Gandiva JCT < YARN-CS": [],
    }
    failures = []

    def get(pt, u, p, field):
        r = by.get(pt + (u, p))
        return float(r[field]) if r and r[field] not in ("", None) else None

    for pt in points:
        fam = pt[0]
        t = get(pt, "", "tiresias_2das", "average_jct_seconds")
        y = get(pt, "", "yarn_cs", "average_jct_seconds")
        g = get(pt, "", "gandiva_introspective", "average_jct_seconds")
        if t and y:
            checks["D1 2DAS JCT < 0.8 x YARN-CS"].append((fam, t / y, t / y <= 0.8, pt))
        if g and y:
            checks["D4 Gandiva JCT < YARN-CS"].append((fam, g / y, g / y < 1.0 - TIE, pt))
        th = get(pt, "", "themis", "max_rho")
        others = [get(pt, "", p, "max_rho") for p in ("tiresias_2das", "gandiva_introspective",
                                                         "yarn_cs")]
        if th and all(others):
            m = min(others)
            checks["D2 Themis max rho lowest"].append((fam, th / m, th / m < 1.0 - TIE, pt))
        for u in UTILITIES:
            o = get(pt, u, "oasis", "total_utility")
            b = [get(pt, u, p, "total_utility") for p in ("fifo", "drf")]
            if o is not None and all(x is not None for x in b):
                m = max(b)
                ratio = o / m if m > 0 else float("inf")
                checks["D3 OASiS utility > FIFO, DRF"].append((fam + "/" + u, ratio,
                                                               ratio > 1.0 + TIE, pt + (u,)))
    out = ["| direction | workload family | holds | ties | fails | worst ratio | geo-mean ratio |",
           "|---|---|---|---|---|---|---|"]
    import math
    for name, items in checks.items():
        fams = sorted({i[0] for i in items})
        for fam in fams:
            sel = [i for i in items if i[0] == fam]
            holds = sum(1 for i in sel if i[2])
            ties = sum(1 for i in sel if not i[2] and abs(i[1] - 1.0) <= TIE)
            ratios = [i[1] for i in sel if i[1] > 0 and math.isfinite(i[1])]
            higher_better = name.startswith("D3")
            worst = (min(ratios) if higher_better else max(ratios)) if ratios else float("nan")
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float(
                "nan")
            out.append("| %s | %s | %d | %d | %d | %.3f | %.3f |" % (
                name, fam, holds, ties, len(sel) - holds - ties, worst, geo))
            failures += ["%s: %s ratio %.3f" % (name, i[3], i[1]) for i in sel
                         if not i[2] and abs(i[1] - 1.0) > TIE]
    out.append("")
    out.append("Points where a direction fails by more than a tie (ratio within %g of 1: the "
               "schedulers made the same decisions, e.g. an uncontended cluster):" % TIE)
    out += ["- " + f for f in failures] or ["- none"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
