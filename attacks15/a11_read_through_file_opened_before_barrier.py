"""a11 (mirror of a03, same cause): a rank that opened a file before a barrier and reads it after the barrier is
recorded as reading at the open. Rank 0 appends to an existing log, then barriers; ranks 1-2 opened the log
before the barrier and read it after: every reader sees the append (the values show it), yet run.races()
reports "rank 0 appended ... after rank 1 read it ... nothing orders them".
Promise 4: no false race on correct code.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile

import torch.distributed as dist

import barrierlab as bl


def follow_the_log(path):
    rank = dist.get_rank()
    if rank == 0:
        with open(path, "a") as f:
            f.write("step 1 done\n")
        dist.barrier()
        return None
    with open(path) as f:  # the log the job follows, opened early
        dist.barrier()  # rank 0's append is complete before this returns
        return f.read()


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a11-")
    try:
        path = os.path.join(folder, "log.txt")
        with open(path, "w") as f:
            f.write("header\n")
        run = bl.run(follow_the_log, 3, args=(path,), live=False)
        races = run.races()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("values:", run.values)
    print("run.races():", len(races))
    for race in races[:2]:
        print("  ", race)
    if run.ok and all(v == "header\nstep 1 done\n" for v in run.values[1:]) and races:
        print("BROKEN: races reported for reads the barrier ordered after the append")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
