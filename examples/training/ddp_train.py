#!/usr/bin/env python3
"""A PyTorch DistributedDataParallel training script for Gavel: copy it and put your model in.

Run it as a Gavel job with as many GPUs as ranks (`--scale-factor` = world size):

    gavel submit --steps 2000 --scale-factor 2 --job-type my-model -- \\
        python3 ddp_train.py --backend nccl

Gavel's agent gives every rank the environment torchrun gives (MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), so `init_process_group(init_method="env://")`
works unchanged, and the lease every rank gets is the same step bound, so all ranks stop at the
same step and no rank is left waiting in an all-reduce (docs/checkpointing.md, "Data-parallel
jobs"). What the script must do is what any Gavel job does:

* wrap its loop in `GavelIterator(data, save_checkpoint, load_checkpoint)`; the iterator ends
  the loop (lease over, job complete, SIGTERM) and says when to checkpoint; only rank 0's
  `save_checkpoint` runs, every rank's `load_checkpoint` runs at start;
* save and load everything the next process needs: model, optimizer, and the data position,
  which here is simply `loader.steps_done` (the batch of step k is a function of k and the
  rank), so a resumed job sees exactly the batches an uninterrupted one would;
* exit with status 0 when the loop ends.

Outside Gavel it runs `--steps` steps (or GAVEL_TOTAL_STEPS) like torchrun would run it, e.g.
`RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 python3 ddp_train.py --steps 50`.
`--out FILE` makes rank 0 write the final weights (torch.save of the state dict) when the job
completes; the end-to-end test compares them with an uninterrupted run's.
"""

import argparse
import itertools
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from gavel_iterator import GavelIterator

CHECKPOINT_FILE = "model.pt"


def batch_for(step, rank, world_size, batch_size, features, seed):
    """The batch rank `rank` trains on at step `step`: a pure function of both, so a job that
    resumes from a checkpoint sees the same data as one that never stopped."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step * world_size + rank)
    x = torch.randn(batch_size, features, generator=generator)
    # A fixed linear target plus noise: something to learn.
    w_true = torch.arange(features, dtype=torch.float32) / features
    y = x @ w_true + 0.01 * torch.randn(batch_size, generator=generator)
    return x, y.unsqueeze(1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="gloo", help="gloo (CPU) or nccl (GPUs)")
    # gloo on a GPU lets several ranks share one device (NCCL refuses two ranks on one GPU):
    # scripts/gpu-check.sh runs its 2-rank job that way on a one-GPU machine.
    parser.add_argument("--device", default=os.environ.get("GAVEL_TRAIN_DEVICE", ""),
                        help="cpu or cuda (default: cuda with nccl, else cpu; env GAVEL_TRAIN_DEVICE)")
    parser.add_argument("--steps", type=int, default=None, help="total steps outside Gavel")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="rank 0 writes the final weights here")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)  # one core per rank; also keeps CPU results reproducible
    dist.init_process_group(backend=args.backend, init_method="env://")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cpu")
    if args.device == "cuda" or (not args.device and args.backend == "nccl"):
        device = torch.device("cuda", local_rank % max(1, torch.cuda.device_count()))
        torch.cuda.set_device(device)

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = nn.Sequential(nn.Linear(args.features, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.MSELoss()

    def save_checkpoint(directory):  # rank 0 only; the iterator commits the directory
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   os.path.join(directory, CHECKPOINT_FILE))

    def load_checkpoint(directory):  # every rank, before the first step
        state = torch.load(os.path.join(directory, CHECKPOINT_FILE), map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])

    # The data position is the iterator's step count, so the iterable itself only paces the loop.
    loader = GavelIterator(itertools.repeat(None), save_checkpoint, load_checkpoint, total_steps=args.steps)
    loss = None
    for _ in loader:
        x, y = batch_for(loader.steps_done, rank, world_size, args.batch_size, args.features,
                         args.seed)
        optimizer.zero_grad()
        loss = loss_fn(ddp(x.to(device)), y.to(device))
        loss.backward()  # DDP all-reduces the gradients here: every rank must take every step
        optimizer.step()
        if rank == 0 and loader.steps_done % 100 == 0:
            print("step %d loss %.6f" % (loader.steps_done, loss.item()), flush=True)

    if rank == 0:
        print("loop ended at step %d (%s)" % (
            loader.steps_done, "complete" if loader.completed else "lease end"), flush=True)
        if loader.completed and args.out:
            torch.save(model.state_dict(), args.out)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
