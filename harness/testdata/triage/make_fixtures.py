#!/usr/bin/env python3
"""Writes the canned run directories under harness/testdata/triage/ used by triage_test.

Each fixture is a small world-size-4 run of a DDP-style workload on Gloo, simulated
here so that timestamps stay consistent across ranks: a collective at sequence k ends
only when every rank has begun k, a rank that never arrives leaves its peers waiting
until a comm error (peer process gone), a backend timeout, or the harness teardown.
The files follow the formats of DESIGN.md exactly (rank trace, harness.jsonl,
time-stamped stdout/stderr, gdb stacks), so the same tests run unchanged when the
fixtures are replaced by recordings of real runs.

Run from anywhere: python3 make_fixtures.py  (rewrites every fixture directory).
Deterministic: fixed base time, seeded jitter.
"""
import calendar
import json
import os
import random
import shutil
import signal

HERE = os.path.dirname(os.path.abspath(__file__))
BASE_T = float(calendar.timegm((2026, 11, 29, 9, 26, 0)))
WORLD = 4
PARAM_NUMEL = 5313          # MLP 16-64-64-1
BUCKETS = [4096, 1217]      # bucket_kb=16 -> two gradient buckets
SIGNAME = {9: "SIGKILL", 15: "SIGTERM", 11: "SIGSEGV", 6: "SIGABRT"}


def ts(t):
    """The harness' stdout/stderr line prefix."""
    whole = int(t)
    us = int(round((t - whole) * 1e6))
    if us == 1000000:
        whole, us = whole + 1, 0
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + ".%06dZ" % us


class CollFailed(Exception):
    def __init__(self, cls, msg, seq):
        super().__init__(msg)
        self.cls, self.msg, self.seq = cls, msg, seq


class Rank:
    def __init__(self, r, pid):
        self.r, self.pid = r, pid
        self.clock = 0.0
        self.events = []     # (t, ordered dict)
        self.stdout = []
        self.stderr = []
        self.state = "run"   # run | blocked | done | dead | frozen | unstarted
        self.seq = 0
        self.blocked = None  # ("coll", seq, begin_t) | ("rdzv", begin_t)
        self.exit_t = None
        self.exit_code = None
        self.exit_signal = None
        self.hb_from = None
        self.hb_until = None
        self.gen = None
        self.pending_send = None
        self.pending_throw = None
        self.last_step = 0


class Sim:
    """Runs rank programs (generators yielding commands) against each other."""

    def __init__(self, name, cfg):
        self.name, self.cfg = name, cfg
        self.rng = random.Random(name)
        self.ranks = [Rank(r, 4101 + r + 100 * cfg.get("pid_block", 0)) for r in range(WORLD)]
        self.harness = []
        self.hb = cfg.get("heartbeat_s", 1.0)
        self.coll_s = cfg.get("collective_s", 5.0)
        self.init_s = cfg.get("init_s", 30.0)
        self.fail_policy = cfg.get("fail_policy")

    def emit(self, rk, ev, **fields):
        d = {"t": round(rk.clock, 6), "rank": rk.r, "ev": ev}
        d.update(fields)
        rk.events.append(d)
        rk.clock += 0.000015  # formatting + write(2) of the line

    def advance(self, rk):
        while rk.state == "run":
            try:
                if rk.pending_throw is not None:
                    exc, rk.pending_throw = rk.pending_throw, None
                    cmd = rk.gen.throw(exc)
                else:
                    val, rk.pending_send = rk.pending_send, None
                    cmd = rk.gen.send(val)
            except StopIteration:
                if rk.state == "run":
                    rk.state = "done"
                return
            kind = cmd[0]
            if kind == "ev":
                self.emit(rk, cmd[1], **cmd[2])
            elif kind == "sleep":
                rk.clock += cmd[1]
            elif kind == "out":
                rk.stdout.append((rk.clock, "[rank %d] %s" % (rk.r, cmd[1])))
            elif kind == "err":
                rk.stderr.append((rk.clock, cmd[1]))
            elif kind == "coll":
                _, op, numel, step = cmd
                rk.seq += 1
                self.emit(rk, "coll", edge="begin", seq=rk.seq, op=op, numel=numel, step=step)
                rk.blocked = ("coll", rk.seq, rk.clock, op, numel, step)
                rk.state = "blocked"
            elif kind == "rdzv":
                rk.blocked = ("rdzv", 0, rk.clock)
                rk.state = "blocked"
            elif kind == "exit":
                self.emit(rk, "exit", code=cmd[1])
                rk.clock += 0.03  # destructors, process teardown
                rk.state = "done"
                rk.exit_t, rk.exit_code = rk.clock, cmd[1]
                rk.hb_until = rk.clock - 0.03
            elif kind == "die":
                rk.state = "dead"
                rk.exit_signal = cmd[1]
                rk.hb_until = rk.clock
                rk.death_t = rk.clock
                rk.exit_t = rk.clock + 0.08  # the supervisor polls waitpid every 100 ms
            elif kind == "freeze":
                rk.state = "frozen"
                rk.hb_until = rk.clock
                rk.freeze_t = rk.clock
            elif kind == "hang":
                rk.state = "hung"  # alive, heartbeating, never returns
            elif kind == "step_done":
                rk.last_step = cmd[1]
            else:
                raise ValueError(cmd)

    def run(self):
        for rk in self.ranks:
            if rk.gen is None:
                rk.state = "unstarted"
        while True:
            for rk in self.ranks:
                self.advance(rk)
            blocked = [rk for rk in self.ranks if rk.state == "blocked"]
            if not blocked:
                return
            key = min((rk.blocked[0] != "rdzv", rk.blocked[1]) for rk in blocked)
            group = [rk for rk in blocked if (rk.blocked[0] != "rdzv", rk.blocked[1]) == key]
            partitioned = key[0] and key[1] == self.cfg.get("partition_seq")
            latest = max(rk.blocked[2] for rk in group)
            if key[0] and len(group) == WORLD and any(latest - rk.blocked[2] > self.coll_s for rk in group):
                # The late rank arrives after its peers' backend timeout fired: they
                # raise, exit, and the late one finds their sockets closed.
                gave_up = min(rk.blocked[2] for rk in group) + self.coll_s
                for rk in group:
                    begin, seq = rk.blocked[2], rk.blocked[1]
                    if latest - begin > self.coll_s:
                        rk.clock = begin + self.coll_s + 0.0011 + 0.0003 * rk.r
                        rk.pending_throw = CollFailed("timeout", gloo_timeout(int(self.coll_s * 1000)), seq)
                    else:
                        rk.clock = max(begin, gave_up + 0.03) + 0.0008
                        rk.pending_throw = CollFailed("comm", conn_closed(41630 + rk.r), seq)
                    rk.blocked = None
                    rk.state = "run"
                continue
            if self.cfg.get("pair_mismatched") and key[0]:
                partitioned |= len({rk.blocked[3] for rk in group}) > 1
            if len(group) == WORLD and not partitioned:
                latest = max(rk.blocked[2] for rk in group)
                numel = group[0].blocked[4] if group[0].blocked[0] == "coll" else 0
                end = latest + 0.0015 + numel * 2e-7
                for rk in group:
                    rk.clock = end + 0.0002 * rk.r
                    if rk.blocked[0] == "coll":
                        _, seq, _, op, numel, step = rk.blocked
                        self.emit(rk, "coll", edge="end", seq=seq, op=op, numel=numel, step=step)
                    rk.blocked = None
                    rk.state = "run"
                continue
            # Somebody never arrives: the waiting ranks fail per the fixture's policy or
            # stay inside until the harness tears the job down.
            progressed = False
            for rk in group:
                res = self.fail_policy(self, rk, group) if self.fail_policy else None
                if res is None:
                    rk.state = "stuck"
                    continue
                t, cls, msg = res
                rk.clock = t
                seq = rk.blocked[1]
                rk.blocked = None
                rk.state = "run"
                rk.pending_throw = CollFailed(cls, msg, seq)
                progressed = True
            if not progressed:
                return

    # ---- harness side -------------------------------------------------------------
    def heartbeats(self, end_t):
        for rk in self.ranks:
            if rk.hb_from is None:
                continue
            until = rk.hb_until if rk.hb_until is not None else end_t
            t = rk.hb_from
            k = 0
            while t <= until:
                rk.events.append({"t": round(t, 6), "rank": rk.r, "ev": "hb"})
                k += 1
                t = rk.hb_from + k * self.hb + 0.0004 * ((k * 7 + rk.r) % 5)
            rk.events.sort(key=lambda d: d["t"])

    def h(self, t, ev, **fields):
        d = {"t": round(t, 6), "ev": ev}
        d.update(fields)
        self.harness.append(d)


def rank_program(sim, rk, opts):
    """The DDP training loop as the torch_ddp workload traces it."""
    cfg = sim.cfg
    steps = opts.get("batches", cfg["steps"])
    step_ms = opts.get("step_ms", cfg.get("step_ms", 250))
    ckpt = cfg.get("checkpoint_every", 0)
    rng = random.Random("%s/%d" % (sim.name, rk.r))

    def jit(x):
        return x * (1 + rng.uniform(-0.03, 0.03))

    def fail(e, where, step, code):
        yield ("ev", "error", dict(msg=e.msg, where=where, **{"class": e.cls}, step=step, seq=e.seq))
        yield ("err", "[rank %d] error in %s (step %d, seq %d): %s" % (rk.r, where, step, e.seq, e.msg))
        yield ("exit", code)

    code_of = {"timeout": 11, "comm": 10, "rendezvous": 12}
    yield ("ev", "start", dict(pid=rk.pid, host="node0", world_size=WORLD, backend="gloo", workload="torch_ddp"))
    yield ("out", "torch_ddp: world_size=%d backend=gloo steps=%d batch_size=8" % (WORLD, cfg["steps"]))
    yield ("ev", "phase", dict(name="init", edge="begin", step=0))
    yield ("sleep", 0.05)
    if opts.get("init_error"):
        msg = opts["init_error"]
        yield ("ev", "error", dict(msg=msg, where="init_process_group", **{"class": "rendezvous"}, step=0, seq=0))
        yield ("err", "[rank %d] error in init_process_group: %s" % (rk.r, msg))
        yield ("exit", 12)
        return
    try:
        yield ("rdzv",)
    except CollFailed as e:
        yield ("ev", "error", dict(msg=e.msg, where="init_process_group", **{"class": e.cls}, step=0, seq=0))
        yield ("err", "[rank %d] error in init_process_group: %s" % (rk.r, e.msg))
        yield ("exit", 12)
        return
    yield ("sleep", 0.04)
    try:
        yield ("coll", "broadcast", PARAM_NUMEL, 0)
    except CollFailed as e:
        yield from fail(e, "broadcast", 0, code_of[e.cls])
        return
    yield ("ev", "phase", dict(name="init", edge="end", step=0))
    for s in range(1, steps + 1):
        t0 = rk.clock
        yield ("ev", "phase", dict(name="data", edge="begin", step=s))
        yield ("sleep", jit(0.012))
        yield ("ev", "phase", dict(name="data", edge="end", step=s))
        yield ("ev", "phase", dict(name="forward", edge="begin", step=s))
        if opts.get("raise_at") == s:
            yield ("sleep", jit(step_ms * 0.0003))
            msg = "injected exception"
            yield ("ev", "error", dict(msg=msg, where="forward", **{"class": "other"}, step=s, seq=rk.seq))
            yield ("err", "[rank %d] unhandled exception in forward (step %d): %s" % (rk.r, s, msg))
            yield ("exit", 1)
            return
        if opts.get("freeze_at") == (s, "forward"):
            yield ("sleep", 0.06)
            yield ("freeze",)
            return
        slow = opts["slow_from"][1] if s >= opts.get("slow_from", (1 << 30, 1))[0] else 1
        yield ("sleep", jit(step_ms * 0.0006) * slow)
        yield ("ev", "phase", dict(name="forward", edge="end", step=s))
        loss = 0.70 * (0.96 ** s) + rng.uniform(-0.01, 0.01)
        if s in opts.get("skip_steps", ()):
            # The data-dependent branch: this rank skips the step's gradient allreduces.
            yield ("ev", "phase", dict(name="backward", edge="begin", step=s))
            yield ("sleep", jit(step_ms * 0.0004))
            yield ("ev", "fault", dict(kind="skip_collective",
                                       detail="skipped %d allreduce(s) of step %d" % (len(BUCKETS), s)))
            yield ("out", "skipping gradient allreduce at step %d (hook skip_collective)" % s)
            yield ("ev", "phase", dict(name="backward", edge="end", step=s))
        else:
            yield ("ev", "phase", dict(name="backward", edge="begin", step=s))
            if opts.get("die_at") == (s, "backward"):
                yield ("sleep", jit(step_ms * 0.0004) * 0.5)
                yield ("die", opts["die_signal"])
                return
            yield ("sleep", jit(step_ms * 0.0004) * slow)
            for numel in BUCKETS:
                try:
                    yield ("coll", "allreduce", numel, s)
                except CollFailed as e:
                    yield from fail(e, "allreduce", s, code_of[e.cls])
                    return
            yield ("ev", "phase", dict(name="backward", edge="end", step=s))
        yield ("ev", "phase", dict(name="optimizer", edge="begin", step=s))
        if opts.get("die_at") == (s, "optimizer"):
            yield ("sleep", 0.001)
            yield ("die", opts["die_signal"])
            return
        yield ("sleep", jit(0.004))
        yield ("ev", "phase", dict(name="optimizer", edge="end", step=s))
        dur = (rk.clock - t0) * 1000
        yield ("ev", "step", dict(step=s, dur_ms=round(dur, 3), loss=round(loss, 4)))
        yield ("step_done", s)
        yield ("out", "step %d/%d loss=%.4f dur_ms=%.1f" % (s, cfg["steps"], loss, dur))
        if ckpt and s % ckpt == 0:
            yield ("ev", "phase", dict(name="checkpoint", edge="begin", step=s))
            if rk.r == 0:
                if opts.get("hang_in_checkpoint") == s:
                    yield ("sleep", 0.05)
                    yield ("hang",)
                    return
                yield ("sleep", jit(0.18))
                yield ("out", "saved checkpoint ckpt/step_%d.pt" % s)
            try:
                yield ("coll", "barrier", 0, s)
            except CollFailed as e:
                yield from fail(e, "barrier", s, code_of[e.cls])
                return
            yield ("ev", "phase", dict(name="checkpoint", edge="end", step=s))
    if steps < cfg["steps"]:
        yield ("out", "data loader exhausted after %d batches" % steps)
    yield ("ev", "phase", dict(name="shutdown", edge="begin", step=steps))
    if cfg.get("after_loop") == "barrier":
        try:
            yield ("coll", "barrier", 0, steps)
        except CollFailed as e:
            yield from fail(e, "barrier", steps, code_of[e.cls])
            return
    yield ("sleep", 0.02)
    yield ("ev", "phase", dict(name="shutdown", edge="end", step=steps))
    yield ("out", "done: %d steps" % steps)
    yield ("exit", 0)


def gloo_timeout(ms):
    return ("[/build/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
            "Timed out waiting %dms for recv operation to complete" % ms)


def conn_closed(port):
    return "[/build/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:%d" % port


def build(name, cfg, per_rank_opts, finish):
    sim = Sim(name, cfg)
    launch0 = BASE_T + 0.010
    sim.h(BASE_T, "run_start", scenario=cfg["scenario"], world_size=WORLD, deadline_s=cfg.get("deadline_s", 120),
          timeouts={"init_s": sim.init_s, "collective_s": sim.coll_s, "progress_s": cfg.get("progress_s", 10.0),
                    "heartbeat_s": sim.hb},
          port=29500)
    for rk in sim.ranks:
        t_launch = launch0 + 0.002 * rk.r
        sim.h(t_launch, "launch", rank=rk.r, pid=rk.pid,
              argv=["build/workloads/torch_ddp", "--steps=%d" % cfg["steps"], "--checkpoint_every=%d" % cfg.get("checkpoint_every", 0)])
        rk.launch_t = t_launch
        opts = per_rank_opts.get(rk.r, {})
        if opts.get("never_start"):
            continue
        rk.clock = t_launch + 0.34 + 0.011 * rk.r  # exec + libtorch load
        rk.hb_from = rk.clock + 0.0003
        rk.gen = rank_program(sim, rk, opts)
    sim.run()
    finish(sim)
    write(sim, name, cfg)
    return sim


def harness_exits(sim, rk):
    if rk.exit_t is None:
        return
    by_teardown = getattr(rk, "by_teardown", False)
    if rk.exit_signal:
        sim.h(rk.exit_t, "exit", rank=rk.r, code=None, signal=rk.exit_signal, status=128 + rk.exit_signal,
              by_teardown=by_teardown)
    else:
        sim.h(rk.exit_t, "exit", rank=rk.r, code=rk.exit_code, signal=None, status=rk.exit_code,
              by_teardown=by_teardown)


def std_detections(sim):
    """backend_timeout/backend_error from the rank traces, exit_monitor from exits."""
    for rk in sim.ranks:
        for d in rk.events:
            if d["ev"] == "error" and d["class"] in ("timeout", "comm"):
                det = "backend_timeout" if d["class"] == "timeout" else "backend_error"
                sim.h(d["t"] + 0.004, "detect", detector=det, rank=rk.r, detail=d["msg"])
                break
        if rk.exit_t is not None and (rk.exit_signal or rk.exit_code):
            detail = ("killed by %s" % SIGNAME[rk.exit_signal]) if rk.exit_signal else "exit code %d" % rk.exit_code
            sim.h(rk.exit_t + 0.001, "detect", detector="exit_monitor", rank=rk.r, detail=detail)


def teardown_kill(sim, t_teardown, reason):
    """SIGTERM (+SIGCONT, so a stopped rank can act on it) to every live rank's group."""
    sim.h(t_teardown, "teardown", reason=reason)
    for rk in sim.ranks:
        if rk.exit_t is not None:
            continue
        rk.exit_t, rk.exit_signal = t_teardown + 0.03 + 0.002 * rk.r, 15
        rk.by_teardown = True
        if rk.hb_until is None:
            rk.hb_until = t_teardown + 0.02
    return max(rk.exit_t for rk in sim.ranks)


def write(sim, name, cfg):
    d = os.path.join(HERE, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "scenario.toml"), "w") as f:
        f.write(cfg["toml"])
    sim.harness.sort(key=lambda e: e["t"])
    with open(os.path.join(d, "harness.jsonl"), "w") as f:
        for e in sim.harness:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    for rk in sim.ranks:
        rd = os.path.join(d, "ranks", str(rk.r))
        os.makedirs(rd)
        lines = []
        for e in rk.events:
            head = '{"t":%.6f,"rank":%d,"ev":%s' % (e["t"], e["rank"], json.dumps(e["ev"]))
            rest = {k: v for k, v in e.items() if k not in ("t", "rank", "ev")}
            body = json.dumps(rest, separators=(",", ":"))
            lines.append(head + ("," + body[1:] if rest else "}") + "\n")
        if rk.gen is not None or lines:
            trunc = cfg.get("truncate", {}).get(rk.r)
            if trunc:
                lines[-1] = lines[-1][:trunc]
            with open(os.path.join(rd, "events.jsonl"), "w") as f:
                f.write("".join(lines))
        for fname, items in (("stdout.log", rk.stdout), ("stderr.log", rk.stderr)):
            with open(os.path.join(rd, fname), "w") as f:
                for t, line in sorted(items, key=lambda x: x[0]):
                    f.write("%s %s\n" % (ts(t), line))
        stack = cfg.get("stacks", {}).get(rk.r)
        if stack:
            with open(os.path.join(rd, "stack.txt"), "w") as f:
                f.write(stack(rk))


# ---- gdb stack texts ----------------------------------------------------------------

def gdb_header(rk):
    return ("[New LWP %d]\n[New LWP %d]\n[New LWP %d]\n[Thread debugging using libthread_db enabled]\n"
            "Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"
            % (rk.pid + 7, rk.pid + 8, rk.pid + 9))


def hb_thread(rk, n):
    return ("\nThread %d (Thread 0x7f3a2d7fe6c0 (LWP %d) \"torch_ddp\"):\n"
            "#0  0x00007f3a6f2e57c5 in __GI___clock_nanosleep (clock_id=clock_id@entry=0, flags=flags@entry=0, "
            "req=0x7f3a2d7fdd10, rem=0x7f3a2d7fdd10) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48\n"
            "#1  0x00007f3a6f2ea0b3 in __GI___nanosleep (req=<optimized out>, rem=<optimized out>) at ../sysdeps/unix/sysv/linux/nanosleep.c:25\n"
            "#2  0x000055d0c1a4b2f1 in std::this_thread::sleep_for<long, std::ratio<1l, 1000l> > (__rtime=...) at /usr/include/c++/12/bits/this_thread_sleep.h:80\n"
            "#3  hanglab::Heartbeat::run (this=0x7ffd0a8c1e40) at /work/main/workloads/common/trace.cpp:131\n"
            "#4  0x00007f3a6f4d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6\n"
            "#5  0x00007f3a6f29a144 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n"
            "#6  0x00007f3a6f31a7dc in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81\n"
            % (n, rk.pid + 9))


def gloo_worker_thread(rk, n):
    return ("\nThread %d (Thread 0x7f3a2e7ff6c0 (LWP %d) \"torch_ddp\"):\n"
            "#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x7f3a2e7fe4f0, op=137, expected=0, "
            "futex_word=0x55d0c3b1e0a8) at ./nptl/futex-internal.c:57\n"
            "#1  __futex_abstimed_wait_common (futex_word=0x55d0c3b1e0a8, expected=0, clockid=1, abstime=0x7f3a2e7fe4f0, "
            "private=0, cancel=true) at ./nptl/futex-internal.c:87\n"
            "#2  0x00007f3a6f296e0b in __GI___futex_abstimed_wait_cancelable64 (futex_word=futex_word@entry=0x55d0c3b1e0a8, "
            "expected=expected@entry=0, clockid=clockid@entry=1, abstime=abstime@entry=0x7f3a2e7fe4f0, private=private@entry=0) "
            "at ./nptl/futex-internal.c:139\n"
            "#3  0x00007f3a6f299a4c in __pthread_cond_wait_common (abstime=0x7f3a2e7fe4f0, clockid=1, mutex=0x55d0c3b1e058, "
            "cond=0x55d0c3b1e080) at ./nptl/pthread_cond_wait.c:503\n"
            "#4  ___pthread_cond_timedwait64 (cond=0x55d0c3b1e080, mutex=0x55d0c3b1e058, abstime=0x7f3a2e7fe4f0) at ./nptl/pthread_cond_wait.c:643\n"
            "#5  0x00007f3a71c3e2d9 in gloo::transport::tcp::UnboundBuffer::waitRecv(int*, std::chrono::duration<long, std::ratio<1l, 1000l> >) () "
            "from /lib/x86_64-linux-gnu/libgloo.so.0\n"
            "#6  0x00007f3a71c0f1a2 in gloo::allreduce(gloo::AllreduceOptions const&) () from /lib/x86_64-linux-gnu/libgloo.so.0\n"
            "#7  0x00007f3a7a2b7c10 in c10d::(anonymous namespace)::AsyncAllreduceWork::run() () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
            "#8  0x00007f3a7a29a8e1 in c10d::ProcessGroupGloo::runLoop(int) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
            "#9  0x00007f3a6f4d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6\n"
            "#10 0x00007f3a6f29a144 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n"
            "#11 0x00007f3a6f31a7dc in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81\n"
            % (n, rk.pid + 7))


def main_waiting_in_allreduce(rk):
    return ("\nThread 1 (Thread 0x7f3a6ee3e740 (LWP %d) \"torch_ddp\"):\n"
            "#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, "
            "futex_word=0x55d0c3c2f1c0) at ./nptl/futex-internal.c:57\n"
            "#1  __futex_abstimed_wait_common (futex_word=0x55d0c3c2f1c0, expected=0, clockid=0, abstime=0x0, private=0, "
            "cancel=true) at ./nptl/futex-internal.c:87\n"
            "#2  0x00007f3a6f296e0b in __GI___futex_abstimed_wait_cancelable64 (futex_word=futex_word@entry=0x55d0c3c2f1c0, "
            "expected=expected@entry=0, clockid=clockid@entry=0, abstime=abstime@entry=0x0, private=private@entry=0) at ./nptl/futex-internal.c:139\n"
            "#3  0x00007f3a6f2995d8 in __pthread_cond_wait_common (abstime=0x0, clockid=0, mutex=0x55d0c3c2f168, "
            "cond=0x55d0c3c2f198) at ./nptl/pthread_cond_wait.c:503\n"
            "#4  ___pthread_cond_wait (cond=0x55d0c3c2f198, mutex=0x55d0c3c2f168) at ./nptl/pthread_cond_wait.c:618\n"
            "#5  0x00007f3a6f4cdf30 in std::condition_variable::wait(std::unique_lock<std::mutex>&) () from /lib/x86_64-linux-gnu/libstdc++.so.6\n"
            "#6  0x00007f3a7a2a1c5e in c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >) () "
            "from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
            "#7  0x000055d0c1a3f7d4 in hanglab::torch_ddp::allreduce_bucket (pg=..., bucket=..., step=6, trace=...) at /work/main/workloads/torch_ddp/main.cpp:214\n"
            "#8  0x000055d0c1a40b19 in hanglab::torch_ddp::train_step (ctx=..., step=6) at /work/main/workloads/torch_ddp/main.cpp:301\n"
            "#9  0x000055d0c1a4218e in hanglab::torch_ddp::run (args=...) at /work/main/workloads/torch_ddp/main.cpp:402\n"
            "#10 0x000055d0c1a3c0a5 in main (argc=5, argv=0x7ffd0a8c2318) at /work/main/workloads/torch_ddp/main.cpp:460\n"
            % rk.pid)


def main_in_compute(rk):
    return ("\nThread 1 (Thread 0x7f3a6ee3e740 (LWP %d) \"torch_ddp\"):\n"
            "#0  0x00007f3a6f2e57c5 in __GI___clock_nanosleep (clock_id=clock_id@entry=0, flags=flags@entry=0, "
            "req=0x7ffd0a8c1c00, rem=0x7ffd0a8c1c00) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48\n"
            "#1  0x00007f3a6f2ea0b3 in __GI___nanosleep (req=<optimized out>, rem=<optimized out>) at ../sysdeps/unix/sysv/linux/nanosleep.c:25\n"
            "#2  0x000055d0c1a3e911 in std::this_thread::sleep_for<long, std::ratio<1l, 1000l> > (__rtime=...) at /usr/include/c++/12/bits/this_thread_sleep.h:80\n"
            "#3  hanglab::torch_ddp::simulate_compute (ms=150) at /work/main/workloads/torch_ddp/main.cpp:188\n"
            "#4  0x000055d0c1a40a02 in hanglab::torch_ddp::train_step (ctx=..., step=6) at /work/main/workloads/torch_ddp/main.cpp:287\n"
            "#5  0x000055d0c1a4218e in hanglab::torch_ddp::run (args=...) at /work/main/workloads/torch_ddp/main.cpp:402\n"
            "#6  0x000055d0c1a3c0a5 in main (argc=5, argv=0x7ffd0a8c2318) at /work/main/workloads/torch_ddp/main.cpp:460\n"
            % rk.pid)


def gdb_stack(main_fn):
    def text(rk):
        return (gdb_header(rk) + "0x00007f3a6f2e57c5 in ?? ()\n" + hb_thread(rk, 4) + gloo_worker_thread(rk, 3)
                + "\nThread 2 (Thread 0x7f3a2effe6c0 (LWP %d) \"torch_ddp\"):\n"
                  "#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, "
                  "futex_word=0x55d0c3b1f128) at ./nptl/futex-internal.c:57\n"
                  "#1  0x00007f3a6f299a4c in __pthread_cond_wait_common (abstime=0x0, clockid=0, mutex=0x55d0c3b1f0d8, "
                  "cond=0x55d0c3b1f100) at ./nptl/pthread_cond_wait.c:503\n"
                  "#2  0x00007f3a7a29a7f0 in c10d::ProcessGroupGloo::runLoop(int) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
                  "#3  0x00007f3a6f29a144 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n"
                  % (rk.pid + 8)
                + main_fn(rk) + "[Inferior 1 (process %d) detached]\n" % rk.pid)
    return text


# ---- fixtures -----------------------------------------------------------------------

TOML = """# Reproduces: {repro}
# Expected: {expected}
[scenario]
name = "{name}"
deadline_s = 120

[workload]
name = "torch_ddp"
backend = "gloo"
world_size = 4
steps = {steps}
[workload.args]
step_ms = {step_ms}
checkpoint_every = {ckpt}

[timeouts]
init_s = {init_s}
collective_s = {coll_s}
progress_s = {progress_s}
heartbeat_s = 1
{faults}"""


def cfg_for(name, repro, expected, faults="", **kw):
    cfg = dict(scenario=name, steps=10, step_ms=250, checkpoint_every=5, init_s=30.0, collective_s=5.0,
               progress_s=10.0, heartbeat_s=1.0)
    cfg.update(kw)
    cfg["toml"] = TOML.format(repro=repro, expected=expected, name=name, steps=cfg["steps"], step_ms=cfg["step_ms"],
                              ckpt=cfg["checkpoint_every"], init_s=cfg["init_s"], coll_s=cfg["collective_s"],
                              progress_s=cfg["progress_s"], faults=faults)
    return cfg


def finish_all_exited(sim, outcome):
    for rk in sim.ranks:
        harness_exits(sim, rk)
    std_detections(sim)
    end = max(rk.exit_t for rk in sim.ranks)
    sim.heartbeats(end)
    sim.h(end + 0.001, "teardown", reason="all_exited")
    sim.h(end + 0.002, "run_end", outcome=outcome, duration_s=round(end + 0.002 - BASE_T, 3))


def healthy():
    cfg = cfg_for("healthy", "a plain 10-step run with checkpoints at steps 5 and 10.",
                  "all ranks complete; no detector fires.")
    build("healthy", cfg, {}, lambda sim: finish_all_exited(sim, "completed"))


def slow():
    cfg = cfg_for("slow", "rank 1 computes 3x slower than its peers (CPU contention stand-in).",
                  "every rank completes; triage names rank 1 as a slow straggler.",
                  faults='\n[[fault]]\nkind = "cpu_throttle"\nranks = [1]\nfactor = 3.0\n')
    build("slow", cfg, {1: {"step_ms": 750}}, lambda sim: finish_all_exited(sim, "completed"))


def slow_contention():
    cfg = cfg_for("slow_contention", "rank 1 computes 6x slower (starved storage); rank 3 2.2x (CPU contention beside it).",
                  "triage names rank 1 alone: rank 3 is not comparable to the rank that paces the job.",
                  faults='\n[[fault]]\nkind = "slow_storage"\nranks = [1]\n')
    build("slow_contention", cfg, {1: {"step_ms": 1500}, 3: {"step_ms": 550}}, lambda sim: finish_all_exited(sim, "completed"))


def slow_pair():
    cfg = cfg_for("slow_pair", "ranks 1 and 2 both compute 3x slower (two throttled ranks).",
                  "triage names ranks 1 and 2.",
                  faults='\n[[fault]]\nkind = "cpu_throttle"\nranks = [1, 2]\nfactor = 3.0\n')
    build("slow_pair", cfg, {1: {"step_ms": 750}, 2: {"step_ms": 800}}, lambda sim: finish_all_exited(sim, "completed"))


def killed():
    cfg = cfg_for("killed", "rank 2 is SIGKILLed during step 6 (OOM-killer stand-in, no OOM evidence).",
                  "peers fail with Connection closed; exit_monitor names rank 2.",
                  faults='\n[[fault]]\nkind = "kill_rank"\nranks = [2]\nat_step = 6\nsignal = "SIGKILL"\n')

    def policy(sim, rk, group):
        dead = sim.ranks[2]
        begin = rk.blocked[2]
        return (max(begin, dead.death_t) + 0.0006 + 0.0003 * rk.r, "comm", conn_closed(41230 + rk.r))

    cfg["fail_policy"] = policy

    def finish(sim):
        dead = sim.ranks[2]
        sim.h(dead.death_t, "fault", kind="kill_rank", ranks=[2], detail="SIGKILL to pid %d" % dead.pid)
        finish_all_exited(sim, "crash")

    build("killed", cfg, {2: {"die_at": (6, "backward"), "die_signal": 9}}, finish)


def truncated():
    cfg = cfg_for("truncated", "rank 0 segfaults in the optimizer of step 3, mid-write of a trace line.",
                  "peers fail with Connection closed; exit_monitor names rank 0 (SIGSEGV).",
                  faults='\n[[fault]]\nkind = "signal"\nranks = [0]\nat_step = 3\nsignal = "SIGSEGV"\n')
    cfg["truncate"] = {0: 41}

    def policy(sim, rk, group):
        dead = sim.ranks[0]
        begin = rk.blocked[2]
        return (max(begin, dead.death_t) + 0.0006 + 0.0003 * rk.r, "comm", conn_closed(41330 + rk.r))

    cfg["fail_policy"] = policy

    def finish(sim):
        dead = sim.ranks[0]
        dead.stderr.append((dead.exit_t - 0.01, "Segmentation fault (core dumped)"))
        sim.h(dead.death_t, "fault", kind="signal", ranks=[0], detail="SIGSEGV to pid %d" % dead.pid)
        finish_all_exited(sim, "crash")

    build("truncated", cfg, {0: {"die_at": (3, "optimizer"), "die_signal": 11}}, finish)


def skip_collective():
    cfg = cfg_for("skip_collective", "rank 1 skips the gradient allreduces of step 5 (data-dependent branch).",
                  "Gloo pairs the later allreduces silently; rank 1 finishes first, peers then fail; "
                  "triage names rank 1, divergence at step 5.",
                  faults='\n[[fault]]\nkind = "skip_collective"\nranks = [1]\nat_step = 5\n',
                  checkpoint_every=0)

    def policy(sim, rk, group):
        gone = sim.ranks[1]
        begin = rk.blocked[2]
        if rk.r == 2:  # rank 2 receives from rank 1 in the ring: it sees the socket close
            return (max(begin, gone.exit_t) + 0.0008, "comm", conn_closed(41432))
        return (begin + sim.coll_s + 0.0011 + 0.0002 * rk.r, "timeout", gloo_timeout(5000))

    cfg["fail_policy"] = policy

    def finish(sim):
        r1 = sim.ranks[1]
        t_fault = next(e["t"] for e in r1.events if e["ev"] == "fault")
        sim.h(t_fault, "fault", kind="skip_collective", ranks=[1], detail="hook acted at step 5")
        finish_all_exited(sim, "hang")

    build("skip_collective", cfg, {1: {"skip_steps": {5}}}, finish)


def uneven_batches():
    cfg = cfg_for("uneven_batches", "rank 3's sampler yields 7 batches, its peers' 10.",
                  "rank 3 leaves the loop and exits 0; ranks 0-2 block in step 8's first allreduce and time out.",
                  faults='\n[[fault]]\nkind = "uneven_batches"\nranks = [3]\nat_step = 8\n')

    def policy(sim, rk, group):
        begin = rk.blocked[2]
        return (begin + sim.coll_s + 0.0012 + 0.0003 * rk.r, "timeout", gloo_timeout(5000))

    cfg["fail_policy"] = policy

    def finish(sim):
        sim.h(BASE_T + 0.05, "fault", kind="uneven_batches", ranks=[3], detail="HANGLAB_HOOKS mode=fewer at_step=8")
        finish_all_exited(sim, "hang")

    build("uneven_batches", cfg, {3: {"batches": 7}}, finish)


def frozen():
    cfg = cfg_for("frozen", "rank 2 is SIGSTOPped in the forward pass of step 6.",
                  "peers wait in allreduce with heartbeats; heartbeat_loss names rank 2; the harness declares a hang.",
                  faults='\n[[fault]]\nkind = "freeze"\nranks = [2]\nat_step = 6\n',
                  collective_s=60.0, progress_s=10.0)

    def finish(sim):
        r2 = sim.ranks[2]
        sim.h(r2.freeze_t, "fault", kind="freeze", ranks=[2], detail="SIGSTOP to pid %d" % r2.pid)
        last_hb = r2.hb_from + int((r2.freeze_t - r2.hb_from) / sim.hb) * sim.hb
        sim.h(last_hb + 3 * sim.hb + 0.05, "detect", detector="heartbeat_loss", rank=2,
              detail="no heartbeat for 3.0 s (3 periods)")
        last_progress = max(max(e["t"] for e in rk.events if e["ev"] != "hb") for rk in sim.ranks)
        t_wd = last_progress + cfg["progress_s"] + 0.02
        sim.h(t_wd, "detect", detector="harness_watchdog", rank=-1,
              detail="no step progress on any live rank for 10.0 s")
        for i, rk in enumerate(sim.ranks):
            sim.h(t_wd + 0.4 + 0.3 * i, "stack", rank=rk.r, file="ranks/%d/stack.txt" % rk.r, tool="gdb", ok=True)
        end = teardown_kill(sim, t_wd + 1.6, "hang")
        for rk in sim.ranks:
            harness_exits(sim, rk)
        sim.heartbeats(end)
        sim.h(end + 0.001, "run_end", outcome="hang", duration_s=round(end + 0.001 - BASE_T, 3))

    stacks = {r: gdb_stack(main_waiting_in_allreduce) for r in (0, 1, 3)}
    stacks[2] = gdb_stack(main_in_compute)
    cfg["stacks"] = stacks
    build("frozen", cfg, {2: {"freeze_at": (6, "forward")}}, finish)


def all_stuck():
    cfg = cfg_for("all_stuck", "every rank's packets are dropped from step 6 on (network partition stand-in).",
                  "all ranks wait in the same allreduce with heartbeats; the harness watchdog declares a hang.",
                  faults='\n[[fault]]\nkind = "net_drop"\nranks = [0, 1, 2, 3]\nat_step = 6\n',
                  collective_s=60.0, progress_s=10.0)

    def finish(sim):
        last_progress = max(max(e["t"] for e in rk.events if e["ev"] != "hb") for rk in sim.ranks)
        t_wd = last_progress + cfg["progress_s"] + 0.02
        sim.h(t_wd, "detect", detector="harness_watchdog", rank=-1,
              detail="no step progress on any live rank for 10.0 s")
        for i, rk in enumerate(sim.ranks):
            sim.h(t_wd + 0.4 + 0.3 * i, "stack", rank=rk.r, file="ranks/%d/stack.txt" % rk.r, tool="gdb", ok=True)
        end = teardown_kill(sim, t_wd + 1.6, "hang")
        for rk in sim.ranks:
            harness_exits(sim, rk)
        sim.heartbeats(end)
        sim.h(end + 0.001, "run_end", outcome="hang", duration_s=round(end + 0.001 - BASE_T, 3))

    cfg["stacks"] = {r: gdb_stack(main_waiting_in_allreduce) for r in range(WORLD)}
    cfg["partition_seq"] = 13  # step 6's first allreduce never completes for anybody
    build("all_stuck", cfg, {}, finish)


def init_hang():
    cfg = cfg_for("init_hang", "rank 3 never starts (its launcher wrapper hangs before exec).",
                  "ranks 0-2 time out in rendezvous after init_s; the watchdog tears rank 3 down.",
                  faults='\n[[fault]]\nkind = "delay_start"\nranks = [3]\ndelay_s = 600\n',
                  init_s=10.0, progress_s=15.0)

    def policy(sim, rk, group):
        begin = rk.blocked[2]
        if rk.r == 0:
            msg = "Timed out after 10 seconds waiting for clients. 3/4 clients joined."
        else:
            msg = "Socket Timeout: wait timeout after 10000ms, keys: /default_pg/0//cpu//rank_3"
        return (begin + sim.init_s + 0.002 + 0.0004 * rk.r, "rendezvous", msg)

    cfg["fail_policy"] = policy

    def finish(sim):
        sim.h(BASE_T + 0.016, "fault", kind="delay_start", ranks=[3], detail="exec delayed 600 s")
        for rk in sim.ranks[:3]:
            harness_exits(sim, rk)
        std_detections(sim)
        t_wd = BASE_T + 0.010 + cfg["progress_s"] + 0.05
        sim.h(t_wd, "detect", detector="harness_watchdog", rank=-1,
              detail="no step progress on any live rank for 15.0 s")
        end = teardown_kill(sim, t_wd + 0.2, "hang")
        harness_exits(sim, sim.ranks[3])
        sim.heartbeats(end)
        sim.h(end + 0.001, "run_end", outcome="hang", duration_s=round(end + 0.001 - BASE_T, 3))

    build("init_hang", cfg, {3: {"never_start": True}}, finish)


def exception():
    cfg = cfg_for("exception", "rank 1 raises an unhandled exception in the forward pass of step 4.",
                  "rank 1 exits 1; its peers lose the connection; exit_monitor names rank 1.",
                  faults='\n[[fault]]\nkind = "exception"\nranks = [1]\nat_step = 4\n')

    def policy(sim, rk, group):
        gone = sim.ranks[1]
        return (max(rk.blocked[2], gone.exit_t) + 0.0007 + 0.0003 * rk.r, "comm", conn_closed(41530 + rk.r))

    cfg["fail_policy"] = policy
    build("exception", cfg, {1: {"raise_at": 4}}, lambda sim: finish_all_exited(sim, "crash"))


def checkpoint_hang():
    cfg = cfg_for("checkpoint_hang", "rank 0 blocks in its checkpoint save after step 5 (hung NFS write stand-in).",
                  "ranks 1-3 wait in the post-checkpoint barrier with heartbeats; the watchdog declares a hang.",
                  faults='\n[[fault]]\nkind = "slow_storage"\nranks = [0]\nat_step = 5\n',
                  collective_s=60.0)

    def finish(sim):
        last_progress = max(max(e["t"] for e in rk.events if e["ev"] != "hb") for rk in sim.ranks)
        t_wd = last_progress + cfg["progress_s"] + 0.02
        sim.h(t_wd, "detect", detector="harness_watchdog", rank=-1,
              detail="no step progress on any live rank for 10.0 s")
        end = teardown_kill(sim, t_wd + 0.3, "hang")
        for rk in sim.ranks:
            harness_exits(sim, rk)
        sim.heartbeats(end)
        sim.h(end + 0.001, "run_end", outcome="hang", duration_s=round(end + 0.001 - BASE_T, 3))

    build("checkpoint_hang", cfg, {0: {"hang_in_checkpoint": 5}}, finish)


def wrong_ifname():
    cfg = cfg_for("wrong_ifname", "GLOO_SOCKET_IFNAME names an interface that does not exist (eth7).",
                  "every rank fails process-group creation at once; triage says network/wrong_ifname.",
                  faults='\n[[fault]]\nkind = "env"\nranks = [0, 1, 2, 3]\nset = { GLOO_SOCKET_IFNAME = "eth7" }\n')
    msg = ("[enforce fail at /build/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
           "Unable to find address for: eth7")
    build("wrong_ifname", cfg, {r: {"init_error": msg} for r in range(WORLD)},
          lambda sim: finish_all_exited(sim, "crash"))


def uneven_barrier():
    cfg = cfg_for("uneven_barrier", "rank 3's sampler yields 7 batches; after the loop every rank enters a final barrier.",
                  "rank 3's final barrier pairs with its peers' step-8 allreduce; everybody times out.",
                  faults='\n[[fault]]\nkind = "uneven_batches"\nranks = [3]\nat_step = 8\n',
                  after_loop="barrier")

    def policy(sim, rk, group):
        return (rk.blocked[2] + sim.coll_s + 0.0012 + 0.0003 * rk.r, "timeout", gloo_timeout(5000))

    cfg["fail_policy"] = policy
    cfg["pair_mismatched"] = True
    build("uneven_barrier", cfg, {3: {"batches": 7}}, lambda sim: finish_all_exited(sim, "hang"))


def late_rank():
    cfg = cfg_for("late_rank", "rank 1 is CPU-throttled from step 3: its step takes ~30x longer.",
                  "ranks 0,2,3 time out in step 3's first allreduce before rank 1 even enters it.",
                  faults='\n[[fault]]\nkind = "throttle_cpu"\nranks = [1]\nat_step = 3\ncpu_percent = 3\n')
    build("late_rank", cfg, {1: {"slow_from": (3, 30)}}, lambda sim: finish_all_exited(sim, "hang"))


def main():
    healthy()
    slow()
    slow_contention()
    slow_pair()
    killed()
    truncated()
    skip_collective()
    uneven_batches()
    frozen()
    all_stuck()
    init_hang()
    exception()
    checkpoint_hang()
    wrong_ifname()
    uneven_barrier()
    late_rank()


if __name__ == "__main__":
    main()
