"""Rank 0 broadcasts the data-set statistics with ``broadcast_object_list``; every rank reads them from the list.

Models: the ``broadcast_object_list`` docstring example (non-source ranks pass a list of ``None`` and read the list
after the call); pytorch/pytorch issue #56142 (the list, not the object put into it, is what the call fills);
flashinfer-ai/flashinfer PR #4122 (a ``bcast`` helper that returns ``obj_list[0]``); open-mmlab/mmrazor PR #153. The
script is a learner's tabular-classification DDP script in which rank 0 computes the normalisation statistics and the
class count and shares them.

What it does: 3 ranks. Rank 0 computes ``{"mean", "std", "num_classes"}`` from the training data (a stand-in: a
seeded tensor); every rank puts its value (``None`` off rank 0) into ``holder``, calls
``dist.broadcast_object_list(holder, src=0)`` and takes ``stats = holder[0]``, so all three normalise with rank 0's
statistics and build the same MLP under DDP; 4 epochs of training and a final barrier end the run.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20


def load_training_table():
    """Stand-in for reading the training CSV: 90 rows, 6 features on different scales, 3 classes."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(90, 6, generator=g) * torch.tensor([1.0, 10.0, 100.0, 0.1, 5.0, 50.0]) + 20.0
    y = ((x[:, 0] - 20.0 > 0).long() + (x[:, 2] - 20.0 > 50.0).long())
    return x, y


def dataset_statistics():
    x, y = load_training_table()
    return {"mean": x.mean(0).tolist(), "std": x.std(0).tolist(), "num_classes": int(y.max()) + 1}


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    stats = dataset_statistics() if rank == 0 else None
    holder = [stats]
    dist.broadcast_object_list(holder, src=0)
    stats = holder[0]  # the call fills the list in place
    mean, std = torch.tensor(stats["mean"]), torch.tensor(stats["std"])

    x, y = load_training_table()
    x, y = x[rank::world_size], y[rank::world_size]
    x = (x - mean) / std
    model = DDP(nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, stats["num_classes"])))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(4):
        for i in range(0, len(x), 10):
            loss = F.cross_entropy(model(x[i:i + 10]), y[i:i + 10])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
