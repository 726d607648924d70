"""Lightning Fabric: `make_dataset` builds the dataset on global rank 0 and returns it inside the rank-0 branch, so
rank 0 never reaches the `fabric.barrier()` the other ranks wait in, and they would get `None` back (buggy).

Source: Lightning-AI/pytorch-lightning issue #20536 ("lightning.Fabric meets deadlock when loading nn.Module");
the diagnosis in the thread (lantiga): "The issue arises because the two ranks diverge, specifically because
make_dataset returns `None` on rank 1" -- `if fabric.global_rank == 0: dataset = TensorDataset(x, y); return
dataset` then `fabric.barrier()  # <- this will never be reached on rank 0`. Lightning's `Fabric.barrier` is
`torch.distributed.barrier()`; `Fabric.setup` wraps the model in DDP, whose constructor synchronises the
parameters across ranks. Here rank 1 waits in `fabric.barrier()` inside `make_dataset`, rank 0 goes on to
`fabric.setup(model, optimizer)` and waits in DDP's start-up collectives.

Stand-ins: `lightning.fabric.Fabric` from `../_standins` (barrier, DDP setup, backward); the I/O the user mentions
("In actual program, there is some I/O so I used barrier") is a `torch.save` of the tensors by rank 0. Model and
data are tiny and built in code.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


class Runner:
    def __init__(self, fabric):
        self.fabric = fabric

    def make_dataset(self, x, y):
        if self.fabric.global_rank == 0:
            path = os.path.join(tempfile.gettempdir(), f"r38_fabric_bug_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}.pt")
            torch.save((x, y), path)  # the I/O done on one rank
            dataset = TensorDataset(x, y)
            return dataset  # BUG
        self.fabric.barrier()  # WAITS

    def fit(self, model, x, y):
        dataset = self.make_dataset(x, y)  # WAITS
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = self.fabric.setup(model, optimizer)  # WAITS
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
    loss = Runner(fabric).fit(model, x, y)  # WAITS
    print(f"[rank {fabric.global_rank}] trained, last loss {loss:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
