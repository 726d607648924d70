"""Lightning Fabric: a dataset helper returns early on rank 0, before the barrier the other ranks wait in.

Source: Lightning-AI/pytorch-lightning issue #20536 ("lightning.Fabric meets deadlock when loading
nn.Module"), diagnosed in the thread: ``make_dataset`` did ``if fabric.global_rank == 0: ... return
dataset`` and only then ``fabric.barrier()``, so rank 0 never reached the barrier (and rank 1 got None).
Stand-in: tests/realworld/_standins/lightning (``Fabric.barrier`` is ``dist.barrier``).
Bug: the early ``return`` on rank 0 (BUG); the other ranks wait in ``fabric.barrier()`` (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import TensorDataset

from lightning.fabric import Fabric

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def make_dataset(fabric, x, y):
    if fabric.global_rank == 0:
        dataset = TensorDataset(x, y)  # in the real program, some I/O happens here
        return dataset  # BUG
    fabric.barrier()  # WAITS
    return TensorDataset(x, y)


def worker():
    fabric = Fabric()
    model, optimizer = fabric.setup(torch.nn.Linear(3, 1), None)
    dataset = make_dataset(fabric, torch.randn(8, 3), torch.randn(8, 1))  # WAITS
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in zip(dataset.tensors[0].split(4), dataset.tensors[1].split(4)):
        loss = torch.nn.functional.mse_loss(model(x), y)
        fabric.backward(loss)  # WAITS
        optimizer.step()
        optimizer.zero_grad()
    return len(dataset)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
