"""Lightning Fabric: `make_dataset` does its I/O on global rank 0, every rank meets in `fabric.barrier()`, and
every rank then builds the dataset from what rank 0 wrote (correct).

Source: Lightning-AI/pytorch-lightning issue #20536 ("lightning.Fabric meets deadlock when loading nn.Module");
the pattern the thread gives (lantiga, "if you need to actually do I/O, this is the pattern to follow"): the I/O
under `if fabric.global_rank == 0:`, then `fabric.barrier()  # make sure no one runs ahead` on every rank, then the
dataset created on all ranks. Every rank then reaches `fabric.setup(model, optimizer)` (DDP) together and trains.

Stand-ins: `lightning.fabric.Fabric` from `../_standins` (barrier, DDP setup, backward); the I/O is a `torch.save`
of the tensors by rank 0, read back by every rank. Model and data are tiny and built in code.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class Runner:
    def __init__(self, fabric):
        self.fabric = fabric

    def make_dataset(self, x, y):
        path = os.path.join(tempfile.gettempdir(), f"r38_fabric_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}.pt")
        if self.fabric.global_rank == 0:
            torch.save((x, y), path)  # the I/O done on one rank
        self.fabric.barrier()  # make sure no one runs ahead
        x, y = torch.load(path)
        self.fabric.barrier()  # every rank has read the file before rank 0 removes it
        if self.fabric.global_rank == 0:
            os.remove(path)
        return TensorDataset(x, y)

    def fit(self, model, x, y):
        dataset = self.make_dataset(x, y)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = self.fabric.setup(model, optimizer)
        loader = DataLoader(dataset, batch_size=4)
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            self.fabric.backward(loss)
            optimizer.step()
        return loss.item()


def worker():
    fabric = Fabric()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(8, 3, generator=g), torch.randn(8, 1, generator=g)
    loss = Runner(fabric).fit(model, x, y)
    print(f"[rank {fabric.global_rank}] trained, last loss {loss:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
