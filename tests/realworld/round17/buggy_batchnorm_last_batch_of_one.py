"""Pre-sharded training rows, a ``DataLoader`` without ``drop_last``: one rank's last batch has a single row.

Models: open-mmlab/mmpretrain issue #761 ("the last batch of the epoch can have batch_size 1, this makes
BatchNorm to fail": ``ValueError: Expected more than 1 value per channel when training``) and issue #1421; criteo/
tf-yarn PR #79 ("Not dropping the last batch could result in a smaller batch size which could block your
distributed training"); timm's ``create_loader`` (``drop_last=is_training``). The script is a learner's DDP
tabular classifier whose rows were split across ranks ahead of time with ``rows[rank::world_size]`` (no
``DistributedSampler``, so no padding) and loaded with a plain shuffling ``DataLoader``.

What it does: 2 ranks, 67 rows: rank 0 gets 34, rank 1 gets 33. ``DataLoader(batch_size=8, shuffle=True)`` gives
both ranks 5 batches (8, 8, 8, 8, 2 and 8, 8, 8, 8, 1). The model is ``Linear -> BatchNorm1d -> ReLU -> Linear``
under DDP; 2 epochs.

The bug: ``drop_last`` is left at ``False``. The batch counts agree, so nothing looks uneven, but rank 1's fifth
batch has one row and ``BatchNorm1d`` in training mode raises ``ValueError: Expected more than 1 value per channel
when training`` in rank 1's forward; rank 0 runs its fifth forward and waits in ``loss.backward()`` for a gradient
all-reduce rank 1 never joins. The correct twin passes ``drop_last=True`` (4 full batches on each rank).
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def load_rows():
    """Stand-in for the training CSV: 67 rows, 10 features, 3 classes."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(67, 10, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    return x, y


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = load_rows()
    x, y = x[rank::world], y[rank::world]  # pre-sharded: 34 and 33 rows
    gen = torch.Generator().manual_seed(rank)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=gen)  # BUG
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(2):
        model.train()
        total, batches = 0.0, 0
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()  # WAITS
            opt.step()
            total, batches = total + loss.item(), batches + 1
        print(f"[rank {rank}] epoch {epoch}: {batches} batches, mean loss {total / batches:.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
