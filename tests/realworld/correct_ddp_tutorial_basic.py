"""DDP tutorial, basic use case: the script sets up its own group and is started with mp.spawn.

Source: pytorch/tutorials intermediate_source/ddp_tutorial.rst ("Getting Started with Distributed Data
Parallel"), ``setup``/``cleanup``/``demo_basic`` and ``run_demo`` (``mp.spawn(fn, args=(world_size,),
nprocs=world_size, join=True)``); MASTER_ADDR "localhost" and MASTER_PORT "12355" as the tutorial sets them.
Changed for the lab: gloo on CPU (the tutorial's fallback when there is no GPU) and a short group timeout.
Expected: every rank runs one DDP training step and returns.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0
#: The script calls init_process_group itself (rank, world_size come from mp.spawn): bl.run cannot run it yet.
SELF_INIT = True


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=TIMEOUT))


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def main(rank, world_size):
    setup(rank, world_size)
    model = ToyModel()
    ddp_model = DDP(model)
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)
    loss_fn(outputs, labels).backward()
    optimizer.step()
    cleanup()
    return rank


if __name__ == "__main__":
    mp.spawn(main, args=(WORLD_SIZE,), nprocs=WORLD_SIZE, join=True)
