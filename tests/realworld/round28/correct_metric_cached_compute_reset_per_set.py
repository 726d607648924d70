"""A torchmetrics-style metric evaluated on two sets in a row -- validation, then a 1-sample "hard cases" test set
-- and reset after each set's ``compute()``, so a rank that got no sample of a set still syncs.

Models: torchmetrics ``Metric`` (``compute()`` returns ``self._computed`` when it is set, before its
``sync_context``; ``update()`` and ``reset()`` clear it; it warns when ``compute()`` comes before any ``update()``,
and still syncs), an evaluation loop over a dict of named sets sharing one metric object, and an unpadded split
(``samples[rank::world_size]``), which leaves a rank empty when a set has fewer samples than ranks.

What it does: 2 ranks fit a tiny linear regressor (DDP, 3 steps), then evaluate it on ``val`` (8 samples) and
``hard`` (1 sample), each split ``[rank::2]``, with one ``MeanAbsoluteError`` (``_helpers_metrics``), reset after
each set, and print the results on rank 0.

Looks suspicious but is right: rank 1 never calls ``update()`` for ``hard``, and ``compute()`` has an early
``return`` of a cached value before its all-reduce. After each set's ``reset()`` nothing is cached on any rank, so
both ranks sync (rank 1 with zero states and a warning) and rank 0 divides by the one sample.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_metrics import MeanAbsoluteError

KIND = "correct"
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
            results[name] = metric.compute()
            metric.reset()
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
    results = evaluate(model, make_sets(), MeanAbsoluteError(), rank, world_size)
    if rank == 0:
        print(f"MAE {results}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
