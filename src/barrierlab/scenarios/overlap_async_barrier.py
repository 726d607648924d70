"""barrier(async_op=True) in a loop: announce arrival, prefetch the next batch, then wait for the others."""

import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(steps=4, delay=0.15, base_compute=0.05, prefetch=0.1, overlap=True):
    """A different rank is slow each step; after computing, each rank prefetches its next batch.

    ``overlap=False``: wait at the barrier, then prefetch. ``overlap=True``: issue the barrier, prefetch
    while the others catch up, then ``wait()``.
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for step in range(steps):
        with span("compute"):
            time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
        if overlap:
            work = dist.barrier(async_op=True)  # returns at once: "I have arrived"
            with span("prefetch next batch", kind="io"):
                time.sleep(prefetch)  # needs no other rank
            with span(f"wait(barrier#{step + 1})", kind="wait"):  # the timeline shows where it waited
                work.wait()  # now block until every rank has arrived
        else:
            dist.barrier()
            with span("prefetch next batch", kind="io"):
                time.sleep(prefetch)
    return rank


if __name__ == "__main__":
    torchrun_main(scenario)
