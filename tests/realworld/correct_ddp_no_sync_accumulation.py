"""Gradient accumulation with DDP's ``no_sync``: every rank skips the gradient all_reduce on the same
micro-batches and synchronises on the last one.

Source: pytorch/pytorch torch/nn/parallel/distributed.py, ``DistributedDataParallel.no_sync`` docstring
(``with ddp.no_sync(): for input in inputs: ddp(input).backward()`` then ``ddp(another_input).backward()``
synchronises), and the DDP notes docs/source/notes/ddp.rst.
Expected: every rank finishes with equal weights.
"""

from contextlib import nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker(accumulation_steps=3, steps=6):
    torch.manual_seed(dist.get_rank())
    ddp = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(steps):
        sync = (step + 1) % accumulation_steps == 0
        with nullcontext() if sync else ddp.no_sync():
            loss = ddp(torch.randn(8, 4)).pow(2).mean() / accumulation_steps
            loss.backward()
        if sync:
            optimizer.step()
            optimizer.zero_grad()
    weight = ddp.module.weight.detach().clone()
    dist.all_reduce(weight)
    return bool(torch.allclose(weight / dist.get_world_size(), ddp.module.weight))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
