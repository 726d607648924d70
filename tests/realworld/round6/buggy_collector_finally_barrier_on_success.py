"""A benchmark collector whose ``finally`` block synchronises only the ranks that did not fail.

Modelled on ai-dynamo/aiconfigurator PR #1542 (``collector/wideep/vllm/collect_moe_a2a.py``) and its review:
"Only rank 0 runs ``_write_rows`` ... If any of those raise, rank 0 sets ``run_failed = True``, skips the
barrier, and destroys its process group. The non-zero ranks reach the same ``finally`` block with
``run_failed = False``, so they call ``dist.barrier(group=group)`` and wait for a rank that is already gone."
Same family: pytorch/pytorch PR #124961 review (a ``dist.barrier()`` in a ``finally`` when one rank raised),
pytorch/torchtitan PR #1342. Written here: the "all-to-all" timing is a tiny all-reduce loop, and rank 0's write
fails because the output directory it was given is a regular file.

Bug: the ``finally`` barrier is skipped by the rank that failed and entered by every other rank. Rank 0 then
leaves with its exception while rank 1 waits in the barrier.
"""

import os
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
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
    with open(os.path.join(out_dir, "moe_a2a_perf.txt"), "w") as f:  # out_dir is a file: NotADirectoryError
        for size, seconds in rows:
            f.write(f"{size},{seconds:.6f}\n")


def collect(out_dir):
    rank = dist.get_rank()
    run_failed = False
    try:
        rows = measure([16, 256, 4096])
        if rank == 0:
            write_rows(rows, out_dir)
    except BaseException:
        run_failed = True
        raise
    finally:
        if not run_failed:  # BUG
            dist.barrier()  # WAITS


def worker():
    # the "output directory" handed to the collector is a regular file on every rank
    fd, out_dir = tempfile.mkstemp(prefix="r6_collector_")
    os.close(fd)
    try:
        collect(out_dir)  # WAITS
    finally:
        os.unlink(out_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
