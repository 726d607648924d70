"""FSDP2 tutorial: shard each layer and the root with ``fully_shard``, train, gather a full tensor.

Source: pytorch/tutorials intermediate_source/FSDP_tutorial.rst ("Getting Started with Fully Sharded Data
Parallel (FSDP2)"): ``fully_shard(layer)`` for each block, then ``fully_shard(model)``; forward and backward
all-gather parameters and reduce-scatter gradients (issued from C++ / functional collectives); parameters
are DTensors and ``full_tensor()`` all-gathers one.
Changed for the lab: a two-layer MLP on CPU with gloo (FSDP2 runs there in torch 2.13).
Expected: every rank finishes two steps and returns the same full weight sum.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0


def worker():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    for layer in (model[0], model[2]):
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return round(model[0].weight.full_tensor().sum().item(), 4)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
