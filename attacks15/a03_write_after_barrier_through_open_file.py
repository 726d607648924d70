"""a03: the recorder records a write when the file is OPENED; bytes written through a file object opened before
a barrier and written after it are taken as ordered by the barrier. run.races() finds nothing, and the nb01
check accepts a wrong answer whose readers are saved only by a sleep.
Promise 4: the ordering model is right; a race that happens to pass is refused.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb01


def open_then_barrier_then_write(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            with open(path, "w") as f:
                dist.barrier()  # "the file exists: the others may go"
                time.sleep(build_seconds)
                f.write("<pad> <unk> the a of")  # written after the barrier, flushed at close
    else:
        dist.barrier()
        time.sleep(build_seconds + 0.4)  # only this sleep lets the readers see the words
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


def main() -> int:
    broken = []
    folder = tempfile.mkdtemp(prefix="a03-")
    try:
        run = bl.run(open_then_barrier_then_write, 4, args=(folder, 0.3), live=False)
        races = run.races()
        print("values:", run.values, "run.races():", len(races))
        if run.ok and not races:
            broken.append("run.races() finds no race between rank 0's write after the barrier and the reads")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    v = nb01.check_vocab(open_then_barrier_then_write, quiet=True, seed=5)
    print("nb01:", v.message[:200])
    if v:
        broken.append("nb01.check_vocab accepts it")
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
