"""Promise 4: a race that happens to pass this time is found.

Every rank checks `os.path.exists(flag)` at start-up (nothing there: ordered, before the barrier). After the
barrier rank 0 creates the flag while rank 1 checks again with nothing ordering the two: whether rank 1 sees
the flag depends on timing alone (this time it does not). The recorder records a look only when its answer
differs from the thread's last recorded look at that path, so the second, racing look is never recorded and
run.races() is empty. The same program with the first look removed is reported.
Exits 0 when both programs report the race, 1 when the one with the earlier look reports none.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def with_early_look(d):
    p = os.path.join(d, "resume.flag")
    early = os.path.exists(p)  # start-up check: nothing is there yet
    dist.barrier()
    if dist.get_rank() == 0:
        time.sleep(0.4)
        open(p, "w").close()
        return early
    return os.path.exists(p)  # races with rank 0's create: False this time


def without_early_look(d):
    p = os.path.join(d, "resume.flag")
    dist.barrier()
    if dist.get_rank() == 0:
        time.sleep(0.4)
        open(p, "w").close()
        return False
    return os.path.exists(p)


def main() -> int:
    found = {}
    for fn in (without_early_look, with_early_look):
        d = tempfile.mkdtemp(prefix="a18_a03_")
        try:
            run = bl.run(fn, world_size=2, args=(d,), timeout=10)
            races = run.races()
            found[fn.__name__] = len(races)
            print(f"{fn.__name__}: finished={run.ok} values={run.values} races={len(races)}")
            for race in races[:1]:
                print("   ", race)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if found["without_early_look"] and not found["with_early_look"]:
        print("BROKEN: an earlier, ordered look at the same path hides the racing look")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
