"""torchmetrics with plain DDP: the test loop runs on rank 0 only, and its ``metrics.compute()`` gathers the
metric states from every rank.

Source: Lightning-AI/torchmetrics issue #938 ("Using Module Metrics with PyTorch DDP (without PyTorch
Lightning)": train with DDP on all GPUs, ``test()`` only ``if rank == 0``, ``metrics.compute()`` hangs in
``all_gather`` until the timeout) and src/torchmetrics/metric.py (``compute`` → ``sync`` →
``gather_all_tensors``). Needs the real torchmetrics (REQUIRES).
Bug: only rank 0 tests (BUG); its ``compute()`` waits in torchmetrics' all_gather (WAITS on the item's lines
that lead there); rank 1 waits in the final barrier (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0
REQUIRES = ("torchmetrics",)


def train(model, rank):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    for _ in range(3):
        x, y = torch.randn(8, 6, generator=generator), torch.randint(0, 3, (8,), generator=generator)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def test(model, metrics):
    generator = torch.Generator().manual_seed(100)
    with torch.no_grad():
        for _ in range(2):
            x, y = torch.randn(8, 6, generator=generator), torch.randint(0, 3, (8,), generator=generator)
            metrics.update(model(x), y)
    return metrics.compute()  # WAITS


def worker():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(6, 3))
    metrics = MetricCollection({"acc": MulticlassAccuracy(num_classes=3), "f1": MulticlassF1Score(num_classes=3)})
    train(model, rank)
    if rank == 0:
        results = test(model.module, metrics)  # BUG WAITS
        print({k: round(v.item(), 3) for k, v in results.items()})
    dist.barrier()  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
