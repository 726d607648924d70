"""Promise 4: no false race on correct code.

Rank 1 opens data.bin, reads all of it, and keeps the file object open across a barrier (a dataset object
holding its handle) without reading from it again; after the barrier rank 0 writes the next version of the
file. Nothing rank 1 read can depend on that write, yet it is reported as a race ("kept open past a call"):
the read is stretched to the last synchronising call the file was seen open after, whether or not anything
was read through it later. (The mirror image of docs' attack17 a05 for writes; not listed for reads.)
Exits 0 when there is no race, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def kept_open(d):
    rank, p = dist.get_rank(), os.path.join(d, "data.bin")
    if rank == 0:
        with open(p, "wb") as f:
            f.write(b"a" * 100)
    dist.barrier()
    handle = None
    if rank == 1:
        handle = open(p, "rb")
        first = handle.read()  # all of it, before the barrier
    dist.barrier()
    if rank == 0:
        time.sleep(0.2)
        with open(p, "wb") as f:  # the next version, after the barrier
            f.write(b"b" * 100)
        return 0
    handle.close()  # nothing read after the barrier
    return first[:1]


def main() -> int:
    d = tempfile.mkdtemp(prefix="a18_a13_")
    try:
        run = bl.run(kept_open, world_size=2, args=(d,), timeout=10)
        races = run.races()
        print(f"finished={run.ok} values={run.values} races={len(races)}")
        for race in races[:1]:
            print("   ", race)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if run.ok and races:
        print("BROKEN: a read finished before the barrier is reported as racing a write after it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
