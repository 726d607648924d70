"""Promise 4: a race that happens to pass this time is found.

Rank 1 loads last.pt with torch.load(mmap=True): the tensors are read lazily, through a mapping of the file,
whenever they are used. After a barrier rank 0 saves the next checkpoint under the same name (torch.save
rewrites the file in place) while rank 1 uses its tensors, with nothing ordering the two. What rank 1 reads
depends on timing alone: the old weights (sum 1024) when it is faster, rank 0's new ones (sum 7168) when it is
slower. Both runs are reported race-free: the model takes the load as over when torch.load returned.
Exits 0 when a race is reported for both timings, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def rotate(d, reader_delay):
    r = dist.get_rank()
    p = os.path.join(d, "last.pt")
    if r == 0:
        torch.save({"w": torch.ones(1024)}, p)
    dist.barrier()
    state = torch.load(p, mmap=True) if r == 1 else None
    dist.barrier()
    if r == 0:
        time.sleep(0.3)
        torch.save({"w": torch.full((1024,), 7.0)}, p)  # the next checkpoint, same name
        return 0
    time.sleep(reader_delay)
    return float(state["w"].sum())  # nothing orders this use against rank 0's save


def main() -> int:
    broken = False
    seen = set()
    for delay in (0.0, 0.8):
        d = tempfile.mkdtemp(prefix="a18_a05_")
        try:
            run = bl.run(rotate, world_size=2, args=(d, delay), timeout=10)
            races = run.races()
            seen.add(run.values[1])
            print(f"reader delay {delay}: finished={run.ok} rank 1 read sum={run.values[1]} races={len(races)}")
            if run.ok and not races:
                broken = True
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if broken:
        print(f"BROKEN: rank 1's result depends on timing ({sorted(seen)}) and no race was reported")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
