# Runs a Python program as `python -m MODULE ARGS...` or `python -c CODE ARGS...` would, then
# ends the process the way Python would (atexit handlers, flushed stdout/stderr, the same exit
# status) but without the interpreter's finalization. Used by the third-party *baseline*
# scenarios only: `{venv}/bin/python {scenario_dir}/exit_shim/clean_exit.py -m MODULE ARGS...`.
#
# Why: with torch 2.15 a Gloo rank sometimes dies of SIGABRT ("terminate called without an
# active exception") after all its work, while Python finalizes. A core dump of
# accelerate_baseline shows the race: a Gloo worker thread (ProcessGroupGloo::runLoop) drops
# the last reference to the program's final collective (~AsyncWork -> its input tensors'
# decref_pyobject -> gil_scoped_acquire) while the main thread is already in Py_FinalizeEx; a
# thread asking for the GIL then is made to exit (pthread_exit), the forced unwind meets a
# noexcept destructor and std::terminate aborts (pytorch/pytorch#190489). Whether the program
# calls destroy_process_group() does not matter: it does not join those workers while a DDP
# model still holds the group (accelerate's script destroys its group and still aborted, 1 CI
# run and 2 of 180 runs under load; Lightning's and TRL's never destroy theirs, 1 of 20).
# The race needs Py_FinalizeEx to have begun; a process that ends with os._exit() after its
# atexit handlers never begins it, so the race cannot happen whatever the threads' timing.
#
# That crash is real, and hanglab reports it as one: the fault variants run the programs
# without this runner. A baseline asserts that healthy work raises no alarm, and must not
# depend on an upstream race at interpreter exit.
import atexit
import os
import runpy
import signal
import sys
import traceback
import types

_USAGE = "usage: clean_exit.py (-m MODULE | -c CODE) [ARGS...]"


def _status_of(exc):
    """The exit status Python gives an unhandled SystemExit(exc.code)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # sys.exit("message"): printed, status 1
    return 1


def _run(argv):
    if len(argv) < 2 or argv[0] not in ("-m", "-c"):
        print(_USAGE, file=sys.stderr)
        return 2
    mode, target, args = argv[0], argv[1], argv[2:]
    if mode == "-m":
        sys.argv = [target] + args  # run_module(alter_sys=True) puts the module's path in argv[0]
        sys.path[0] = os.getcwd()  # what `python -m` puts first on sys.path
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c"] + args
        sys.path[0] = ""  # what `python -c` puts first on sys.path
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        exec(compile(target, "<string>", "exec"), main.__dict__)
    return 0


def main():
    status = 0
    try:
        status = _run(sys.argv[1:])
    except SystemExit as e:
        status = _status_of(e)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = -signal.SIGINT  # Python re-raises SIGINT on itself: killed by SIGINT
    except BaseException:  # an unhandled exception: its traceback (without this file's frames), status 1
        kind, value, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        sys.excepthook(kind, value.with_traceback(tb), tb)
        status = 1
    try:
        atexit._run_exitfuncs()  # the program's handlers (logging's flush among them), as at exit
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed or broken pipe: nothing more can be said on it
                pass
        if status < 0:
            signal.signal(-status, signal.SIG_DFL)
            os.kill(os.getpid(), -status)
        os._exit(status)


if __name__ == "__main__":
    main()
