#!/usr/bin/env python3
"""A real PyTorch DDP training script, for hanglab's bring-your-own-rank scenarios.

What it is: the shape of a typical data-parallel training script, using the real Python
stack (torch.distributed on Gloo, DistributedDataParallel, DistributedSampler over a
TensorDataset, a DataLoader, SGD), so that the hangs and errors hanglab provokes around it
produce the logs a real job produces. It writes no hanglab trace: hanglab runs it as a
bring-your-own rank and triage reads its text logs (plus the supervisor's view of the
processes).

Launch: under any hanglab launcher the rank gets torchrun's environment (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_*); the script uses init_method="env://", so it runs unchanged under the local
launcher and under `launcher = "torchrun"` (where env:// joins torchrun's agent store). Run it
with the project venv's interpreter (torch 2.x from PyPI, ci/install-deps.sh):

    [workload]
    command = ["{venv}/bin/python", "{scenario_dir}/../workloads/python_ddp/train.py", "--steps", "12"]

main() is wrapped in torch.distributed.elastic's @record: an uncaught exception is written to
TORCHELASTIC_ERROR_FILE (hanglab points it into the run directory under every launcher;
torchrun reads it into its failure summary).

Timeouts from hanglab: HANGLAB_INIT_TIMEOUT_MS bounds the env:// store rendezvous
(torch.distributed.rendezvous), HANGLAB_COLLECTIVE_TIMEOUT_MS becomes
init_process_group(timeout=...) (every Gloo collective).

Optional faults, by environment ([workload.env] reaches every rank, so each names its
rank): program-logic bugs a real script has, in the places a real script has them.
    HANGLAB_PY_FAULT_RANK=1   the rank that misbehaves (default 1)
    HANGLAB_PY_SKIP_STEP=N    at step N that rank treats its batch as bad (a
                              data-dependent branch) and `continue`s before forward and
                              backward: it never enters DDP's gradient allreduce for N
    HANGLAB_PY_RAISE_STEP=N   at step N that rank raises RuntimeError in its loop
    HANGLAB_PY_EXIT_STEP=N    at step N that rank leaves the loop and exits 0 (early exit)
Each names its variable in the line the rank prints where the fault acts (the warning, the
exception's message, the early-exit line): hanglab's tooling matrix dates the fault by that line.

Flight Recorder (hanglab's [detect] flight_recorder = true sets TORCH_FR_BUFFER_SIZE, so torch
records every collective, and HANGLAB_FR_DUMP, the path of this rank's dump): torch dumps
nothing by itself on Gloo (TORCH_FR_DUMP_ON_TIMEOUT is NCCL's), so this script writes torch's
pickle (_dump_fr_trace, what torchfrtrace reads) to HANGLAB_FR_DUMP, atomically (tmp + rename):
    - when the training loop raises (a collective's timeout, a closed connection), before the
      exception propagates;
    - on SIGTERM (hanglab's and torchrun's teardown; then the rank dies of SIGTERM as it would
      without the recorder) and on SIGUSR1 (hanglab, when a detector fires; the rank goes on);
    - at the end of training, before destroy_process_group().
The signals are taken by a thread of their own (sigwait), not by a Python signal handler: a
handler runs only on the main thread between bytecodes, and a rank stuck in a collective sits
in C++ (with the GIL released) until the collective returns. The thread is armed before torch
starts any thread (they inherit the blocked mask), and writes HANGLAB_FR_DUMP + ".armed" so
the harness knows the rank takes SIGUSR1. A SIGKILLed rank leaves no dump.

Exit: 0 after dist.destroy_process_group(); an exception (a Gloo timeout or a closed
connection surfaces as RuntimeError) ends the process with a traceback and exit 1.
"""

import argparse
import atexit
import datetime
import os
import signal
import sys
import threading
import time

FR_DUMP = os.environ.get("HANGLAB_FR_DUMP", "")
_FR_SIGNALS = {signal.SIGTERM, signal.SIGUSR1}
_fr_lock = threading.Lock()
_fr_closed = threading.Event()  # set at interpreter exit: no dump starts after it


def fr_dump(why):
    """Writes this rank's Flight Recorder dump to HANGLAB_FR_DUMP (tmp + rename); never raises."""
    if not FR_DUMP:
        return
    torch_mod = sys.modules.get("torch")
    if torch_mod is None:  # still importing torch: nothing recorded yet
        return
    if _fr_closed.is_set() or not _fr_lock.acquire(timeout=10):
        return
    try:
        try:
            t0 = time.monotonic()
            data = torch_mod._C._distributed_c10d._dump_fr_trace(True, True)
            os.makedirs(os.path.dirname(FR_DUMP) or ".", exist_ok=True)
            tmp = f"{FR_DUMP}.tmp.{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, FR_DUMP)
            # The duration (torch's dump plus the write) is what `hanglab validate` compares with
            # the launchers' SIGTERM -> SIGKILL grace periods.
            print(f"[rank {os.environ.get('RANK', '?')}] flight recorder: {len(data)} bytes written to "
                  f"{FR_DUMP} in {(time.monotonic() - t0) * 1000:.0f} ms ({why})", file=sys.stderr, flush=True)
        except Exception as e:  # a dump that cannot be written must not change how the rank ends
            print(f"[rank {os.environ.get('RANK', '?')}] flight recorder: no dump ({why}): {e!r}",
                  file=sys.stderr, flush=True)
    finally:
        _fr_lock.release()


def _fr_signal_loop():
    while True:
        sig = signal.sigwait(_FR_SIGNALS)
        # Neutral words on purpose: this line lands in the rank's stderr, which triage reads.
        fr_dump("teardown request" if sig == signal.SIGTERM else "dump request")
        if sig == signal.SIGTERM:
            # End as the rank would have without the recorder: killed by SIGTERM (its
            # disposition is the default; only this thread unblocks it).
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            time.sleep(1)
            os._exit(128 + signal.SIGTERM)


def _fr_at_exit():
    # The signal thread is a daemon: the interpreter would end it in the middle of a dump and
    # leave the tmp file. Wait for a dump under way; none starts after this (never released).
    _fr_closed.set()
    _fr_lock.acquire(timeout=10)


def fr_arm():
    """Blocks SIGTERM/SIGUSR1 here (inherited by every thread started later) and takes them on a
    thread of its own. Called before `import torch`."""
    if not FR_DUMP:
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, _FR_SIGNALS)
    threading.Thread(target=_fr_signal_loop, name="hanglab-flight-recorder", daemon=True).start()
    atexit.register(_fr_at_exit)
    try:
        os.makedirs(os.path.dirname(FR_DUMP) or ".", exist_ok=True)
        with open(FR_DUMP + ".armed", "w") as f:
            f.write(f"{os.getpid()}\n")
    except OSError as e:
        print(f"flight recorder: cannot write {FR_DUMP}.armed: {e!r}", file=sys.stderr, flush=True)


fr_arm()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def env_int(name, default):
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return int(value)
    except ValueError:
        sys.exit(f"{name}={value}: expected an integer")


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch DDP (Gloo) example training script for hanglab")
    p.add_argument("--steps", type=int, default=20, help="training steps across epochs")
    p.add_argument("--batch-size", type=int, default=8, help="samples per batch per rank")
    p.add_argument("--dataset-size", type=int, default=1024, help="samples in the synthetic dataset")
    p.add_argument("--input-dim", type=int, default=16)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--step-ms", type=int, default=100, help="simulated compute per step (slept), ms")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--drop-last", action="store_true", help="DistributedSampler drop_last")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def log(rank, msg):
    # print(..., flush=True): stdout is a pipe under a launcher, and a block-buffered
    # line is a line the incident never shows.
    print(f"[rank {rank}] {msg}", flush=True)


@record
def main():
    args = parse_args()
    rank = env_int("RANK", None)
    world_size = env_int("WORLD_SIZE", None)
    if rank is None or world_size is None:
        sys.exit("RANK and WORLD_SIZE must be set (torchrun-style environment)")
    timeout_ms = env_int("HANGLAB_COLLECTIVE_TIMEOUT_MS", 1800 * 1000)
    init_ms = env_int("HANGLAB_INIT_TIMEOUT_MS", timeout_ms)
    fault_rank = env_int("HANGLAB_PY_FAULT_RANK", 1)
    skip_step = env_int("HANGLAB_PY_SKIP_STEP", 0) if rank == fault_rank else 0
    raise_step = env_int("HANGLAB_PY_RAISE_STEP", 0) if rank == fault_rank else 0
    exit_step = env_int("HANGLAB_PY_EXIT_STEP", 0) if rank == fault_rank else 0

    torch.set_num_threads(1)  # torchrun's default OMP_NUM_THREADS=1: N ranks share the host
    log(rank, f"python_ddp starting: world_size {world_size}, backend gloo, steps {args.steps}, "
              f"master {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}, torch {torch.__version__}, "
              f"pid {os.getpid()}")
    t_start = time.time()
    # Rendezvous (the env:// store: every rank reaching MASTER_ADDR:MASTER_PORT, torchrun's
    # agent store where it serves one) is bounded by the init timeout, the collectives by the
    # collective timeout: init_process_group(timeout=...) alone would bound both by the
    # collective one, and a rank still importing torch on a loaded host would fail the others'
    # rendezvous ("client socket has timed out") although nothing is wrong.
    store, rank, world_size = next(dist.rendezvous("env://", rank, world_size,
                                                   timeout=datetime.timedelta(milliseconds=init_ms)))
    dist.init_process_group(backend="gloo", store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(milliseconds=timeout_ms))
    log(rank, f"process group ready in {(time.time() - t_start) * 1000:.0f} ms "
              f"(gloo, world_size {world_size}, collective timeout {timeout_ms} ms)")

    # The same data on every rank (fixed generator); DistributedSampler gives each rank
    # its share, and the model's initial weights are made equal by DDP's broadcast.
    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.dataset_size, args.input_dim, generator=g)
    teacher = torch.randn(args.input_dim, 1, generator=g)
    y = x @ teacher + 0.1 * torch.randn(args.dataset_size, 1, generator=g)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed,
                                 drop_last=args.drop_last)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers,
                        drop_last=args.drop_last)

    torch.manual_seed(args.seed + rank)  # different on purpose: DDP's constructor broadcasts rank 0's
    model = nn.Sequential(nn.Linear(args.input_dim, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 1))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    log(rank, f"model: {sum(p.numel() for p in model.parameters())} parameters, DDP ready; "
              f"{len(sampler)} samples/rank, {len(loader)} batches/epoch")

    step = 0
    epoch = 0
    last_loss = float("nan")
    while step < args.steps:
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            if step == args.steps:
                break
            step += 1
            t0 = time.time()
            if step == exit_step:
                log(rank, f"step {step}: stopping early (HANGLAB_PY_EXIT_STEP)")
                fr_dump("left the loop early")
                dist.destroy_process_group()
                log(rank, f"done: {step - 1}/{args.steps} steps (left the loop early)")
                return 0
            if step == raise_step:
                raise RuntimeError(f"injected failure at step {step} (HANGLAB_PY_RAISE_STEP)")
            if step == skip_step:
                # The classic DDP hang: a data-dependent branch taken on one rank only.
                # This rank never runs backward for this step, so it never enters the
                # gradient allreduce that its peers are waiting in.
                log(rank, f"WARNING: skipping batch at step {step}: looks bad (HANGLAB_PY_SKIP_STEP)")
                continue
            optimizer.zero_grad()
            loss = loss_fn(ddp(xb), yb)
            time.sleep(args.step_ms / 1000.0 / 3)  # forward is about a third of the step
            loss.backward()  # DDP's reducer allreduces the gradient buckets in here
            time.sleep(args.step_ms / 1000.0 * 2 / 3)
            optimizer.step()
            last_loss = loss.item()
            log(rank, f"step {step}/{args.steps} loss {last_loss:.4f} dur_ms {(time.time() - t0) * 1000:.0f}")
        epoch += 1

    checksum = sum(p.detach().abs().sum().item() for p in model.parameters())
    log(rank, f"done: {step}/{args.steps} steps in {time.time() - t_start:.1f} s, last loss {last_loss:.4f}, "
              f"parameter checksum {checksum:.6f}")
    fr_dump("end of training")
    dist.destroy_process_group()
    return 0


def train_and_dump():
    # The recorder's view of a failed collective is what triage needs most: dump before the
    # exception ends the process.
    try:
        return main()
    except BaseException as e:
        if not isinstance(e, SystemExit) or e.code not in (None, 0):
            fr_dump("the loop ended early")
        raise


if __name__ == "__main__":
    sys.exit(train_and_dump())
