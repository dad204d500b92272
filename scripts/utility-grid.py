#!/usr/bin/env python3
"""Total utility of oasis against drf and yarn_cs over a grid (docs/policies.md "oasis").

Runs `gavel simulate -m --num-gpus-per-server 4:4:4 --utility U ... --json -` for every
cluster x rate x utility family x policy x seed (extra flags, default --realistic), writes one
CSV row per run, and prints a Markdown table: mean +/- standard deviation over seeds per
point, and the worst seed's ratio of oasis to the better baseline. With --before CSV (a run of
an older binary, same grid), oasis's figures from it are shown beside the new ones.

Usage:
  scripts/utility-grid.py --gavel build/release/src/gavel/cli/gavel --out grid.csv \
      [--clusters 8:8:8,16:8:8,8:16:16] [--rates 0.5,1,2,4] [--seeds 0,1,2,3,4] \
      [--policies oasis,drf,yarn_cs] [--window 0:80] [--extra=--realistic] [--jobs 2] \
      [--before old.csv]
Standard library only.
"""

import argparse
import collections
import concurrent.futures
import csv
import itertools
import json
import statistics
import subprocess


def run(gavel, window, extra, point):
    cluster, rate, family, policy, seed = point
    cmd = [gavel, "simulate", "-p", policy, "-c", cluster, "--num-gpus-per-server", "4:4:4", "-m",
           "--jobs-per-hour", str(rate), "-s", window[0], "-e", window[1], "--utility", family,
           "--seed", str(seed), "--progress", "never", "--json", "-"] + extra
    done = subprocess.run(cmd, capture_output=True, text=True)
    result = json.loads(done.stdout)
    return point + (result["total_utility"], result.get("jobs_rejected", 0), "saturated" in done.stderr)


def load(path):
    table = collections.defaultdict(lambda: collections.defaultdict(dict))
    for row in csv.DictReader(open(path)):
        key = (row["cluster"], float(row["rate"]), row["utility"])
        table[key][row["policy"].split(":")[0]][int(row["seed"])] = float(row["total_utility"])
    return table


def spread(values):
    values = list(values)
    return f"{statistics.mean(values):,.0f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:,.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gavel", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--clusters", default="8:8:8,16:8:8,8:16:16")
    parser.add_argument("--rates", default="0.5,1,2,4")
    parser.add_argument("--families", default="sigmoid,linear")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--policies", default="oasis,drf,yarn_cs")
    parser.add_argument("--window", default="0:80")
    parser.add_argument("--extra", default="--realistic")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--before")
    args = parser.parse_args()
    points = list(itertools.product(args.clusters.split(","), [float(r) for r in args.rates.split(",")],
                                     args.families.split(","), args.policies.split(","),
                                     [int(s) for s in args.seeds.split(",")]))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda p: run(args.gavel, args.window.split(":"), args.extra.split(), p), points))
    with open(args.out, "w") as f:
        f.write("cluster,rate,utility,policy,seed,total_utility,rejected,saturated\n")
        for row in rows:
            f.write(",".join(str(x) for x in row) + "\n")
    now = load(args.out)
    before = load(args.before) if args.before else None
    print("| cluster | jobs/h | utility |" + (" oasis before |" if before else "") +
          " oasis | drf | yarn_cs | worst seed oasis / max(drf, yarn_cs) |")
    print("|---|---|---|" + ("---|" if before else "") + "---|---|---|---|")
    for key in sorted(now):
        point = now[key]
        cells = ([spread(before[key]["oasis"].values())] if before else []) + [
            spread(point[p].values()) for p in ("oasis", "drf", "yarn_cs")]
        worst = min(point["oasis"][s] / max(point["drf"][s], point["yarn_cs"][s]) for s in point["oasis"])
        print(f"| {key[0]} | {key[1]:g} | {key[2]} | " + " | ".join(cells) + f" | {worst:.3f} |")


if __name__ == "__main__":
    main()
