"""Promise 4: no false race on correct code (file locks released by close()).

Two ranks append to a shared log under an exclusive flock of a lock file opened with
os.open(lock, O_RDWR | O_CREAT) (no truncation); the lock is released by os.close(fd), as the kernel does. This is
correct mutual exclusion. run.races() reports races ("rank 0 opened `l.lock` for writing ... after rank 1 opened
it for writing ... nothing orders them"). The same code with an explicit flock(fd, LOCK_UN) before os.close, or
with the lock file opened O_RDONLY, reports none: the release by close() of a descriptor opened for writing is
not taken as the end of the hold the open belongs to.
"""

import fcntl
import os
import shutil
import sys
import tempfile

import torch.distributed as dist

import barrierlab as bl


def append_under_lock(folder, unlock_first):
    rank = dist.get_rank()
    lock, log = os.path.join(folder, f"l{unlock_first}.lock"), os.path.join(folder, f"log{unlock_first}")
    for _ in range(3):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        with open(log, "a") as f:
            f.write(f"{rank}\n")
        if unlock_first:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)  # releases the lock in any case
    return rank


if __name__ == "__main__":
    d = tempfile.mkdtemp(prefix="a13-")
    try:
        counts = {}
        for unlock_first in (True, False):
            run = bl.run(append_under_lock, world_size=2, args=(d, unlock_first), live=False)
            races = run.races()
            counts[unlock_first] = len(races)
            print(f"explicit LOCK_UN={unlock_first}: {run.statuses}, {len(races)} race(s)")
            if races:
                print("   ", str(races[0])[:330])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if counts[False]:
        print("BROKEN: a lock released by os.close() gives false races")
        sys.exit(1)
    print("held")
