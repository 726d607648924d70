"""How long one barrier takes when nobody is late: the pure synchronisation cost for this world size."""

import statistics
import time

import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario(repeats=30, warmup=5, samples=False):
    """Call ``dist.barrier()`` back to back; return the median seconds one call took on this rank
    (``samples=True``: every call's seconds, to show the spread)."""
    for _ in range(warmup):
        dist.barrier()  # the first calls absorb start-up skew between the ranks and first-use costs
    took = []
    for _ in range(repeats):
        start = time.perf_counter()
        dist.barrier()
        took.append(time.perf_counter() - start)
    return took if samples else statistics.median(took)


if __name__ == "__main__":
    torchrun_main(scenario)
