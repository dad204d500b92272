#!/usr/bin/env python3
"""A tiny stand-in for a training job, driven by Gavel's iterator (python/gavel_iterator.py).

Each step sleeps 1 / throughput seconds, where throughput is the throughput table's steps/s of
this job type (model, scale factor) on the GPU type the agent gives the job (GAVEL_GPU_TYPE).
So the time a job takes on each GPU type is what the scheduler expects, and an end-to-end
test can compare the time each job received against its allocation, and the order jobs finish
in against the simulator's prediction.

Its "model" is a step counter and an order-sensitive checksum of the steps it ran,
    checksum_{k+1} = (checksum_k * 1000003 + k + 1) mod (2^61 - 1),   checksum_0 = 0,
saved to and restored from the checkpoint directory through the iterator. A job that ran every
step 0..N-1 exactly once, in order, across any number of leases, restarts and kills, ends
with step == N and checksum == expected_checksum(N); a skipped or repeated step changes it.
With --exec-log every executed step (also ones later lost to a kill and redone) is appended
to a file, so tests can see redone work too.

Options (or the environment the agent sets):
  --job-type      GAVEL_JOB_TYPE       model name, e.g. "ResNet-18 (batch size 64)"
  --total-steps   GAVEL_TOTAL_STEPS    (used only outside Gavel; the agent's value wins)
  --gpu-type      GAVEL_GPU_TYPE       e.g. v100
  --scale-factor  GAVEL_WORLD_SIZE     GPUs of the job (the table key's scale factor)
  --throughputs   GAVEL_THROUGHPUTS    the table (default: data/simulation_throughputs.json)
  --speedup       GAVEL_TRAIN_SPEEDUP  run this many times faster than the table says
  --exec-log      GAVEL_TRAIN_EXEC_LOG append each executed step index here
  --fail-at-step  GAVEL_TRAIN_FAIL_AT  exit 3 just before running this step (crash tests)
  (GAVEL_PARTNER_JOB_TYPE: set by the agent when the job shares its GPU with a job of that type
  (space sharing); the program then runs at the table's co-located rate for the pair.)
Exit status: 0 when the loop ended (lease end or completion), 2 for bad options, 3 for an
injected failure.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree

from gavel_iterator import GavelIterator  # noqa: E402

MODULUS = (1 << 61) - 1
MULTIPLIER = 1000003
STATE_FILE = "model.json"


def next_checksum(checksum, step):
    return (checksum * MULTIPLIER + step + 1) % MODULUS


def expected_checksum(steps):
    checksum = 0
    for step in range(steps):
        checksum = next_checksum(checksum, step)
    return checksum


def step_throughput(table, gpu_type, job_type, scale_factor):
    """Steps/s of the job alone on gpu_type; raises ValueError naming what is missing."""
    if gpu_type not in table:
        raise ValueError("GPU type %r is not in the throughput table (types: %s)"
                         % (gpu_type, ", ".join(sorted(table))))
    key = "(%r, %d)" % (job_type, scale_factor)
    entry = table[gpu_type].get(key)
    if entry is None:
        raise ValueError("job type %s is not in the throughput table for %s" % (key, gpu_type))
    value = float(entry["null"])
    if value <= 0:
        raise ValueError("job type %s cannot run on %s (throughput %g)" % (key, gpu_type, value))
    return value


def colocated_throughput(table, gpu_type, job_type, partner_type, scale_factor):
    """Steps/s of the job next to a job of partner_type on gpu_type; None when not in the table."""
    key = "(%r, %d)" % (job_type, scale_factor)
    partner_key = "(%r, %d)" % (partner_type, scale_factor)
    pair = table.get(gpu_type, {}).get(key, {}).get(partner_key)
    if not pair or float(pair[0]) <= 0:
        return None
    return float(pair[0])


class Pacer:
    """Holds a training loop to `step_seconds` a step against a clock.

    Each step sleeps what is left of its time on the pace, so the loop's own small overheads (a
    late wake-up, a progress report) are made up on the next steps and the rate is the table's,
    not the table's minus the loop's overhead. Time the program did not train is not made up:
    the pace starts again with every new lease (the program waited at its lease end for the
    next round's decision, and checkpointed) and whenever it fell more than `max_lag_s` behind
    (the machine stalled it). A real training program loses that time; made up, it would run
    a lease extension's first steps at full speed, faster than the table, and the live run
    would win back the pause between two rounds that the simulator charges.
    """

    def __init__(self, step_seconds, max_lag_s=1.0, clock=time.monotonic, sleep=time.sleep):
        self._step_seconds = step_seconds
        self._max_lag_s = max_lag_s
        self._clock = clock
        self._sleep = sleep
        self._lease = None
        self._start = None
        self._paced = 0

    def step(self, lease):
        """Waits out one step of training under `lease` (the iterator's current lease)."""
        now = self._clock()
        if (self._start is None or lease is not self._lease
                or now - (self._start + self._paced * self._step_seconds) > self._max_lag_s):
            self._lease, self._start, self._paced = lease, now, 0
        self._paced += 1
        delay = self._start + self._paced * self._step_seconds - now
        if delay > 0:
            self._sleep(delay)


def parse_args(argv):
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job-type", default=env.get("GAVEL_JOB_TYPE", ""))
    parser.add_argument("--total-steps", type=int, default=int(env.get("GAVEL_TOTAL_STEPS", "0")))
    parser.add_argument("--gpu-type", default=env.get("GAVEL_GPU_TYPE", ""))
    parser.add_argument("--scale-factor", type=int, default=int(env.get("GAVEL_WORLD_SIZE", "1")))
    parser.add_argument("--throughputs", default=env.get(
        "GAVEL_THROUGHPUTS", os.path.join(REPO, "data", "simulation_throughputs.json")))
    parser.add_argument("--speedup", type=float, default=float(env.get("GAVEL_TRAIN_SPEEDUP", "1")))
    parser.add_argument("--exec-log", default=env.get("GAVEL_TRAIN_EXEC_LOG", ""))
    parser.add_argument("--fail-at-step", type=int, default=int(env.get("GAVEL_TRAIN_FAIL_AT", "-1")))
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if not args.job_type or not args.gpu_type:
        print("train.py: need --job-type and --gpu-type (or GAVEL_JOB_TYPE and GAVEL_GPU_TYPE)",
              file=sys.stderr)
        return 2
    if args.speedup <= 0:
        print("train.py: --speedup must be positive", file=sys.stderr)
        return 2
    try:
        with open(args.throughputs, "r", encoding="utf-8") as f:
            table = json.load(f)
        throughput = step_throughput(table, args.gpu_type, args.job_type, args.scale_factor)
        partner = os.environ.get("GAVEL_PARTNER_JOB_TYPE", "")
        if partner:
            shared = colocated_throughput(table, args.gpu_type, args.job_type, partner,
                                          args.scale_factor)
            if shared is not None:
                throughput = shared
    except (OSError, ValueError) as error:
        print("train.py: %s" % error, file=sys.stderr)
        return 2
    step_seconds = 1.0 / (throughput * args.speedup)

    state = {"step": 0, "checksum": 0}

    def save_checkpoint(directory):
        with open(os.path.join(directory, STATE_FILE), "w", encoding="utf-8") as f:
            json.dump(state, f)

    def load_checkpoint(directory):
        with open(os.path.join(directory, STATE_FILE), "r", encoding="utf-8") as f:
            state.update(json.load(f))

    loader = GavelIterator(iter(int, 1), save_checkpoint, load_checkpoint,
                           total_steps=args.total_steps)
    if state["step"] != loader.steps_done:
        print("train.py: restored state is at step %d but the iterator at %d"
              % (state["step"], loader.steps_done), file=sys.stderr)
        return 4
    exec_log = open(args.exec_log, "a", encoding="utf-8") if args.exec_log else None
    print("train.py: %s on %s: %.4f s/step (%.3f steps/s), from step %d of %d"
          % (args.job_type, args.gpu_type, step_seconds, 1.0 / step_seconds, state["step"],
             loader.total_steps), flush=True)

    pacer = Pacer(step_seconds)
    for _ in loader:
        if state["step"] != loader.steps_done:  # the iterator and the model must agree
            print("train.py: model at step %d, iterator at %d" % (state["step"], loader.steps_done),
                  file=sys.stderr)
            return 4
        if state["step"] == args.fail_at_step:
            print("train.py: injected failure at step %d" % state["step"], file=sys.stderr)
            return 3
        pacer.step(loader.lease)
        state["checksum"] = next_checksum(state["checksum"], state["step"])
        state["step"] += 1
        if exec_log is not None:
            exec_log.write("%d\n" % (state["step"] - 1))
            exec_log.flush()

    print(json.dumps({"job_id": os.environ.get("GAVEL_JOB_ID"), "step": state["step"],
                      "checksum": state["checksum"], "completed": loader.completed,
                      "stopped_by_signal": loader.stopped_by_signal}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
