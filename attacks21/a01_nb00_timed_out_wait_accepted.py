"""nb00's check (and run.races()) take a Work.wait(timeout=...) that RAISED "Operation timed out!" as a wait.

Promise (nb00 docstring, notebook 00 §exercise): the check passes only when the ordering model orders every
rank's write before every rank's count; "an async_op=True call never waited for ... orders nothing"; "a sleep
... orders nothing". Here the learner's fix issues dist.barrier(async_op=True), waits on it with a 1 ms timeout
that expires (gloo raises RuntimeError: Operation timed out!), catches that, and sleeps 1 s instead: the
count comes after the writes by timing alone. The check says ✓ and credits "barrier, work.wait()".
"""

import os
import tempfile
import time
from datetime import timedelta

import _common  # noqa: F401  (sys.path, env)
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises.nb00 import check_everyone_ready, random_delays


def everyone_ready(folder, delays):
    rank = dist.get_rank()
    time.sleep(delays[rank])
    with bl.span("write", kind="io"):
        open(os.path.join(folder, f"ready{rank}"), "w").close()
    work = dist.barrier(async_op=True)
    try:
        work.wait(timeout=timedelta(milliseconds=1))  # gives up after 1 ms: nothing waited for the late rank
    except RuntimeError:
        time.sleep(1.0)  # ... and a sleep stands in for the wait
    with bl.span("count", kind="io"):
        return len(os.listdir(folder))


verdict = check_everyone_ready(everyone_ready, quiet=True)
print("check:", verdict.message)

# the same function once more, to show what the record holds: the waits raised, and races() sees nothing
folder = tempfile.mkdtemp(prefix="a21-a01-")
try:
    run = bl.run(everyone_ready, 4, args=(folder, random_delays(2)), timeout=2)
    failed_waits = [(r.rank, e.error) for r in run for e in r.events if e.kind == "wait" and e.error]
    print("statuses:", run.statuses, "values:", run.values)
    print("waits that raised:", failed_waits)
    print("run.races():", run.races())
finally:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)

_common.finish(
    bool(verdict.ok) and bool(failed_waits),
    "nb00's check accepts a count ordered only by a sleep after a timed-out Work.wait(timeout=1 ms)"
    if verdict.ok
    else "the check refused the timed-out wait + sleep",
)
