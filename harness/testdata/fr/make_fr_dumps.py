#!/usr/bin/env python3
"""Writes the Flight Recorder test dumps under harness/testdata/fr/<case>/ from REAL runs:
torch (the project venv's, 2.x) records the collectives of a small Gloo job, and every rank that
is still alive dumps its recorder (torch._C._distributed_c10d._dump_fr_trace: torch's pickle, the
file torchfrtrace reads) after its collectives timed out, as NCCL's dump-on-timeout does.

usage: .venv/bin/python harness/testdata/fr/make_fr_dumps.py   (from the repository root; ~1 min)

Cases (3 ranks; each step is an allreduce of 1000 gradient floats, then an allreduce of 1 loss):
  healthy          6 steps, all ranks complete
  skipped          rank 1 skips step 4's gradient allreduce: its loss allreduce (1 float) pairs with
                   its peers' gradient one (1000) and Gloo aborts it (no dump from rank 1)
  stuck            rank 1 stops issuing collectives at step 4 (sleeps 8 s, past the 4 s timeout)
                   and dumps later: alive, but absent from the collective its peers wait in
  mismatched       rank 2 broadcasts at step 3 where its peers allreduce
  killed           rank 1 exits (os._exit) at step 4: no dump from it
  json             the stuck case, dumped as JSON (_dump_fr_trace_json) instead of pickle
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 3

RANK = r'''
import os, sys, time, datetime, torch, torch.distributed as dist
case, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
r = dist.get_rank()
grad, loss = torch.ones(1000), torch.ones(1)

def dump():
    if case == "json":
        data = torch._C._distributed_c10d._dump_fr_trace_json(True, True)
        name = f"rank_{r}.json"
    else:
        data = torch._C._distributed_c10d._dump_fr_trace(True, True)
        name = f"rank_{r}"
    with open(os.path.join(out, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

try:
    for step in range(1, 7):
        if case == "killed" and r == 1 and step == 4:
            os._exit(9)
        if case in ("stuck", "json") and r == 1 and step == 4:
            time.sleep(8)
            break
        if case == "mismatched" and r == 2 and step == 3:
            dist.broadcast(grad, 0)
        elif not (case == "skipped" and r == 1 and step == 4):
            dist.all_reduce(grad)
        dist.all_reduce(loss)
    if case not in ("stuck", "json") or r != 1:
        dist.barrier()
except Exception as e:
    print(f"rank {r}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
dump()
os._exit(0)
'''


def run(case):
    out = os.path.join(HERE, case)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.startswith("rank_"):
            os.remove(os.path.join(out, f))
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "rank.py")
        with open(script, "w") as f:
            f.write(RANK)
        port = 29500 + os.getpid() % 1000
        procs = []
        for r in range(WORLD):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), TORCH_FR_BUFFER_SIZE="2000")
            procs.append(subprocess.Popen([sys.executable, script, case, out], env=env))
        for p in procs:
            p.wait(timeout=120)
    print(case, sorted(os.listdir(out)))


if __name__ == "__main__":
    for c in sys.argv[1:] or ["healthy", "skipped", "stuck", "mismatched", "killed", "json"]:
        run(c)
