# hanglab's in-process hook for bring-your-own Python ranks (a program hanglab did not
# write: Lightning, a Hugging Face Trainer script, yours). The exception_on_rank fault puts
# a copy of this file first on the rank's PYTHONPATH, so Python imports it at start-up as
# `sitecustomize`. It changes nothing unless HANGLAB_PY_EXCEPTION is set; then it:
#   - arms: installs a SIGUSR2 handler in the main thread and, last, writes <state>.armed
#     ({"pid", "t"}); only the first Python process of the rank arms (O_EXCL on
#     <state>.armed.lock; the variables are also removed from os.environ), so spawned
#     DataLoader workers or subprocesses that inherit the environment do not;
#   - raises: when hanglab sends SIGUSR2 at the fault's trigger, the handler writes
#     <state>.raised ({"t", "pid", "where": the frame it interrupted}) and raises
#     RuntimeError(HANGLAB_PY_EXCEPTION) in the main thread, wherever the program stands
#     (a BaseException subclass named RuntimeError, so no `except Exception` swallows it),
#     except inside the DataLoader's own code (torch/utils/data), where it would be a data
#     loading failure: there it waits for that call to return (2 s at most);
#     the unhandled exception then ends the rank as a real bug would (traceback, exit 1).
# Python runs a signal handler between bytecodes of the main thread, so a main thread
# blocked in a long C call (a collective's wait) raises when that call returns.
# Then it runs the sitecustomize this file shadows (Debian's apport hook, a venv's own).
import os
import sys


def _hanglab_arm():
    """Installs the handler; returns the function that writes <state>.armed (called last,
    after the shadowed sitecustomize ran), or None."""
    msg = os.environ.pop("HANGLAB_PY_EXCEPTION", "")
    state = os.environ.pop("HANGLAB_PY_HOOK_STATE", "")
    if not msg or not state:
        return None
    import json
    import signal
    import threading
    import time

    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        fd = os.open(state + ".armed.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
    except OSError:
        return None  # another process of this rank armed first

    def _in_startup(frame):
        # Still inside the interpreter's start-up (site, this file, a usercustomize)? An
        # exception there is caught and printed by site.py ("Error in sitecustomize") and
        # the program would run on: try again once start-up is over.
        while frame is not None:
            name = os.path.basename(frame.f_code.co_filename)
            if name in ("site.py", "sitecustomize.py", "usercustomize.py"):
                return True
            frame = frame.f_back
        return False

    def _in_data_loading(frame):
        # Inside the DataLoader's machinery (torch/utils/data: the epoch's iterator being set up, a
        # batch being fetched)? An exception there is a data-loading failure (phase data), not the
        # bug in the rank's own training code this fault is: deliver it when that call returns.
        while frame is not None:
            if "/torch/utils/data/" in frame.f_code.co_filename.replace(os.sep, "/"):
                return True
            frame = frame.f_back
        return False

    deferred_until = []  # the deadline of a deferral out of data loading (2 s: a loader that hangs gets it)

    def _raise(signum, frame):
        if _in_startup(frame):
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR2)).start()
            return
        if _in_data_loading(frame):
            if not deferred_until:
                deferred_until.append(time.time() + 2.0)
            if time.time() < deferred_until[0]:
                threading.Timer(0.005, os.kill, (os.getpid(), signal.SIGUSR2)).start()
                return
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # once
        where = "?"
        if frame is not None:
            where = "%s (%s:%d)" % (frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno)
        try:
            with open(state + ".raised.tmp", "w") as f:
                json.dump({"t": time.time(), "pid": os.getpid(), "where": where}, f)
            os.replace(state + ".raised.tmp", state + ".raised")
        except OSError:
            pass
        raise _Unhandled(msg)

    # The fault is an unhandled exception: one that no `except Exception` on the way up can
    # swallow (Lightning guards its per-step broadcast with one; a RuntimeError raised while
    # the main thread stood there was caught and the rank ran on). A BaseException subclass,
    # printed as a plain RuntimeError in the traceback (module "builtins").
    _Unhandled = type("RuntimeError", (BaseException,), {"__module__": "builtins"})
    signal.signal(signal.SIGUSR2, _raise)

    def _write_armed():
        with open(state + ".armed.tmp", "w") as f:
            json.dump({"pid": os.getpid(), "t": time.time()}, f)
        os.replace(state + ".armed.tmp", state + ".armed")

    return _write_armed


def _hanglab_chain():
    here = os.path.dirname(os.path.abspath(__file__))
    for p in sys.path:
        if not p or os.path.abspath(p) == here:
            continue
        cand = os.path.join(p, "sitecustomize.py")
        if os.path.isfile(cand):
            import importlib.util

            spec = importlib.util.spec_from_file_location("_hanglab_shadowed_sitecustomize", cand)
            if spec and spec.loader:
                mod = importlib.util.module_from_spec(spec)
                try:
                    spec.loader.exec_module(mod)
                except Exception:
                    pass
            return


_hanglab_armed = _hanglab_arm()
_hanglab_chain()
if _hanglab_armed is not None:
    _hanglab_armed()  # last: hanglab fires only once start-up is (nearly) over
del _hanglab_armed
