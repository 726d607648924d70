"""Promise 4: no false race on correct code (ordering through torch.futures).

Rank 0 writes a file, then every rank starts an async all_reduce of a non-empty tensor. Rank 1 reads the file in a
callback chained with work.get_future().then(cb): torch runs the callback only once the all_reduce has completed,
and on gloo that is after every rank entered it -- after rank 0's write. The main thread then waits for the chained
future. The model puts the callback's read in a lane of its own ("thread 1 (not a Python thread)") that nothing
orders, and reports a race.
Exits 0 when there is no race, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist

import barrierlab as bl


def then_reads(d):
    p = os.path.join(d, "a")
    if dist.get_rank() == 0:
        with open(p, "w") as f:
            f.write("x")
    work = dist.all_reduce(torch.ones(1), async_op=True)

    def after_all_reduce(fut):
        with open(p) as f:  # runs once the all_reduce completed: after rank 0's write
            return f.read()

    return work.get_future().then(after_all_reduce).wait()


def main() -> int:
    d = tempfile.mkdtemp(prefix="a18_a15_")
    try:
        run = bl.run(then_reads, world_size=2, args=(d,), timeout=10)
        races = run.races()
        print(f"finished={run.ok} values={run.values} races={len(races)}")
        for race in races[:1]:
            print("   ", race)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if run.ok and races:
        print("BROKEN: a read in a Future.then callback of a completed all_reduce is reported as a race")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
