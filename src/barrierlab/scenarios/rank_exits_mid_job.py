"""One rank of four crashes before an all_reduce: its direct peers fail at once, another waits the timeout."""

import os

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario(crashing_rank=1):
    rank = dist.get_rank()
    if rank == crashing_rank:
        os._exit(1)  # the process dies (out of memory, a segfault, a killed node)
    grad = torch.ones(1)
    dist.all_reduce(grad)  # the survivors average their gradients
    return grad.item()


if __name__ == "__main__":
    torchrun_main(scenario)
