# Imported by Python at start-up when this directory is on PYTHONPATH (the third-party *baseline*
# scenarios put it there through [workload] env). It destroys the default process group at exit
# when the program left it alive, before the interpreter is torn down.
#
# Why: the programs these baselines run (LightningCLI's fit, TRL's CLI) never call
# destroy_process_group(). With torch 2.15 a rank then sometimes dies of SIGABRT ("terminate
# called without an active exception") while Python finalizes, after all its work: Gloo's worker
# threads still hold objects whose destruction needs the GIL of an interpreter that is going away
# (pytorch/pytorch#190489; the same atexit hook was proposed in #179291). Seen in 1 of 20
# lightning_epochs_baseline runs under load. That crash is real, and hanglab reports it as one; a
# baseline, which asserts that healthy work raises no alarm, must not depend on it. The fault
# variants run without this hook. accelerate's test_script destroys its group itself and has still
# aborted once in a while as it tore Gloo down: this hook cannot help there.
import atexit
import sys


def _destroy_default_group():
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # the program's own teardown raced it, or the group is broken: nothing to add
        pass


atexit.register(_destroy_default_group)
