"""a09: the classic `with open("x.lock", "w") as lk: fcntl.flock(lk, LOCK_EX)` idiom is reported as a race on
the lock file itself.

Promise 4: no false race on correct code. Three ranks append to one results file, each under an exclusive
flock of a lock file it opens with mode "w" (O_TRUNC: the same flags filelock.FileLock uses, and FileLock's
run has no race); then a barrier, then rank 0 reads. Nobody writes a byte into the lock file or reads it.
run.races() reports "rank 0 opened `results.lock` for writing ... after rank 1 opened it for writing, but
nothing orders them" (ordering.Order._locks leaves truncating opens outside the hold). Notebook 07's check
refuses a correct no-barrier answer that uses such a lock for the appends for this reason alone.
"""

import fcntl
import os
import shutil
import sys
import tempfile

import torch.distributed as dist

import barrierlab as bl


def append_under_a_lock(folder):
    rank = dist.get_rank()
    path = os.path.join(folder, "results.csv")
    with open(path + ".lock", "w") as lock:  # the lock file: never written, never read
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path, "a") as f:
            f.write(f"{rank}\n")
        fcntl.flock(lock, fcntl.LOCK_UN)
    dist.barrier()
    if rank == 0:
        with open(path) as f:
            return sorted(f.read().split())
    return None


folder = tempfile.mkdtemp(prefix="a09-")
try:
    run = bl.run(append_under_a_lock, 3, args=(folder,), timeout=5, deadline=30)
    races = run.races()
    print(run.headline(), "| value:", run[0].value, "| races:", len(races))
    for race in races[:3]:
        print("  ", race)
    lock_races = [r for r in races if r.first.path.endswith(".lock") and r.second.path.endswith(".lock")]
    if run.ok and lock_races:
        print(
            f"BROKEN: {len(lock_races)} races reported between the ranks' opens of the lock file, which no one "
            "writes or reads; the appends themselves are ordered by the lock"
        )
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
