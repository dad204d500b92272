#!/usr/bin/env python3
"""Measures training steps per second of the throughput table's job types on this machine.

`gavel profile` runs this program and turns what it measures into throughput-table rows
(docs/profiling.md). Each job type of the table is a real PyTorch model trained on synthetic
data at the table's batch size:

  ResNet-18, ResNet-50   torchvision's models, 3x224x224 images, 1,000 classes
  Transformer            torch.nn.Transformer (the original's translation model's shape:
                         d_model 512, 8 heads, 6+6 layers), 32-token sequences, 8,000 words
  LM                     a 2-layer LSTM language model (200 units, 35-token windows,
                         33,278 words: PyTorch's word_language_model on WikiText-2)
  Recommendation         an autoencoder over 10,000 items (collaborative filtering)
  A3C                    the Atari actor-critic network, a rollout of 20 84x84x4 frames
  CycleGAN               two ResNet generators and two PatchGAN discriminators, 256x256, batch 1

One job runs in its own process (a fresh CUDA context, memory freed between jobs). A pair runs
as two processes on the same device at once: both build their model and warm up, wait for each
other at a barrier, time their own steps, and keep training until both have timed theirs, so
that each one's rate is measured while the other is running.

Output (--out): {"device": ..., "device_name": ..., "steps": N, "max_batch": B or null,
  "isolated": {"<job type>": steps/s}, "pairs": [{"a": ..., "b": ..., "rates": [ra, rb]}],
  "batch_used": {"<job type>": batch}}.
A batch capped by --max-batch (for quick runs on a CPU) is reported at the table's batch size
by scaling with the batch ratio (steps/s x used / table batch: same samples per second).
Needs python3-torch and python3-torchvision; nothing else.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

BARRIER_TIMEOUT_S = 600


def parse_job_type(job_type):
    """'ResNet-18 (batch size 64)' -> ('ResNet-18', 64); 'A3C' -> ('A3C', None)."""
    match = re.fullmatch(r"(.+) \(batch size (\d+)\)", job_type)
    if match:
        return match.group(1), int(match.group(2))
    return job_type, None


KNOWN_MODELS = ("ResNet-18", "ResNet-50", "Transformer", "LM", "Recommendation", "A3C", "CycleGAN")


def build(model_name, batch, device):
    """Returns step(): one optimiser step of `model_name` at `batch` on synthetic data."""
    import torch
    import torch.nn as nn

    gen = torch.Generator(device="cpu").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen).to(device)

    def randint(high, *shape):
        return torch.randint(high, shape, generator=gen).to(device)

    if model_name in ("ResNet-18", "ResNet-50"):
        import torchvision
        net = (torchvision.models.resnet18 if model_name == "ResNet-18"
               else torchvision.models.resnet50)(num_classes=1000).to(device)
        x, y = randn(batch, 3, 224, 224), randint(1000, batch)
        loss_fn = nn.CrossEntropyLoss()
        forward = lambda: loss_fn(net(x), y)
        params = net.parameters()
    elif model_name == "Transformer":
        vocab, seq, d = 8000, 32, 512
        embed = nn.Embedding(vocab, d).to(device)
        core = nn.Transformer(d_model=d, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                              dim_feedforward=2048, batch_first=True).to(device)
        head = nn.Linear(d, vocab).to(device)
        src, tgt = randint(vocab, batch, seq), randint(vocab, batch, seq)
        mask = core.generate_square_subsequent_mask(seq).to(device)
        loss_fn = nn.CrossEntropyLoss()
        forward = lambda: loss_fn(head(core(embed(src), embed(tgt), tgt_mask=mask)).reshape(-1, vocab),
                                  tgt.reshape(-1))
        params = list(embed.parameters()) + list(core.parameters()) + list(head.parameters())
    elif model_name == "LM":
        vocab, seq, hidden = 33278, 35, 200
        embed = nn.Embedding(vocab, hidden).to(device)
        lstm = nn.LSTM(hidden, hidden, num_layers=2, dropout=0.2).to(device)
        head = nn.Linear(hidden, vocab).to(device)
        words, targets = randint(vocab, seq, batch), randint(vocab, seq, batch)
        loss_fn = nn.CrossEntropyLoss()
        forward = lambda: loss_fn(head(lstm(embed(words))[0]).reshape(-1, vocab), targets.reshape(-1))
        params = list(embed.parameters()) + list(lstm.parameters()) + list(head.parameters())
    elif model_name == "Recommendation":
        items = 10000
        net = nn.Sequential(nn.Linear(items, 512), nn.SELU(), nn.Linear(512, 512), nn.SELU(),
                            nn.Dropout(0.8), nn.Linear(512, items)).to(device)
        ratings = (randn(batch, items) > 2.0).float()
        forward = lambda: ((net(ratings) - ratings) ** 2 * (1 + ratings)).mean()
        params = net.parameters()
    elif model_name == "A3C":
        actions, rollout = 6, 20 * (batch or 1)
        trunk = nn.Sequential(nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2),
                              nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.Flatten(),
                              nn.Linear(3136, 512), nn.ReLU()).to(device)
        policy, value = nn.Linear(512, actions).to(device), nn.Linear(512, 1).to(device)
        frames, taken, returns = randn(rollout, 4, 84, 84), randint(actions, rollout), randn(rollout, 1)

        def forward():
            h = trunk(frames)
            log_p = torch.log_softmax(policy(h), dim=1)
            v = value(h)
            advantage = (returns - v).detach()
            return (-(log_p.gather(1, taken[:, None]) * advantage).mean() + 0.5 * ((returns - v) ** 2).mean()
                    - 0.01 * -(log_p.exp() * log_p).sum(1).mean())
        params = list(trunk.parameters()) + list(policy.parameters()) + list(value.parameters())
    elif model_name == "CycleGAN":
        size, n = 256, batch or 1

        def generator():
            def res_block():
                return nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(256, 256, 3), nn.InstanceNorm2d(256),
                                     nn.ReLU(True), nn.ReflectionPad2d(1), nn.Conv2d(256, 256, 3),
                                     nn.InstanceNorm2d(256))

            class Residual(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.block = res_block()

                def forward(self, x):
                    return x + self.block(x)
            layers = [nn.ReflectionPad2d(3), nn.Conv2d(3, 64, 7), nn.InstanceNorm2d(64), nn.ReLU(True),
                      nn.Conv2d(64, 128, 3, 2, 1), nn.InstanceNorm2d(128), nn.ReLU(True),
                      nn.Conv2d(128, 256, 3, 2, 1), nn.InstanceNorm2d(256), nn.ReLU(True)]
            layers += [Residual() for _ in range(9)]
            layers += [nn.ConvTranspose2d(256, 128, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(128),
                       nn.ReLU(True), nn.ConvTranspose2d(128, 64, 3, 2, 1, output_padding=1),
                       nn.InstanceNorm2d(64), nn.ReLU(True), nn.ReflectionPad2d(3), nn.Conv2d(64, 3, 7),
                       nn.Tanh()]
            return nn.Sequential(*layers).to(device)

        def discriminator():
            return nn.Sequential(nn.Conv2d(3, 64, 4, 2, 1), nn.LeakyReLU(0.2, True),
                                 nn.Conv2d(64, 128, 4, 2, 1), nn.InstanceNorm2d(128), nn.LeakyReLU(0.2, True),
                                 nn.Conv2d(128, 256, 4, 2, 1), nn.InstanceNorm2d(256), nn.LeakyReLU(0.2, True),
                                 nn.Conv2d(256, 512, 4, 1, 1), nn.InstanceNorm2d(512), nn.LeakyReLU(0.2, True),
                                 nn.Conv2d(512, 1, 4, 1, 1)).to(device)
        g_ab, g_ba, d_a, d_b = generator(), generator(), discriminator(), discriminator()
        real_a, real_b = randn(n, 3, size, size), randn(n, 3, size, size)

        def forward():
            fake_b, fake_a = g_ab(real_a), g_ba(real_b)
            cycle = (g_ba(fake_b) - real_a).abs().mean() + (g_ab(fake_a) - real_b).abs().mean()
            adversarial = ((d_b(fake_b) - 1) ** 2).mean() + ((d_a(fake_a) - 1) ** 2).mean()
            discriminate = ((d_a(real_a) - 1) ** 2).mean() + (d_a(fake_a.detach()) ** 2).mean() + \
                ((d_b(real_b) - 1) ** 2).mean() + (d_b(fake_b.detach()) ** 2).mean()
            return adversarial + 10 * cycle + 0.5 * discriminate
        params = [p for m in (g_ab, g_ba, d_a, d_b) for p in m.parameters()]
    else:
        raise SystemExit("gavel_profile: no model for job type %r (known: %s)" %
                         (model_name, ", ".join(KNOWN_MODELS)))

    optimizer = torch.optim.SGD(params, lr=1e-3, momentum=0.9)

    def step():
        optimizer.zero_grad(set_to_none=True)
        forward().backward()
        optimizer.step()
    return step


def synchronize(device):
    if device.startswith("cuda"):
        import torch
        torch.cuda.synchronize()


def worker(args):
    """Times --steps steps of one job type; prints {"steps_per_second": r, "batch": b}."""
    import torch
    torch.manual_seed(0)
    model_name, batch = parse_job_type(args.job_type)
    used = batch if batch is None or args.max_batch is None else min(batch, args.max_batch)
    step = build(model_name, used, args.device)
    for _ in range(args.warmup):
        step()
    synchronize(args.device)
    peers = args.peers
    if args.barrier:
        open(os.path.join(args.barrier, "ready.%d" % args.rank), "w").close()
        wait_for(args.barrier, "ready", peers)
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    synchronize(args.device)
    elapsed = time.perf_counter() - start
    if args.barrier:
        # Keep the device busy until every member has timed its steps.
        open(os.path.join(args.barrier, "done.%d" % args.rank), "w").close()
        while not all_present(args.barrier, "done", peers):
            step()
        synchronize(args.device)
    rate = args.steps / elapsed
    if used != batch:
        rate *= used / batch
    print(json.dumps({"steps_per_second": rate, "batch": used}), flush=True)


def all_present(directory, stage, peers):
    return all(os.path.exists(os.path.join(directory, "%s.%d" % (stage, r))) for r in range(peers))


def wait_for(directory, stage, peers):
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while not all_present(directory, stage, peers):
        if time.monotonic() > deadline:
            raise SystemExit("gavel_profile: partner did not reach %s in %d s" % (stage, BARRIER_TIMEOUT_S))
        time.sleep(0.01)


def run_workers(args, job_types):
    """Runs one worker per job type at once (one: isolated; two: a co-located pair). Returns
    their results, or None for all when one ran out of device memory (they do not fit)."""
    with tempfile.TemporaryDirectory(prefix="gavel_profile_") as barrier:
        procs = []
        for rank, job_type in enumerate(job_types):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--job-type", job_type,
                   "--device", args.device, "--steps", str(args.steps), "--warmup", str(args.warmup),
                   "--rank", str(rank), "--peers", str(len(job_types))]
            if len(job_types) > 1:
                cmd += ["--barrier", barrier]
            if args.max_batch is not None:
                cmd += ["--max-batch", str(args.max_batch)]
            out = open(os.path.join(barrier, "out.%d" % rank), "w")
            err = open(os.path.join(barrier, "err.%d" % rank), "w")
            procs.append(subprocess.Popen(cmd, stdout=out, stderr=err))
        # A member that fails leaves its partner waiting at the barrier: stop the rest.
        failed = None
        while any(p.poll() is None for p in procs):
            failed = next((r for r, p in enumerate(procs) if p.poll() not in (None, 0)), None)
            if failed is not None:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                for p in procs:
                    p.wait()
                break
            time.sleep(0.05)
        if failed is None:
            failed = next((r for r, p in enumerate(procs) if p.returncode != 0), None)
        if failed is not None:
            with open(os.path.join(barrier, "err.%d" % failed)) as f:
                err = f.read()
            if "out of memory" in err.lower():
                return [None] * len(job_types)
            raise SystemExit("gavel_profile: %s failed (exit %d): %s" %
                             (job_types[failed], procs[failed].returncode, err.strip()[-2000:]))
        results = []
        for rank in range(len(job_types)):
            with open(os.path.join(barrier, "out.%d" % rank)) as f:
                results.append(json.loads(f.read().strip().splitlines()[-1]))
        return results


def resolve_device(requested):
    import torch
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("gavel_profile: --device %s but torch sees no CUDA device" % requested)
    return requested


def device_name(device):
    import torch
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    import platform
    return platform.processor() or platform.machine() or "cpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="cuda, cuda:N, cpu or auto")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps before timing")
    parser.add_argument("--max-batch", type=int, default=None, help="cap on the batch size")
    parser.add_argument("--job-type", action="append", default=[], help="a table job type (repeatable)")
    parser.add_argument("--pairs", action="store_true", help="also measure every pair, co-located")
    parser.add_argument("--out", help="where to write the measurements (JSON)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--barrier", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--peers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 0 or (args.max_batch is not None and args.max_batch < 1):
        parser.error("--steps must be >= 1, --warmup >= 0, --max-batch >= 1")
    if args.worker:
        args.job_type = args.job_type[0]
        worker(args)
        return
    if not args.job_type or not args.out:
        parser.error("give at least one --job-type and --out")
    for job_type in args.job_type:
        if parse_job_type(job_type)[0] not in KNOWN_MODELS:
            parser.error("no model for job type %r (known: %s)" % (job_type, ", ".join(KNOWN_MODELS)))
    args.device = resolve_device(args.device)
    result = {"device": args.device, "device_name": device_name(args.device), "steps": args.steps,
              "max_batch": args.max_batch, "isolated": {}, "batch_used": {}, "pairs": []}
    for job_type in args.job_type:
        (measured,) = run_workers(args, [job_type])
        # An isolated job that does not fit in memory cannot run on this type: rate 0.
        result["isolated"][job_type] = measured["steps_per_second"] if measured else 0.0
        if measured:
            result["batch_used"][job_type] = measured["batch"]
        print("gavel_profile: %-40s %10.4f steps/s" % (job_type, result["isolated"][job_type]),
              file=sys.stderr, flush=True)
    if args.pairs:
        runnable = [j for j in args.job_type if result["isolated"][j] > 0]
        for i, a in enumerate(runnable):
            for b in runnable[i:]:
                both = run_workers(args, [a, b])
                # [0, 0]: the two do not fit on the device together.
                rates = [m["steps_per_second"] if m else 0.0 for m in both]
                result["pairs"].append({"a": a, "b": b, "rates": rates})
                print("gavel_profile: %s + %s: %.4f, %.4f steps/s" % (a, b, rates[0], rates[1]),
                      file=sys.stderr, flush=True)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
