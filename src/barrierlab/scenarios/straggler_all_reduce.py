"""A training loop whose all_reduce already waits for the slow rank: an extra barrier next to it buys nothing."""

import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(steps=4, slow_rank=1, delay=0.15, base_compute=0.05, extra_barrier=False):
    """Each step: compute (``delay`` longer on ``slow_rank``), optionally a barrier, then all_reduce the gradients."""
    rank = dist.get_rank()
    grad = torch.zeros(1000)
    for step in range(steps):
        with span("compute"):
            time.sleep(base_compute + (delay if rank == slow_rank else 0.0))  # forward and backward
            grad.fill_(rank + step)
        if extra_barrier:
            dist.barrier()  # "make sure everyone finished backward" -- the all_reduce does that already
        dist.all_reduce(grad)  # sum of every rank's gradient: needs every rank's data, so it waits for all
    return grad[0].item()


if __name__ == "__main__":
    torchrun_main(scenario)
