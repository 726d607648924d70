"""Promise 4 (a wrong program's race is reported): a `dist.reduce_scatter` (the list form) of empty tensors
orders nothing on gloo, and the model treats it as a call that waits for every rank.

Measured first (3 ranks, rank 1 entering 1 s late): every rank leaves reduce_scatter(torch.empty(0),
[torch.empty(0)] * 3) at once (0.0 s), as they do an all_reduce of an empty tensor. ops.GLOO_EMPTY_RETURNS
lists all_reduce, all_gather, reduce_scatter_tensor, ... but not reduce_scatter, so the ordering model gives it
the edges of a call that waits for every rank. Then: rank 0 writes f.txt 0.3 s in, then calls the empty
reduce_scatter; rank 1 calls it at once, returns at once, and reads f.txt 0.6 s in. Nothing orders the read
after the write (the sleep makes it come out right); run.races() reports nothing."""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def wait_seconds():
    """How long each rank stayed in an empty reduce_scatter while rank 1 came 1 s late."""
    world = dist.get_world_size()
    dist.barrier()
    if dist.get_rank() == 1:
        time.sleep(1.0)
    start = time.monotonic()
    dist.reduce_scatter(torch.empty(0), [torch.empty(0) for _ in range(world)])
    return round(time.monotonic() - start, 2)


def handoff(folder):
    world = dist.get_world_size()
    path = os.path.join(folder, "f.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("x")
    dist.reduce_scatter(torch.empty(0), [torch.empty(0) for _ in range(world)])
    if dist.get_rank() == 1:
        time.sleep(0.6)  # timing alone puts the read after the write
        with open(path) as f:
            return f.read()
    return None


def main():
    waited = bl.run(wait_seconds, 3, timeout=10, live=False)
    print("seconds in the empty reduce_scatter with rank 1 entering 1 s late:", [r.value for r in waited.ranks])
    folder = tempfile.mkdtemp()
    try:
        run = bl.run(handoff, 3, args=(folder,), timeout=10, live=False)
        races = run.races()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not run.ok:
        print(run)
        return 1
    early = [v for r, v in enumerate(waited.values) if r != 1 and v is not None and v < 0.5]
    print("races reported:", len(races))
    if early and not races:
        print("BROKEN: ranks leave an empty reduce_scatter without waiting, yet the read is taken as ordered")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
