"""Rank 0 broadcasts data-set statistics with ``broadcast_object_list``; the others read the variable they passed in.

Models: pytorch/pytorch issue #56142 ("broadcast_object_list doesn't broadcast custom class object": the reporter
passed ``[dummy]`` and read ``dummy`` afterwards; the answer is that the call fills the *list* in place); the
``broadcast_object_list`` docstring example (non-source ranks pass ``[None, None, None]`` and read the list);
open-mmlab/mmrazor PR #153 (its ``broadcast_object_list`` rewritten "to be consistent with pytorch": no return value,
the data list modified in place); flashinfer-ai/flashinfer PR #4122 (a ``bcast`` helper that returns
``obj_list[0]``). The script is a learner's tabular-classification DDP script in which rank 0 computes the
normalisation statistics and the class count (as scripts do with a pass over the training file) and shares them.

What it does: 3 ranks. Rank 0 computes ``{"mean", "std", "num_classes"}`` from the training data (a stand-in file:
a seeded tensor); every rank calls ``dist.broadcast_object_list([stats], src=0)``, normalises its shard with the
statistics, builds an MLP with ``num_classes`` outputs under DDP and trains.

The bug: the list is a temporary; the broadcast fills it on ranks 1 and 2, but they go on reading their own
``stats``, which is still ``None``: ``TypeError: 'NoneType' object is not subscriptable`` on ranks 1 and 2. Rank 0
(whose ``stats`` is the real dict) goes on into the DDP constructor and waits there for the other ranks'
parameter-shape check.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
    dist.broadcast_object_list([stats], src=0)  # BUG
    mean, std = torch.tensor(stats["mean"]), torch.tensor(stats["std"])

    x, y = load_training_table()
    x, y = x[rank::world_size], y[rank::world_size]
    x = (x - mean) / std
    model = DDP(nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, stats["num_classes"])))  # WAITS
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
    worker()  # WAITS
    dist.destroy_process_group()
