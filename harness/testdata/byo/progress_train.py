#!/usr/bin/env python3
"""A small torchrun-style DDP script (Gloo, CPU) that writes no hanglab trace and prints its
progress the way common scripts do, for the bring-your-own triage scenarios
(scenarios/byo_progress_*.toml). Written for this project; not a copy of a third-party file.

Each epoch it runs --steps-per-epoch DDP steps and prints, like pytorch/examples' DDP
tutorial, "[GPU<rank>] Epoch <e> | Batchsize: <b> | Steps: <n>"; every --save-every epochs
rank 0 saves a snapshot with torch.save into $HANGLAB_CKPT_DIR (a slow_storage fault stalls
that save). Reads RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (init_method env://).

Program-logic fault (environment): HANGLAB_BYO_RAISE_EPOCH=E with HANGLAB_BYO_FAULT_RANK=R:
rank R raises RuntimeError at the start of epoch E.
"""

import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--steps-per-epoch", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--step-ms", type=int, default=50, help="simulated compute per step (slept)")
    p.add_argument("--save-every", type=int, default=0, help="rank 0 saves a snapshot every N epochs (0: never)")
    p.add_argument("--size-mb", type=int, default=8, help="snapshot payload")
    a = p.parse_args()
    rank = int(os.environ["RANK"])
    timeout_ms = int(os.environ.get("HANGLAB_COLLECTIVE_TIMEOUT_MS", "30000"))
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(milliseconds=timeout_ms))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    raise_epoch = int(os.environ.get("HANGLAB_BYO_RAISE_EPOCH", "0") or 0)
    fault_rank = int(os.environ.get("HANGLAB_BYO_FAULT_RANK", "1") or 1)
    ckpt_dir = os.environ.get("HANGLAB_CKPT_DIR", "")
    payload = torch.zeros(a.size_mb * 262144)  # float32: 4 bytes each
    for epoch in range(1, a.epochs + 1):
        if epoch == raise_epoch and rank == fault_rank:
            raise RuntimeError(f"rank {rank}: bad batch in epoch {epoch}")
        for _ in range(a.steps_per_epoch):
            x = torch.randn(a.batch_size, 16)
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(a.step_ms / 1000.0)
        print(f"[GPU{rank}] Epoch {epoch} | Batchsize: {a.batch_size} | Steps: {a.steps_per_epoch}", flush=True)
        if a.save_every and epoch % a.save_every == 0 and rank == 0 and ckpt_dir:
            os.makedirs(ckpt_dir, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "epoch": epoch, "payload": payload},
                       os.path.join(ckpt_dir, "snapshot.pt"))
            print(f"Epoch {epoch} | Training snapshot saved at {ckpt_dir}/snapshot.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
