"""Uneven inputs with DDP and ZeroRedundancyOptimizer, shadowed by the generic Join context manager.

Source: pytorch/tutorials, advanced_source/generic_join.rst ("Distributed Training with Uneven Inputs Using the
Join Context Manager"): rank 0 gets 5 inputs and rank 1 gets 6; ``with Join([model, optim]):`` lets the rank
that runs out shadow the other's all-reduces and the optimizer's broadcasts.
"""

import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.distributed.optim import ZeroRedundancyOptimizer as ZeRO
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 6
BASE_INPUTS = 5


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(1, 1))
    optim = ZeRO(model.parameters(), torch.optim.Adam, lr=0.01)
    inputs = [torch.tensor([1.0]) for _ in range(BASE_INPUTS + rank)]
    num_inputs = 0
    with Join([model, optim]):
        for x in inputs:
            num_inputs += 1
            loss = model(x).sum()
            loss.backward()
            optim.step()
    return num_inputs


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
