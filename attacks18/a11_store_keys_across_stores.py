"""Promise 4: a race that happens to pass this time is found (no ordering is invented).

Rank 0 writes a file, then sets "ready" in a store of its own (a dist.HashStore: in-process bookkeeping no
other rank can see). Rank 2 later sets "ready" in the group's store, and rank 1 waits for that key there and
then reads rank 0's file. Nothing orders rank 0's write before rank 1's read (rank 1 waited for rank 2), yet
no race is reported: the model matches store keys by name across different stores, and takes rank 0's set in
its private store as what released rank 1's wait.
Exits 0 when the race is reported, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist
from torch.distributed.distributed_c10d import _get_default_store

import barrierlab as bl


def two_stores(d):
    rank, p = dist.get_rank(), os.path.join(d, "a")
    if rank == 0:
        local = dist.HashStore()  # rank 0's own bookkeeping
        time.sleep(0.1)
        with open(p, "w") as f:
            f.write("x")
        local.set("ready", "1")  # seen by no other rank
        return 0
    if rank == 2:
        time.sleep(0.3)
        _get_default_store().set("ready", "1")
        return 0
    _get_default_store().wait(["ready"])  # released by rank 2's set
    with open(p) as f:  # nothing orders this after rank 0's write
        return f.read()


def main() -> int:
    d = tempfile.mkdtemp(prefix="a18_a11_")
    try:
        run = bl.run(two_stores, world_size=3, args=(d,), timeout=10)
        races = run.races()
        print(f"finished={run.ok} values={run.values} races={len(races)}")
        for race in races[:1]:
            print("   ", race)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if run.ok and not races:
        print("BROKEN: a set in rank 0's private store was taken to release rank 1's wait in the group's store")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
