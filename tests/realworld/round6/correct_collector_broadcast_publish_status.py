"""A benchmark collector that broadcasts rank 0's publish outcome before the ranks synchronise.

Modelled on the fix proposed in the review of ai-dynamo/aiconfigurator PR #1542 ("Agree on the publish outcome
across ranks before the barrier": rank 0's result is broadcast, then every rank takes the same branch), with
the write retried into a fallback directory as collectors commonly do. Written here: the timing is a tiny
all-reduce loop, and rank 0's first write fails because the output directory it was given is a regular file.

Looks suspicious: the write and its ``except`` run on rank 0 only, and the ranks' ``finally`` blocks differ in
what they clean up, but the publish status is broadcast with ``broadcast_object_list`` from rank 0 on every
rank, every rank takes the retry branch from the broadcast value, and the barrier is made by every rank.
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def measure(sizes, iters=5):
    rows = []
    for size in sizes:
        buf = torch.ones(size)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        elapsed = torch.tensor([(time.perf_counter() - start) / iters])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        rows.append((size, float(elapsed)))
    return rows


def write_rows(rows, out_dir):
    with open(os.path.join(out_dir, "moe_a2a_perf.txt"), "w") as f:
        for size, seconds in rows:
            f.write(f"{size},{seconds:.6f}\n")


def publish(rows, out_dir):
    """Rank 0 writes; every rank learns the outcome. Returns the error text, or None."""
    status = [None]
    if dist.get_rank() == 0:
        try:
            write_rows(rows, out_dir)
        except OSError as err:
            status[0] = f"{type(err).__name__}: {err}"
    dist.broadcast_object_list(status, src=0)
    return status[0]


def collect(out_dir, fallback_dir):
    rows = measure([16, 256, 4096])
    error = publish(rows, out_dir)
    if error is not None:  # the same value on every rank
        error = publish(rows, fallback_dir)
    dist.barrier()
    if error is not None:
        raise RuntimeError(error)
    return rows


def worker():
    fd, out_dir = tempfile.mkstemp(prefix="r6_collector_")  # a file, not a directory
    os.close(fd)
    fallback_dir = tempfile.mkdtemp(prefix="r6_collector_fb_")
    try:
        rows = collect(out_dir, fallback_dir)
        if dist.get_rank() == 0:
            assert os.path.exists(os.path.join(fallback_dir, "moe_a2a_perf.txt"))
        return len(rows)
    finally:
        os.unlink(out_dir)
        shutil.rmtree(fallback_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
