#!/usr/bin/env python3
"""Two policies on the same workload, job by job (bench/README.md, "What the remaining losses
are made of").

Runs `gavel simulate -c CLUSTER --num-gpus-per-server G -m --realistic -p POLICY --seed S
--jobs-per-hour R -s 0 -e 80 --jobs-csv FILE` for both policies under `nice -n 19` (the
commands of scripts/field-points.py) and prints the window jobs whose JCT differs most: size,
arrival, JCT, first start, GPU-hours on each type and whether the job failed, for each
policy, then how many jobs finished over --hours later or sooner under the first.

  scripts/compare-jobs.py --cluster 14:14:8 --seed 113 --rate 0.6 las_perf drf
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

TYPES = ("k80", "p100", "v100")


def run(args, policy, path):
    cmd = ["nice", "-n", "19", args.binary, "simulate", "-c", args.cluster,
           "--num-gpus-per-server", args.servers, "-m", "--realistic", "-p", policy, "--seed",
           str(args.seed), "--jobs-per-hour", str(args.rate), "-s", "0", "-e", "80",
           "--jobs-csv", path]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    with open(path) as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def hours(row, key):
    return float(row.get(key) or 0.0) / 3600.0


def describe(row):
    gpu = " ".join(f"{t} {hours(row, 'gpu_seconds_' + t):.0f}" for t in TYPES
                   if row.get("gpu_seconds_" + t))
    failed = " failed" if row["failed"] == "1" else ""
    return (f"JCT {hours(row, 'jct'):7.2f} start {hours(row, 'first_start'):6.1f} "
            f"GPU-h {gpu}{failed}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("first")
    p.add_argument("second")
    p.add_argument("--cluster", required=True, help="V100:P100:K80 counts")
    p.add_argument("--servers", default="4:4:4", help="--num-gpus-per-server")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--rate", type=float, required=True, help="jobs per hour")
    p.add_argument("--binary", default="build/release/src/gavel/cli/gavel")
    p.add_argument("--top", type=int, default=12, help="jobs to list")
    p.add_argument("--hours", type=float, default=5.0, help="threshold of the counts")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        a = run(args, args.first, os.path.join(tmp, "first.csv"))
        b = run(args, args.second, os.path.join(tmp, "second.csv"))
    rows = []
    for job, x in a.items():
        if x["in_window"] != "1" or job not in b:
            continue
        rows.append((hours(x, "jct") - hours(b[job], "jct"), job, x, b[job]))
    if not rows:
        sys.exit("no window job in both runs")
    mean = sum(d for d, *_ in rows) / len(rows)
    print(f"{len(rows)} window jobs; {args.first} − {args.second}: {mean:+.3f} h average JCT")
    rows.sort(key=lambda r: -abs(r[0]))
    for d, job, x, y in rows[:args.top]:
        print(f"{job:>5} x{x['scale_factor']} {x['job_type'][:28]:28} arrives "
              f"{hours(x, 'arrival'):6.1f} h  {d:+8.2f} h | {describe(x)} | {describe(y)}")
    for word, sign in (("later", 1), ("sooner", -1)):
        hit = [r for r in rows if sign * r[0] > args.hours]
        sizes = sorted(int(r[2]["scale_factor"]) for r in hit)
        print(f"{len(hit)} jobs over {args.hours:g} h {word} under {args.first} "
              f"({sum(abs(r[0]) for r in hit):.0f} h together), sizes {sizes}")


if __name__ == "__main__":
    main()
