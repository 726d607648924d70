"""One rank of four crashes before an all_reduce: its direct peers fail at once, another waits the timeout."""

import os

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario(crashing_rank=1, numel=1):
    """``numel``: the all_reduce's length; which survivors fail at once depends on it too (measured on gloo,
    4 ranks, rank 3 crashing: rank 2 alone with 1 element, ranks 0 and 2 with 1,024)."""
    rank = dist.get_rank()
    if rank == crashing_rank:
        os._exit(1)  # the process dies (out of memory, a segfault, a killed node)
    grad = torch.ones(numel)
    dist.all_reduce(grad)  # the survivors average their gradients
    return grad.item()


if __name__ == "__main__":
    torchrun_main(scenario)
