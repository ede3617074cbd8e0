#!/usr/bin/env python3
"""A small DDP script (Gloo, CPU) whose healthy phases are long and silent, for the watchdog's
healthy-but-quiet scenario (scenarios/byo_quiet_phases.toml). Written for this project; not a
copy of a third-party file. Only rank 0 prints, once an epoch ("Epoch <e> done"), as most
training libraries do. Each quiet phase keeps one rank working while its peers wait:
  - rank 0 alone builds its dataset (--prepare-s seconds of CPU) before the first collective,
    while the other ranks wait in DDP's constructor (its parameter broadcast);
  - every --eval-every epochs rank 0 alone evaluates (--eval-s seconds of CPU) while the others
    wait in the barrier that follows;
  - every --save-every epochs rank 0 alone writes a sharded checkpoint into $HANGLAB_CKPT_DIR
    for --save-s seconds (256 KB shards, each serialised with CPU work first) while the others wait in the barrier.
Reads RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (init_method env://).
"""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def busy_for(seconds):
    """CPU work for `seconds` of wall time (sorting random data): a loaded host stretches
    nothing, the phase lasts as long as asked and keeps a thread busy throughout."""
    end = time.monotonic() + seconds
    acc = 0.0
    while time.monotonic() < end:
        acc += float(torch.sort(torch.randn(20000)).values[0])
    return acc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--steps-per-epoch", type=int, default=4)
    p.add_argument("--prepare-s", type=float, default=5)
    p.add_argument("--eval-every", type=int, default=2)
    p.add_argument("--eval-s", type=float, default=5)
    p.add_argument("--save-every", type=int, default=3)
    p.add_argument("--save-s", type=float, default=5)
    a = p.parse_args()
    rank = int(os.environ["RANK"])
    timeout_ms = int(os.environ.get("HANGLAB_COLLECTIVE_TIMEOUT_MS", "60000"))
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(milliseconds=timeout_ms))
    torch.manual_seed(rank)
    if rank == 0:
        busy_for(a.prepare_s)  # building the dataset
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ckpt_dir = os.environ.get("HANGLAB_CKPT_DIR", "")
    for epoch in range(1, a.epochs + 1):
        for _ in range(a.steps_per_epoch):
            loss = model(torch.randn(32, 16)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"Epoch {epoch} done", flush=True)
        if a.eval_every and epoch % a.eval_every == 0:
            if rank == 0:
                busy_for(a.eval_s)  # evaluating
            dist.barrier()
        if a.save_every and epoch % a.save_every == 0 and ckpt_dir:
            if rank == 0:
                os.makedirs(ckpt_dir, exist_ok=True)
                end, shard = time.monotonic() + a.save_s, 0
                while time.monotonic() < end:
                    busy_for(0.05)  # gathering and serialising the shard
                    torch.save({"shard": shard, "data": torch.randn(1 << 16)},
                               os.path.join(ckpt_dir, f"shard_{shard % 4}.pt"))
                    shard += 1
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
