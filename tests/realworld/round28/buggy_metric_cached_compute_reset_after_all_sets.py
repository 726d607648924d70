"""A torchmetrics-style metric evaluated on two sets in a row -- validation, then a 1-sample "hard cases" test set
-- and reset once after both, so the second ``compute()`` can return the first one's cached value.

Models: torchmetrics ``Metric`` (``compute()`` returns ``self._computed`` when it is set, before its
``sync_context``; ``update()`` and ``reset()`` clear it; the docs: call ``reset()`` at the end of each epoch /
evaluation), an evaluation loop over a dict of named sets sharing one metric object (as Lightning users do with
several ``val_dataloaders``), and an unpadded split (``samples[rank::world_size]``, no ``DistributedSampler``
padding), which leaves a rank empty when a set has fewer samples than ranks.

What it does: 2 ranks fit a tiny linear regressor (DDP, 3 steps), then evaluate it on ``val`` (8 samples) and
``hard`` (1 sample), each split ``[rank::2]``, with one ``MeanAbsoluteError`` (``_helpers_metrics``), and print
the results on rank 0.

The bug: ``metric.reset()`` is called once, after the loop over the sets. Rank 1 gets no ``hard`` sample, never
calls ``update()`` for it, and its ``compute()`` returns the cached ``val`` result without syncing; rank 0 updated
the metric, so its ``compute()`` all-reduces the states and waits there, while rank 1 goes on to the final
barrier. The collective is in the helper's ``compute``; the rank-local value that skips it is the cache.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_metrics import MeanAbsoluteError

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def make_sets():
    g = torch.Generator().manual_seed(28)
    w = torch.tensor([1.5, -2.0, 0.5])
    x = torch.randn(9, 3, generator=g)
    y = x @ w + 0.1 * torch.randn(9, generator=g)
    return {"val": (x[:8], y[:8]), "hard": (x[8:], y[8:])}


def evaluate(model, sets, metric, rank, world_size):
    results = {}
    model.eval()
    with torch.no_grad():
        for name, (x, y) in sets.items():
            xs, ys = x[rank::world_size], y[rank::world_size]  # unpadded: 1 sample leaves rank 1 empty
            for i in range(0, len(ys), 2):
                metric.update(model.module(xs[i : i + 2]).squeeze(1), ys[i : i + 2])
            results[name] = metric.compute()  # WAITS
    metric.reset()  # BUG
    return results


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for _ in range(3):
        x = torch.randn(8, 3, generator=g)
        loss = F.mse_loss(model(x).squeeze(1), x @ torch.tensor([1.5, -2.0, 0.5]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    results = evaluate(model, make_sets(), MeanAbsoluteError(), rank, world_size)  # WAITS
    if rank == 0:
        print(f"MAE {results}", flush=True)
    dist.barrier()  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
