#!/usr/bin/env python3
"""Writes the plain-log fixtures under harness/testdata/logs/<case>/ used by triage_log_corpus_test (reason/log_corpus_test.cpp).

Each case is what an engineer brings from a real incident: per-pod `kubectl logs
--timestamps` files, one combined torchrun/Slurm/Open MPI console log, per-rank files,
dmesg, `kubectl describe` output -- in the formats those tools print (PyTorch
ProcessGroupNCCL watchdog lines of several releases, Gloo, TCPStore, NCCL WARN lines,
torchrun's failure summary, Open MPI and Slurm exit notices, kernel OOM lines). Beside
the logs, expected.json holds the answer the triage must reach: category, cause, missing
ranks, phase, first failing rank, scope, and the command-line arguments to use.

The cases deliberately include interleaved ranks, lines without any clock, truncated last
lines, year-less glog stamps, PG-local ranks that are not global ranks, and a torchrun
"Root Cause" that names the wrong rank.

Run from anywhere: python3 make_log_fixtures.py  (rewrites every case directory).
Deterministic: fixed base time, seeded jitter.
"""
import calendar
import json
import os
import random
import shutil
import time

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = float(calendar.timegm((2026, 11, 29, 8, 0, 0)))
MODEL_NUMEL = 25557032  # ResNet-50 gradients in one flat bucket, as the watchdog prints them


# ---- clocks ------------------------------------------------------------------------------

def iso_ns(t):
    """kubectl logs --timestamps (RFC 3339 with nanoseconds)."""
    whole = int(t)
    ns = int(round((t - whole) * 1e9))
    if ns >= 1000000000:
        whole, ns = whole + 1, ns - 1000000000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + ".%09dZ" % ns


def iso_us(t):
    whole = int(t)
    us = int(round((t - whole) * 1e6))
    if us >= 1000000:
        whole, us = whole + 1, us - 1000000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + ".%06dZ" % us


def pylog(t):
    """Python logging's asctime: '2026-11-29 08:26:59,123'."""
    whole = int(t)
    ms = int((t - whole) * 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole)) + ",%03d" % ms


def glog(t, sev="E", digits=6):
    """glog / c10 header time: 'E1129 08:26:59.123456' (no year)."""
    whole = int(t)
    frac = ("%.9f" % (t - whole))[2:2 + digits]
    return sev + time.strftime("%m%d %H:%M:%S", time.gmtime(whole)) + "." + frac


def dmesg_T(t):
    return "[" + time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(int(t))) + "]"


def torchrun_time(t):
    return time.strftime("%Y-%m-%d_%H:%M:%S", time.gmtime(int(t)))


# ---- common lines ------------------------------------------------------------------------

def watchdog_new(rank, seq, op, numel, t, ran_ms=600023, timeout_ms=600000, pg="0 PG GUID 0(default_pg)",
                 pg_rank=None):
    """PyTorch >= 2.4: glog header with nanoseconds, PG ID/GUID prefix."""
    pr = rank if pg_rank is None else pg_rank
    return ("[rank%d]:[%s ProcessGroupNCCL.cpp:616] [PG ID %s Rank %d] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d) ran for %d "
            "milliseconds before timing out." % (rank, glog(t, "E", 9), pg, pr, seq, op, numel, numel, timeout_ms,
                                                ran_ms))


def watchdog_old(rank, seq, op, numel, timeout_ms=1800000, ran_ms=1800453):
    """PyTorch 2.0/2.1: no clock in the header, '[Rank N]' prefix."""
    return ("[E ProcessGroupNCCL.cpp:475] [Rank %d] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d) ran for %d milliseconds "
            "before timing out." % (rank, seq, op, numel, numel, timeout_ms, ran_ms))


def write_case(name, files, expected, readme):
    d = os.path.join(HERE, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    for rel, text in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    expected = dict(expected)
    expected["about"] = readme
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2, sort_keys=True)
        f.write("\n")


def lines(*ls):
    return "".join(l + "\n" for l in ls)


# ---- cases -------------------------------------------------------------------------------

def nccl_absent_rank():
    """8 pods, kubectl --timestamps, PyTorch 2.4 watchdog; rank 5 never reports."""
    rng = random.Random("nccl_absent_rank")
    world, last_step = 8, 710
    t_start = T0 + 1200.0
    files = {}
    step_t = [t_start + 60 + 1.02 * s for s in range(last_step + 1)]
    hang_t = step_t[last_step] + 0.8
    for r in range(world):
        out = []
        last = [0.0]

        def k(t, s):
            # The collector's clock jitters across pods but never runs backwards in one stream.
            last[0] = max(last[0] + 1e-6, t + rng.uniform(0, 0.004))
            out.append("%s %s" % (iso_ns(last[0]), s))
        k(t_start, "%s - train - INFO - world_size=8 rank=%d local_rank=0 master=train-worker-0:29500 backend=nccl"
          % (pylog(t_start), r))
        k(t_start + 41, "[rank%d]:[%s ProcessGroupNCCL.cpp:867] [PG ID 0 PG GUID 0(default_pg) Rank %d] "
          "ProcessGroupNCCL initialization options: size: 8, global rank: %d, TIMEOUT(ms): 600000"
          % (r, glog(t_start + 41, "I", 9), r, r))
        for s in range(700, last_step + 1):
            k(step_t[s], "%s - train - INFO - step %d/5000 loss %.4f lr 3.0e-04 grad_norm 1.12"
              % (pylog(step_t[s]), s, 2.9 - s / 1000.0 + rng.uniform(-0.05, 0.05)))
        if r != 5:
            tw = hang_t + 600.02 + 0.01 * r
            k(tw, watchdog_new(r, 1423, "ALLREDUCE", MODEL_NUMEL, tw))
            k(tw + 0.0003, "[rank%d]:[%s ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) Rank %d]  "
              "failure detected by watchdog at work sequence id: 1423 PG status: last enqueued work: 1424, last "
              "completed work: 1422" % (r, glog(tw + 0.0003, "E", 9), r))
            k(tw + 0.0005, "[rank%d]:[%s ProcessGroupNCCL.cpp:630] [Rank %d] Some NCCL operations have failed or "
              "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
              "corrupted/incomplete data." % (r, glog(tw + 0.0005, "E", 9), r))
            k(tw + 0.0006, "[rank%d]:[%s ProcessGroupNCCL.cpp:636] [Rank %d] To avoid data inconsistency, we are "
              "taking the entire process down." % (r, glog(tw + 0.0006, "E", 9), r))
        text = "\n".join(out) + "\n"
        if r == 2:
            text = text[:text.rfind("taking the entire") + 10]  # the pod was deleted mid-write
        files["train-worker-%d.log" % r] = text
    write_case("nccl_absent_rank", files, {
        "category": "unknown", "cause": "rank_absent", "missing_ranks": [5], "phase": "training", "scope": "subset",
        "world_size": 8, "last_good_step": 710, "first_failure_rank": 5, "stuck_op": "ALLREDUCE", "stuck_seq": 1423,
    }, "kubectl logs --timestamps of 8 pods (one rank each, rank from the pod name). Seven ranks report the "
       "PyTorch 2.4 watchdog timeout on ALLREDUCE SeqNum 1423; rank 5's log just stops after step 710, with no "
       "exit status anywhere: missing by absence, dead or hung not decidable. train-worker-2.log ends mid-line.")


def absent_top_rank():
    """Rank 3 (the highest) has no log at all; only WORLD_SIZE proves it is missing."""
    for variant in ("absent_top_rank", "absent_top_rank_world_flag"):
        files = {}
        t = T0 + 300.0
        for r in range(3):
            out = []
            if variant == "absent_top_rank":
                out.append("%s INFO launch: MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 WORLD_SIZE=4 RANK=%d "
                           "LOCAL_RANK=%d" % (pylog(t), r, r))
            else:
                out.append("%s INFO launch: MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=%d" % (pylog(t), r))
            for s in range(1, 41):
                ts = t + 5 + 0.5 * s
                out.append("%s INFO step %d loss %.3f" % (pylog(ts), s, 1.0 / s))
            te = t + 5 + 0.5 * 40 + 1800.0 + 0.02 * r
            out += ["Traceback (most recent call last):",
                    '  File "/app/train.py", line 141, in <module>',
                    "    main()",
                    '  File "/app/train.py", line 122, in main',
                    "    dist.all_reduce(grad_flat)",
                    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py", line 79, '
                    "in wrapper",
                    "    return func(*args, **kwargs)",
                    "%s ERROR rank %d failed" % (pylog(te), r),
                    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                    "1800000ms for recv operation to complete"]
            files["rank-%d.log" % r] = lines(*out)
        if variant == "absent_top_rank":
            write_case(variant, files, {
                "category": "unknown", "cause": "rank_absent", "missing_ranks": [3], "phase": "training",
                "scope": "subset", "world_size": 4, "first_failure_rank": 3,
            }, "Per-rank files of a Gloo job; rank-3.log was never collected. WORLD_SIZE=4 in the launch line "
               "is the only proof that rank 3 exists and is missing (the highest rank seen + 1 would be 3).")
        else:
            write_case(variant, files, {
                "args": ["--world-size", "4"],
                "category": "unknown", "cause": "rank_absent", "missing_ranks": [3], "phase": "training",
                "scope": "subset", "world_size": 4, "first_failure_rank": 3,
                "without_args": {"missing_ranks": [], "world_size": 3, "note_contains": "--world-size"},
            }, "Same as absent_top_rank but the logs never state the world size: only --world-size 4 makes rank "
               "3's absence provable; without it the report must say the world size is unknown.")


def numel_mismatch_eval():
    """One torchrun --tee console log, no clocks, interleaved; rank 3 validates alone."""
    rng = random.Random("numel")
    out = []
    out += ["W1129 07:58:01.204000 139988 torch/distributed/run.py:793] ",
            "W1129 07:58:01.204000 139988 torch/distributed/run.py:793] *****************************************",
            "W1129 07:58:01.204000 139988 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable "
            "for each process to be 1 in default, to avoid your system being overloaded, please further tune the "
            "variable for optimal performance in your application as needed.",
            "W1129 07:58:01.204000 139988 torch/distributed/run.py:793] *****************************************"]
    for r in range(4):
        out.append("[default%d]:rank %d/4 starting: world_size=4 backend=nccl eval_every=3600s (time based)" % (r, r))
    order = [0, 1, 2, 3]
    for s in range(2500, 2506):
        rng.shuffle(order)
        for r in order:
            out.append("[default%d]:step %d loss %.4f" % (r, s, 1.7 + rng.uniform(-0.1, 0.1)))
    # rank 3 crossed its hour mark one step before the others: it validates, they train.
    out.append("[default3]:Running validation at step 2506 (3600 s since the last eval)")
    out.append("[default3]:val batch 1/40")
    order = [1, 0, 2]
    for r in order:
        out.append("[default%d]:" % r + watchdog_old(r, 5012, "ALLREDUCE", MODEL_NUMEL, ran_ms=1800451 + r))
    out.append("[default3]:" + watchdog_old(3, 5012, "ALLREDUCE", 1, ran_ms=1800447))
    for r in (0, 3, 1, 2):
        out.append("[default%d]:[E ProcessGroupNCCL.cpp:489] [Rank %d] Some NCCL operations have failed or timed "
                   "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                   "corrupted/incomplete data." % (r, r))
        out.append("[default%d]:[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire "
                   "process down." % r)
    pids = {0: 41232, 1: 41233, 2: 41234, 3: 41235}
    out.append("E1129 08:32:04.101000 139988 torch/distributed/elastic/multiprocessing/api.py:826] failed "
               "(exitcode: -6) local_rank: 0 (pid: 41232) of binary: /usr/bin/python3")
    out += ["Traceback (most recent call last):",
            '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            "train.py FAILED",
            "------------------------------------------------------------",
            "Failures:"]
    for i, r in enumerate([1, 2, 3]):
        out += ["[%d]:" % (i + 1),
                "  time      : 2026-11-29_08:32:04",
                "  host      : gpu-node-7",
                "  rank      : %d (local_rank: %d)" % (r, r),
                "  exitcode  : -6 (pid: %d)" % pids[r],
                "  error_file: <N/A>",
                "  traceback : Signal 6 (SIGABRT) received by PID %d" % pids[r]]
    out += ["------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-29_08:32:04",
            "  host      : gpu-node-7",
            "  rank      : 0 (local_rank: 0)",
            "  exitcode  : -6 (pid: 41232)",
            "  error_file: <N/A>",
            "  traceback : Signal 6 (SIGABRT) received by PID 41232",
            "============================================================"]
    write_case("numel_mismatch_eval", {"train.log": lines(*out)}, {
        "category": "collective_mismatch", "cause": "mismatched_collective", "missing_ranks": [3], "phase": "eval",
        "scope": "subset", "world_size": 4, "first_failure_rank": 3, "divergence_seq": 5012,
    }, "torchrun --tee 3 console log of a single node (ranks from the [defaultN]: prefixes), PyTorch 2.1 "
       "watchdog lines without clocks, ranks interleaved. At SeqNum 5012 ranks 0-2 run the gradient ALLREDUCE "
       "(NumelIn=25557032) while rank 3, whose time-based eval fired one step early, runs a metric ALLREDUCE "
       "(NumelIn=1): a definite collective mismatch. Every rank then aborts (SIGABRT): echoes.")


def oom_cascade():
    """Slurm srun -l combined log, 2 nodes x 4 GPUs; rank 6 CUDA OOM, everything else echoes."""
    rng = random.Random("oom")
    out = []
    t = T0 + 1800.0
    host = lambda r: "node-a" if r < 4 else "node-b"
    pids = {r: 52100 + r for r in range(8)}
    for r in range(8):
        out.append("%d: %s - trainer - INFO - rank=%d world_size=8 host=%s" % (r, pylog(t + 0.01 * r), r, host(r)))
    for r in range(8):
        out.append("%d: %s:%d:%d [%d] NCCL INFO comm 0x55d1c3a0 rank %d nranks 8 cudaDev %d nvmlDev %d busId "
                   "%x000 commId 0x6a3b1e2f9c - Init COMPLETE" % (r, host(r), pids[r], pids[r], r % 4, r, r % 4,
                                                                  r % 4, 0x18 + r % 4))
    step0 = t + 30
    order = list(range(8))
    for s in range(1, 181):
        rng.shuffle(order)
        for r in order:
            ts = step0 + 2.0 * s + 0.002 * r
            out.append("%d: %s - trainer - INFO - step %d loss %.3f tokens/s 41120" % (r, pylog(ts), s, 3.2 - s / 200))
    t_oom = step0 + 2.0 * 181 - 0.65
    out += ["6: Traceback (most recent call last):",
            '6:   File "/workspace/train.py", line 318, in <module>',
            "6:     main()",
            '6:   File "/workspace/train.py", line 271, in train_step',
            "6:     logits = model(input_ids)",
            "6: %s - trainer - ERROR - unhandled exception in train_step on rank 6" % pylog(t_oom),
            "6: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total "
            "capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.92 "
            "GiB memory in use. Of the allocated memory 71.30 GiB is allocated by PyTorch."]
    t_exit = t_oom + 0.9
    out.append("srun: error: node-b: task 6: Exited with exit code 1")
    # Same-host peers lose their NCCL socket to rank 6 at once: echoes.
    for r in (4, 7, 5):
        te = t_oom + 0.4 + 0.01 * r
        out.append("%d: node-b:%d:%d [%d] NCCL WARN Net : Connection closed by remote peer node-b<%d>"
                   % (r, pids[r], pids[r] + 77, r % 4, 46000 + r))
    # The other node only notices at its watchdog timeout, 30 min later.
    tw = t_oom + 1800.02
    for r in (0, 2, 1, 3, 4, 5, 7):
        ti = tw + 0.003 * r
        out.append("%d: " % r + watchdog_new(r, 362, "ALLREDUCE", MODEL_NUMEL, ti, ran_ms=1800019, timeout_ms=1800000,
                                             pg="0 PG GUID 0(default_pg)"))
        out.append("%d: [rank%d]:[%s ProcessGroupNCCL.cpp:630] [Rank %d] Some NCCL operations have failed or timed "
                   "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                   "corrupted/incomplete data." % (r, r, glog(ti + 0.001, "E", 9), r))
    for r in (0, 1, 2, 3, 4, 5, 7):
        out.append("srun: error: %s: task %d: Aborted (core dumped)" % (host(r), r))
    out.append("slurmstepd: error: *** STEP 88231.0 ON node-a CANCELLED AT 2026-11-29T09:09:05 ***")
    write_case("oom_cascade", {"slurm-88231.out": lines(*out)}, {
        "category": "rank_exit", "cause": "cuda_oom", "missing_ranks": [6], "phase": "training", "scope": "subset",
        "world_size": 8, "first_failure_rank": 6, "last_good_step": 180,
    }, "Slurm job, srun -l labels, 8 ranks on two nodes interleaved in one file. Rank 6 dies of CUDA OOM at step "
       "181; its node-b peers lose their NCCL sockets within a second, node-a's ranks hit the watchdog 30 min "
       "later, and srun reports aborts: all echoes of rank 6.")


def torchrun_misleading_root():
    """torchrun names rank 1 as Root Cause by whole-second stamps; rank 2 was OOM-killed first."""
    out = []
    t = T0 + 1500.0
    pids = {0: 4240, 1: 4241, 2: 4242, 3: 4243}
    for r in range(4):
        out.append("%s [rank%d]:%s - train - INFO - world_size=4 rank=%d" % (iso_ns(t + 0.01 * r), r, pylog(t), r))
    for s in range(1, 61):
        for r in range(4):
            ts = t + 10 + 1.5 * s + 0.001 * r
            out.append("%s [rank%d]:%s - train - INFO - step %d loss %.3f" % (iso_ns(ts), r, pylog(ts), s, 2 - s / 60))
    t_kill = t + 10 + 1.5 * 60 + 0.79   # the kernel kills rank 2 (pid 4242); its log just stops
    t_err = t_kill + 0.7
    out += ["%s [rank1]:Traceback (most recent call last):" % iso_ns(t_err),
            '%s [rank1]:  File "/app/train.py", line 88, in <module>' % iso_ns(t_err),
            "%s [rank1]:    loss.backward()" % iso_ns(t_err),
            "%s [rank1]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils."
            "hpp:317, remote process exited or there was a network error, NCCL version 2.20.5" % iso_ns(t_err),
            "%s [rank1]:ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely." % iso_ns(t_err + 0.0001)]
    ta = t_err + 0.7
    for r in (0, 3):
        out.append("%s W1129 %s 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process %d "
                   "closing signal SIGTERM" % (iso_ns(ta), glog(ta, "W")[6:], pids[r]))
    out.append("%s E1129 %s 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
               "local_rank: 1 (pid: 4241) of binary: /usr/bin/python3" % (iso_ns(ta + 0.3), glog(ta + 0.3)[6:]))
    summary = ["Traceback (most recent call last):",
               '  File "/usr/local/bin/torchrun", line 8, in <module>',
               "    sys.exit(main())",
               "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
               "============================================================",
               "train.py FAILED",
               "------------------------------------------------------------",
               "Failures:",
               "[1]:",
               "  time      : %s" % torchrun_time(t_kill + 1.3),
               "  host      : train-0",
               "  rank      : 2 (local_rank: 2)",
               "  exitcode  : -9 (pid: 4242)",
               "  error_file: <N/A>",
               "  traceback : Signal 9 (SIGKILL) received by PID 4242",
               "------------------------------------------------------------",
               "Root Cause (first observed failure):",
               "[0]:",
               "  time      : %s" % torchrun_time(t_err),
               "  host      : train-0",
               "  rank      : 1 (local_rank: 1)",
               "  exitcode  : 1 (pid: 4241)",
               "  error_file: /tmp/torchelastic_3x1k/none_ab12/attempt_0/1/error.json",
               "  traceback : Traceback (most recent call last):",
               "============================================================"]
    out += ["%s %s" % (iso_ns(ta + 0.4), l) for l in summary]
    dmesg = lines(
        "%s python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"
        % dmesg_T(t_kill),
        "%s oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=pod-4d2a,mems_allowed=0-1,oom_memcg=/kubepods/"
        "pod-4d2a,task_memcg=/kubepods/pod-4d2a,task=python,pid=4242,uid=0" % dmesg_T(t_kill),
        "%s Memory cgroup out of memory: Killed process 4242 (python) total-vm:98112340kB, anon-rss:61233012kB, "
        "file-rss:102312kB, shmem-rss:0kB, UID:0 pgtables:121344kB oom_score_adj:0" % dmesg_T(t_kill),
        "%s oom_reaper: reaped process 4242 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"
        % dmesg_T(t_kill + 1))
    write_case("torchrun_misleading_root", {"train-0.log": lines(*out), "dmesg-train-node.txt": dmesg}, {
        "category": "rank_exit", "cause": "oom", "missing_ranks": [2], "phase": "training", "scope": "subset",
        "world_size": 4, "first_failure_rank": 2, "note_contains": "torchrun's \"Root Cause\" (rank 1)",
    }, "A pod's torchrun log (kubectl --timestamps) plus the node's dmesg -T. The kernel OOM-kills rank 2 "
       "(pid 4242) at 08:26:40 (whole seconds); rank 1 then raises DistBackendError 'remote process exited' "
       "0.7 s later. torchrun's summary names rank 1 as 'Root Cause (first observed failure)' because it orders "
       "by whole-second times of when it noticed each exit: misleading. Triage must name rank 2 (OOM).")


def gloo_peer_closed():
    """Per-rank files named rank_N.log, Python logging clocks, no rank in the lines."""
    files = {}
    t = T0 + 600.0
    for r in range(4):
        out = ["%s - trainer - INFO - torch.distributed initialized: backend=gloo world_size=4 rank=%d"
               % (pylog(t + 0.02 * r), r)]
        last = 120 if r == 2 else 120
        for s in range(100, last + 1):
            ts = t + 20 + 0.8 * s + 0.003 * r
            out.append("%s - trainer - INFO - step %d loss %.4f" % (pylog(ts), s, 0.5 - s / 1000))
        if r != 2:
            te = t + 20 + 0.8 * 121 + 0.05 + 0.004 * r
            out += ["%s - trainer - ERROR - allreduce failed at step 121" % pylog(te),
                    "Traceback (most recent call last):",
                    '  File "train.py", line 201, in <module>',
                    "    dist.all_reduce(buf)",
                    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                    "[10.0.0.3]:28315"]
        text = "\n".join(out) + "\n"
        if r == 3:
            text = text[:-20]  # the copy was taken while the file was being written
        files["rank_%d.log" % r] = text
    write_case("gloo_peer_closed", files, {
        "category": "rank_exit", "cause": "killed", "missing_ranks": [2], "phase": "training", "scope": "subset",
        "world_size": 4, "first_failure_rank": 2, "last_good_step": 120,
    }, "Per-rank files (rank from the file name) with Python logging clocks. Rank 2's log stops after step 120 "
       "without an error; its three peers then get Gloo 'Connection closed by peer': rank 2's process died. "
       "rank_3.log ends mid-line.")


def gloo_frozen_peer_timeout():
    """Like gloo_peer_closed, but rank 2 is frozen (alive), not dead: the first peer to time
    out closes its connections, and the others, whose own deadlines were a few ms later,
    get 'Connection closed by peer' from it -- echoes of a timeout, not of a death."""
    files = {}
    t = T0 + 600.0
    for r in range(4):
        out = ["%s - trainer - INFO - torch.distributed initialized: backend=gloo world_size=4 rank=%d"
               % (pylog(t + 0.02 * r), r)]
        for s in range(100, 121):
            ts = t + 20 + 0.8 * s + 0.003 * r
            out.append("%s - trainer - INFO - step %d loss %.4f" % (pylog(ts), s, 0.5 - s / 1000))
        # Rank 0 closes its connections when its deadline passes but logs the timeout 20 ms
        # after its peers log the closed connection (the exception's way up to the log).
        te = t + 20 + 0.8 * 121 + 5.0 + (0.03 if r == 0 else 0.01)
        if r == 0:
            err = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                   "5000ms for recv operation to complete")
        elif r != 2:
            err = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                   "[127.0.0.1]:%d" % (28315 + r))
        if r != 2:
            out += ["%s - trainer - ERROR - allreduce failed at step 121" % pylog(te),
                    "Traceback (most recent call last):",
                    '  File "train.py", line 201, in <module>',
                    "    loss.backward()",
                    err]
        files["rank_%d.log" % r] = "\n".join(out) + "\n"
    write_case("gloo_frozen_peer_timeout", files, {
        "category": "straggler", "cause": "unresponsive", "missing_ranks": [2], "phase": "training",
        "scope": "subset", "world_size": 4, "first_failure_rank": 2,
    }, "Rank 2 froze after step 120 (alive, silent). Rank 0 times out in step 121's allreduce and closes its "
       "connections; ranks 1,3 get 'Connection closed by peer' from it and log it 20 ms before rank 0 logs its "
       "timeout. A closed connection caused by a peer's own timeout proves no death: not rank_exit/killed.")


def mpi_signal():
    """mpirun --tag-output, no clocks at all."""
    out = []
    for r in range(4):
        out.append("[1,%d]<stdout>:world_size=4 rank=%d backend=mpi" % (r, r))
    for s in range(290, 301):
        for r in (2, 0, 3, 1):
            out.append("[1,%d]<stdout>:step %d loss %.3f" % (r, s, 0.9 - s / 1000))
    for r in (0, 1):
        out.append("[1,%d]<stdout>:step 301 loss 0.598" % r)
    for r in (3, 0, 1):
        out.append("[1,%d]<stderr>:RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
                   "closed by peer [10.1.0.12]:6127" % r)
    out += ["--------------------------------------------------------------------------",
            "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.",
            "--------------------------------------------------------------------------",
            "--------------------------------------------------------------------------",
            "mpirun noticed that process rank 2 with PID 0 on node node-12 exited on signal 9 (Killed).",
            "--------------------------------------------------------------------------"]
    write_case("mpi_signal", {"mpirun.out": lines(*out)}, {
        "category": "rank_exit", "cause": "killed", "missing_ranks": [2], "phase": "training", "scope": "subset",
        "world_size": 4, "first_failure_rank": 2,
    }, "Open MPI --tag-output console, [1,N]<stream>: prefixes, not a single timestamp: order by position only. "
       "Rank 2 stops after step 300; mpirun reports it killed by signal 9; the peers' closed connections are "
       "echoes.")


def srun_segfault():
    """srun -l labels with glog stamps (no year)."""
    out = []
    t = T0 + 900.0
    for r in range(4):
        out.append("%d: %s 4121%d train.cpp:88] world_size=4 rank=%d" % (r, glog(t + 0.1 * r, "I"), r, r))
    for s in range(395, 401):
        for r in range(4):
            ts = t + 10 + 0.7 * s + 0.002 * r
            out.append("%d: %s 4121%d train.cpp:212] step %d loss %.4f" % (r, glog(ts, "I"), r, s, 0.33))
    tc = t + 10 + 0.7 * 401 - 0.3
    out += ["1: *** Aborted at 1795938611 (unix time) try \"date -d @1795938611\" if you are using GNU date ***",
            "1: *** SIGSEGV (@0x0) received by PID 41211 (TID 0x7f3a2c1ff640) from PID 0; stack trace: ***",
            "1:     @     0x7f3a6f2e5520 (unknown)",
            "1:     @     0x55d0c1a3f7d4 Model::forward()",
            "srun: error: node-1: task 1: Segmentation fault (core dumped)"]
    for r in (0, 2, 3):
        te = tc + 0.2 + 0.01 * r
        out += ["%d: terminate called after throwing an instance of 'gloo::IoException'" % r,
                "%d:   what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:45711: "
                "Connection reset by peer" % r]
    for r in (0, 2, 3):
        out.append("srun: error: node-%d: task %d: Aborted (core dumped)" % (0 if r < 2 else 1, r))
    write_case("srun_segfault", {"slurm-5120.out": lines(*out)}, {
        "category": "rank_exit", "cause": "segfault", "missing_ranks": [1], "phase": "training", "scope": "subset",
        "world_size": 4, "first_failure_rank": 1,
    }, "Slurm srun -l output of a C++ trainer logging with glog (stamps without a year). Rank 1 segfaults "
       "(glog's failure handler, then srun's notice); the peers' gloo::IoException 'Connection reset by peer' and "
       "their aborts are echoes.")


def dataloader_bus_error():
    """Kubeflow PyTorchJob: master-0 is rank 0, worker-N is rank N+1."""
    files = {}
    t = T0 + 2400.0
    pods = ["pytorchjob-master-0", "pytorchjob-worker-0", "pytorchjob-worker-1", "pytorchjob-worker-2"]
    for r, pod in enumerate(pods):
        out = ["%s %s - INFO - WORLD_SIZE=4 RANK=%d num_workers=8" % (iso_ns(t), pylog(t), r)]
        for s in range(1000, 1013):
            ts = t + 30 + 1.1 * s + 0.01 * r
            out.append("%s %s - INFO - step %d loss %.3f" % (iso_ns(ts), pylog(ts), s, 1.1))
        if r == 2:
            te = t + 30 + 1.1 * 1013 + 0.4
            out += ["%s ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
                    "shared memory (shm)." % iso_ns(te),
                    "%s Traceback (most recent call last):" % iso_ns(te + 0.01),
                    '%s   File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1243, in '
                    "_try_get_data" % iso_ns(te + 0.01),
                    "%s RuntimeError: DataLoader worker (pid 3127) is killed by signal: Bus error. It is possible "
                    "that dataloader's workers are out of shared memory. Please try to raise your shared memory "
                    "limit." % iso_ns(te + 0.02)]
        else:
            tw = t + 30 + 1.1 * 1013 + 1800.3 + 0.01 * r
            out.append("%s %s" % (iso_ns(tw), watchdog_new(r, 2027, "ALLREDUCE", MODEL_NUMEL, tw, ran_ms=1800007,
                                                           timeout_ms=1800000)))
        files["%s.log" % pod] = lines(*out)
    write_case("dataloader_bus_error", files, {
        "category": "data_loading", "cause": "shm_exhausted", "missing_ranks": [2], "phase": "training",
        "scope": "subset", "world_size": 4, "first_failure_rank": 2,
    }, "Kubeflow PyTorchJob pod logs: master-0 is rank 0 and worker-N is rank N+1 (worker-1 is rank 2). Rank 2's "
       "DataLoader worker dies of a bus error (too small /dev/shm); the others time out 30 min later.")


def nccl_shm_init():
    out = []
    t = T0 + 60.0
    for r in range(4):
        out.append("%s [rank%d]:%s - INFO - world_size=4 rank=%d init_process_group(nccl) done" % (iso_us(t), r, pylog(t), r))
    out.append("%s [rank2]:gpu-3:2381:2460 [2] NCCL WARN Error while creating shared memory segment "
               "/dev/shm/nccl-8DkzRf (size 9637888)" % iso_us(t + 2.1))
    for r in (2, 0, 1, 3):
        te = t + 2.2 + 0.05 * r
        out += ["%s [rank%d]:Traceback (most recent call last):" % (iso_us(te), r),
                '%s [rank%d]:  File "/app/train.py", line 54, in <module>' % (iso_us(te), r),
                "%s [rank%d]:    model = DDP(model, device_ids=[local_rank])" % (iso_us(te), r),
                "%s [rank%d]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
                "version 2.20.5" % (iso_us(te + 0.001), r)]
    write_case("nccl_shm_init", {"job.log": lines(*out)}, {
        "category": "resource_limit", "cause": "nccl_shm", "missing_ranks": [], "phase": "init",
        "scope": "all", "world_size": 4,
    }, "NCCL cannot create its /dev/shm segment while building the communicator (the container's /dev/shm is "
       "64 MiB): 'unhandled system error' on every rank before the first step.")


def wrong_ifname_nccl():
    out = []
    t = T0 + 30.0
    for r in range(4):
        out.append("%s [rank%d]:%s - INFO - world_size=4 NCCL_SOCKET_IFNAME=eth1" % (iso_us(t), r, pylog(t)))
    for r in range(4):
        te = t + 1.5 + 0.01 * r
        out.append("%s [rank%d]:worker-%d:%d:%d [0] NCCL WARN Bootstrap : no socket interface found"
                   % (iso_us(te), r, r, 900 + r, 900 + r))
        out.append("%s [rank%d]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                   "ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, "
                   "NCCL version 2.18.1" % (iso_us(te + 0.01), r))
    write_case("wrong_ifname_nccl", {"job.log": lines(*out)}, {
        "category": "network", "cause": "wrong_ifname", "missing_ranks": [], "phase": "init", "scope": "all",
        "world_size": 4,
    }, "NCCL_SOCKET_IFNAME names an interface the nodes do not have: every rank fails bootstrap.")


def store_timeout():
    files = {}
    t = T0 + 10.0
    for r in range(3):
        out = ["%s INFO:train:launch RANK=%d WORLD_SIZE=4 MASTER_ADDR=train-0 MASTER_PORT=29500" % (pylog(t), r)]
        te = t + 1800.5 + 0.1 * r
        if r == 0:
            out += ["Traceback (most recent call last):",
                    '  File "/app/train.py", line 30, in <module>',
                    "    dist.init_process_group('nccl')",
                    "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 3/4 "
                    "clients joined."]
        else:
            out += ["Traceback (most recent call last):",
                    '  File "/app/train.py", line 30, in <module>',
                    "    dist.init_process_group('nccl')",
                    "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier "
                    "on rank %d, for key: store_based_barrier_key:1 (world_size=4, num_workers_joined=3, "
                    "timeout=0:30:00)" % r]
        files["rank-%d.log" % r] = lines(*out)
    write_case("store_timeout", files, {
        "category": "rendezvous", "cause": "rendezvous_timeout", "missing_ranks": [3], "phase": "init",
        "scope": "subset", "world_size": 4, "first_failure_rank": 3,
    }, "Rank 3's pod never started (no log). The store counts 3/4 clients; ranks 0-2 time out in "
       "init_process_group.")


def slow_rank_step_jump():
    """Steps slow down for everyone (synchronous training is paced by its slowest rank), then rank 1
    misses the collective for a whole timeout while still alive."""
    files = {}
    t = T0 + 3000.0
    step_t = {}
    tt = t + 20
    for s in range(1, 501):
        tt += 1.0 if s <= 494 else 1.0 + 1.6 * (s - 494)  # rank 1's node starts throttling at step 495
        step_t[s] = tt
    t_timeout = step_t[500] + 60.0 + 0.4  # the peers wait in step 501's allreduce
    for r in range(4):
        out = ["%s [rank%d] world_size=4 backend=gloo timeout=60s" % (iso_ns(t), r)]
        for s in range(480, 501):
            out.append("%s [rank%d] step %d loss %.3f" % (iso_ns(step_t[s] + 0.002 * r), r, s, 0.4))
        if r != 1:
            out.append("%s [rank%d] RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed "
                       "out waiting 60000ms for recv operation to complete" % (iso_ns(t_timeout + 0.01 * r), r))
        else:
            out.append("%s [rank1] data batch 501 ready after 71.2 s" % iso_ns(t_timeout + 11.2))
            out.append("%s [rank1] RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                       "closed by peer [10.0.0.1]:41200" % iso_ns(t_timeout + 11.3))
        files["worker-%d.log" % r] = lines(*out)
    write_case("slow_rank_step_jump", files, {
        "category": "straggler", "cause": "slow_rank", "missing_ranks": [1], "phase": "training", "scope": "subset",
        "world_size": 4, "first_failure_rank": 1, "last_good_step": 500,
    }, "The step interval grows from 1 s to 10 s over the last steps (rank 1's node is throttled and paces "
       "everyone), then rank 1 spends 71 s on step 501's data: its peers time out in Gloo after 60 s, while rank 1 "
       "still logs, and when it reaches the collective it finds them gone: slow, not dead.")


def checkpoint_stall():
    files = {}
    t = T0 + 5000.0
    for r in range(4):
        out = ["%s [rank%d]:%s - INFO - world_size=4" % (iso_ns(t), r, pylog(t))]
        for s in range(2990, 3001):
            ts = t + 10 + 1.0 * (s - 2989) + 0.01 * r
            out.append("%s [rank%d]:%s - INFO - step %d loss 0.812" % (iso_ns(ts), r, pylog(ts), s))
        tc = t + 10 + 1.0 * 12
        if r == 0:
            out.append("%s [rank0]:%s - INFO - Saving checkpoint to /mnt/shared/ckpt/step_3000 (8.1 GiB)"
                       % (iso_ns(tc), pylog(tc)))
        else:
            tw = tc + 600.1 + 0.01 * r
            out.append("%s %s" % (iso_ns(tw), watchdog_new(r, 6004, "BARRIER", 1, tw, ran_ms=600004)))
        files["train-%d.log" % r] = lines(*out)
    files["node-0-dmesg.txt"] = lines(
        "%s nfs: server fs01 not responding, still trying" % dmesg_T(t + 10 + 1.0 * 12 + 31),
        "%s INFO: task python:7712 blocked for more than 122 seconds." % dmesg_T(t + 10 + 1.0 * 12 + 123),
        "%s \"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message." % dmesg_T(t + 10 + 12 + 123))
    write_case("checkpoint_stall", files, {
        "category": "straggler", "cause": "slow_storage", "missing_ranks": [0], "phase": "checkpoint",
        "scope": "subset", "world_size": 4, "first_failure_rank": 0,
    }, "Rank 0 starts saving a checkpoint to NFS and never finishes (the node's dmesg: server not responding, a "
       "task blocked); ranks 1-3 time out in the barrier after the save.")


def ib_link_down():
    out_files = {}
    t = T0 + 7000.0
    for node, ranks in (("node-a", range(0, 4)), ("node-b", range(4, 8))):
        out = []
        for r in ranks:
            out.append("%s [rank%d]:%s - INFO - world_size=8" % (iso_ns(t), r, pylog(t)))
        for s in range(800, 811):
            for r in ranks:
                ts = t + 10 + 0.5 * (s - 799) + 0.001 * r
                out.append("%s [rank%d]:%s - INFO - step %d loss 1.01" % (iso_ns(ts), r, pylog(ts), s))
        tb = t + 10 + 0.5 * 12
        if node == "node-b":
            for r in ranks:
                out.append("%s [rank%d]:node-b:%d:%d [%d] NCCL WARN NET/IB : Got completion from peer "
                           "10.10.1.11<38102> with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid "
                           "::ffff:10.10.1.12 remoteGid ::ffff:10.10.1.11" % (iso_ns(tb + 0.01 * r), r, 7000 + r,
                                                                              7100 + r, r - 4))
        for r in ranks:
            tw = tb + 600.2 + 0.01 * r
            out.append("%s %s" % (iso_ns(tw), watchdog_new(r, 1622, "ALLREDUCE", MODEL_NUMEL, tw, ran_ms=600091)))
        out_files["%s.log" % node] = lines(*out)
    write_case("ib_link_down", out_files, {
        "category": "network", "cause": "ib_error", "missing_ranks": [], "phase": "training", "scope": "all",
        "world_size": 8,
    }, "Two node logs (torchrun, [rankN]: prefixes). node-b's ranks log NCCL NET/IB completion errors (error 12, "
       "retry exceeded) and then every rank, on both nodes, times out in the same ALLREDUCE: a link, nobody "
       "missing.")


def all_stuck_no_clue():
    files = {}
    t = T0 + 8000.0
    for r in range(4):
        out = ["%s [rank%d]:%s - INFO - world_size=4" % (iso_ns(t), r, pylog(t))]
        for s in range(40, 51):
            ts = t + 10 + 2.0 * (s - 39) + 0.01 * r
            out.append("%s [rank%d]:%s - INFO - step %d loss 0.3" % (iso_ns(ts), r, pylog(ts), s))
        tw = t + 10 + 2.0 * 12 + 600.1 + 0.02 * r
        out.append("%s %s" % (iso_ns(tw), watchdog_new(r, 101, "ALLREDUCE", MODEL_NUMEL, tw)))
        files["rank%d.log" % r] = lines(*out)
    write_case("all_stuck_no_clue", files, {
        "category": "unknown", "cause": "all_ranks_waiting", "missing_ranks": [], "phase": "training",
        "scope": "all", "world_size": 4,
    }, "Every rank times out in the same ALLREDUCE and nothing else is logged: nobody is missing, and the logs "
       "cannot say why -- the report must say unknown.")


def healthy():
    files = {}
    t = T0 + 100.0
    for r in range(4):
        out = ["%s [rank%d] world_size=4" % (iso_us(t), r)]
        for s in range(1, 21):
            out.append("%s [rank%d] step %d/20 loss %.3f" % (iso_us(t + s + 0.01 * r), r, s, 1.0 / s))
        out.append("%s [rank%d] Training completed in 21.0 s" % (iso_us(t + 21.2), r))
        files["rank-%d.log" % r] = lines(*out)
    write_case("healthy", files, {
        "category": "none", "cause": "none", "missing_ranks": [], "phase": "training", "scope": "none",
        "world_size": 4, "last_good_step": 20,
    }, "Four ranks train 20 steps and say so.")


def desync_data_stall():
    files = {}
    t = T0 + 9000.0
    for r in range(8):
        out = ["%s [rank%d]:%s - INFO - world_size=8 data=s3://bucket/corpus" % (iso_ns(t), r, pylog(t))]
        for s in range(2190, 2201):
            ts = t + 20 + 1.2 * (s - 2189) + 0.003 * r
            out.append("%s [rank%d]:%s - INFO - step %d loss 2.2" % (iso_ns(ts), r, pylog(ts), s))
        tl = t + 20 + 1.2 * 12
        if r == 5:
            out.append("%s [rank5]:%s - INFO - Fetching batch 2201 from s3://bucket/corpus/shard-00042.tar"
                       % (iso_ns(tl), pylog(tl)))
            td = tl + 600.4
            out.append("%s [rank5]:[%s ProcessGroupNCCL.cpp:1419] [PG ID 0 PG GUID 0(default_pg) Rank 5] Received a "
                       "dump signal due to a collective timeout from  rank 0 and we will try our best to dump the "
                       "debug info. Last enqueued NCCL work: 4400, last completed NCCL work: 4400.This is most likely "
                       "caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of "
                       "collectives is not same for all ranks or the scheduled collective, for some reason, didn't "
                       "run." % (iso_ns(td), glog(td, "E", 9)))
        else:
            tw = tl + 600.1 + 0.01 * r
            out.append("%s %s" % (iso_ns(tw), watchdog_new(r, 4401, "ALLREDUCE", MODEL_NUMEL, tw)))
            if r == 0:
                out.append("%s [rank0]:[%s ProcessGroupNCCL.cpp:1270] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
                           "Observed flight recorder dump signal from another rank via TCPStore." % (iso_ns(tw + 0.2),
                                                                                                     glog(tw + 0.2, "E", 9)))
                out.append("%s [rank0]:\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the "
                           "desync are:" % iso_ns(tw + 0.3))
                out.append("%s [rank0]:\t   - [5] finished collective #4400, but didn't join collective #4401 (count "
                           "from 1)" % iso_ns(tw + 0.3))
            th = tw + 480
            out.append("%s [rank%d]:[%s ProcessGroupNCCL.cpp:1332] [PG ID 0 PG GUID 0(default_pg) Rank %d] Heartbeat "
                       "monitor timed out! Process will be terminated after dumping debug info. "
                       "workMetaList_.size()=1" % (iso_ns(th), r, glog(th, "E", 9), r))
        files["trainer-rank%d.log" % r] = lines(*out)
    write_case("desync_data_stall", files, {
        "category": "data_loading", "cause": "data_loader_stall", "missing_ranks": [5], "phase": "data",
        "scope": "subset", "world_size": 8, "first_failure_rank": 5,
    }, "PyTorch 2.4 logs with [PG ID 0 PG GUID 0(default_pg) Rank N] prefixes and the desync report. Rank 5 "
       "is fetching a batch from object storage and never joins ALLREDUCE SeqNum 4401; it is alive (it answers "
       "the dump signal). The heartbeat-monitor lines are echoes.")


def subgroup_pg_ranks():
    files = {}
    t = T0 + 11000.0
    for r in range(8):
        out = ["%s [rank%d]:%s - INFO - world_size=8 tp=4 pp=2" % (iso_ns(t), r, pylog(t))]
        if r >= 4:
            out.append("%s [rank%d]:[%s ProcessGroupNCCL.cpp:867] [PG ID 1 PG GUID 1 Rank %d] ProcessGroupNCCL "
                       "initialization options: size: 4, global rank: %d, TIMEOUT(ms): 600000"
                       % (iso_ns(t + 5), r, glog(t + 5, "I", 9), r - 4, r))
        for s in range(60, 71):
            ts = t + 20 + 3 * (s - 59) + 0.01 * r
            if r == 6 and s > 68:
                break
            out.append("%s [rank%d]:%s - INFO - step %d loss 3.1" % (iso_ns(ts), r, pylog(ts), s))
        tw = t + 20 + 3 * 13 + 600.05 + 0.01 * r
        if r in (4, 5, 7):
            out.append("%s %s" % (iso_ns(tw), watchdog_new(r, 88, "ALLGATHER", 4194304, tw, pg="1 PG GUID 1",
                                                           pg_rank=r - 4)))
        elif r < 4:
            out.append("%s %s" % (iso_ns(tw + 30), watchdog_new(r, 301, "ALLREDUCE", MODEL_NUMEL, tw + 30)))
        files["pp-tp-rank-%d.log" % r] = lines(*out)
    write_case("subgroup_pg_ranks", files, {
        "category": "unknown", "cause": "rank_absent", "missing_ranks": [6], "phase": "training", "scope": "subset",
        "world_size": 8, "first_failure_rank": 6,
    }, "A tensor-parallel subgroup (PG 1 = global ranks 4-7, PG-local ranks 0-3). Global ranks 4, 5 and 7 time "
       "out in PG 1's ALLGATHER ([PG ID 1 ... Rank 0/1/3]); ranks 0-3 later in the default PG. The missing rank "
       "is global rank 6 (PG 1's local rank 2): PG-local ranks must not be read as global ones.")


def k8s_oomkilled():
    files = {}
    t = T0 + 12000.0
    for r in range(4):
        out = ["%s %s - INFO - world_size=4 rank=%d" % (iso_ns(t), pylog(t), r)]
        for s in range(10, 31):
            ts = t + 10 + 2 * s + 0.01 * r
            if r == 2 and s > 27:
                break
            out.append("%s %s - INFO - step %d loss 0.7" % (iso_ns(ts), pylog(ts), s))
        if r != 2:
            te = t + 10 + 2 * 28 + 0.6 + 0.01 * r
            out.append("%s RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
                       "[10.244.1.17]:63122: Connection reset by peer" % iso_ns(te))
        files["job-worker-%d.log" % r] = lines(*out)
    files["describe-job-worker-2.txt"] = lines(
        "Name:         job-worker-2",
        "Namespace:    research",
        "Containers:",
        "  pytorch:",
        "    State:          Terminated",
        "      Reason:       OOMKilled",
        "      Exit Code:    137",
        "      Started:      Sun, 29 Nov 2026 11:20:02 +0000",
        "      Finished:     Sun, 29 Nov 2026 11:21:07 +0000",
        "    Limits:",
        "      memory:  32Gi")
    write_case("k8s_oomkilled", files, {
        "category": "rank_exit", "cause": "oom", "missing_ranks": [2], "phase": "training", "scope": "subset",
        "world_size": 4, "first_failure_rank": 2,
    }, "Per-pod logs plus kubectl describe of the pod that died: OOMKilled, exit code 137. The peers' Gloo "
       "'Connection reset by peer' are echoes.")


def main():
    for case in (nccl_absent_rank, absent_top_rank, numel_mismatch_eval, oom_cascade, torchrun_misleading_root,
                 gloo_peer_closed, gloo_frozen_peer_timeout, mpi_signal, srun_segfault, dataloader_bus_error, nccl_shm_init, wrong_ifname_nccl,
                 store_timeout, slow_rank_step_jump, checkpoint_stall, ib_link_down, all_stuck_no_clue, healthy,
                 desync_data_stall, subgroup_pg_ranks, k8s_oomkilled):
        case()


if __name__ == "__main__":
    main()
