#!/usr/bin/env python3
"""Checks, as a torchrun-style script would rely on it, the environment a rank starts with.

hanglab promises every bring-your-own rank torchrun's whole per-worker contract under every
launcher (local, mpirun, torchrun), and data and checkpoint directories that exist before
launch. This script is what a third-party script does with that promise: it reads every
variable, cds into HANGLAB_CKPT_DIR and writes there, then forms the process group with
init_method="env://" (the way torchrun scripts do) and all-gathers what each rank saw, so a
rank whose RANK / LOCAL_RANK / ROLE_RANK / MASTER_* disagree with its peers' fails the job.

Exit 0 when everything holds; exit 3 with one line per broken promise otherwise.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

CONTRACT = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
            "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
            "TORCHELASTIC_ERROR_FILE"]


@record
def main():
    problems = []
    env = {k: os.environ.get(k) for k in CONTRACT}
    for k, v in env.items():
        if not v:
            problems.append(f"{k} is not set")
    if problems:
        print("\n".join(f"env_contract: {p}" for p in problems), flush=True)
        return 3
    rank, ws = int(env["RANK"]), int(env["WORLD_SIZE"])
    # One node: local = global, one group, one role spanning the world.
    expect = {"LOCAL_RANK": str(rank), "ROLE_RANK": str(rank), "LOCAL_WORLD_SIZE": str(ws),
              "ROLE_WORLD_SIZE": str(ws), "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1"}
    for k, v in expect.items():
        if env[k] != v:
            problems.append(f"{k}={env[k]}, expected {v}")
    if not dist.is_torchelastic_launched():
        problems.append("torch.distributed.is_torchelastic_launched() is False")
    err_dir = os.path.dirname(env["TORCHELASTIC_ERROR_FILE"])
    if not os.path.isdir(err_dir):
        problems.append(f"the directory of TORCHELASTIC_ERROR_FILE ({err_dir}) does not exist")
    for var in ("HANGLAB_DATA_DIR", "HANGLAB_CKPT_DIR"):
        d = os.environ.get(var, "")
        if not d or not os.path.isdir(d):
            problems.append(f"{var}={d!r} is not an existing directory")
    if not problems:
        os.chdir(os.environ["HANGLAB_CKPT_DIR"])
        with open(f"rank{rank}.probe", "w") as f:
            f.write(str(os.getpid()))
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    if dist.get_rank() != rank or dist.get_world_size() != ws:
        problems.append(f"process group says rank {dist.get_rank()} of {dist.get_world_size()}")
    seen = [None] * ws
    dist.all_gather_object(seen, (rank, env["MASTER_ADDR"], env["MASTER_PORT"], env["TORCHELASTIC_RUN_ID"]))
    if sorted(s[0] for s in seen) != list(range(ws)):
        problems.append(f"ranks seen by the group: {sorted(s[0] for s in seen)}")
    if len({s[1:] for s in seen}) != 1:
        problems.append(f"ranks disagree on MASTER_ADDR/PORT/run id: {seen}")
    dist.destroy_process_group()
    if problems:
        print("\n".join(f"[rank {rank}] env_contract: {p}" for p in problems), flush=True)
        return 3
    print(f"[rank {rank}] env_contract: ok ({', '.join(f'{k}={env[k]}' for k in CONTRACT[:11])}; "
          f"restart {env['TORCHELASTIC_RESTART_COUNT']}/{env['TORCHELASTIC_MAX_RESTARTS']}; torch {torch.__version__})",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
