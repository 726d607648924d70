"""torchmetrics with plain DDP: every rank updates a ``MulticlassAccuracy`` on its own shard and every rank
calls ``compute()``, which gathers the states of all ranks; the main process prints.

Source: Lightning-AI/torchmetrics docs/source/pages/overview.rst ("Metrics in Distributed Data Parallel
(DDP) mode": ``compute`` syncs across processes and must be called on all of them) and the working version
of the script in Lightning-AI/torchmetrics issue #938 (module metrics with ``DistributedDataParallel``,
without Lightning). Needs the real torchmetrics (REQUIRES).
Correct: ``compute()`` runs on every rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from torchmetrics.classification import MulticlassAccuracy

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0
REQUIRES = ("torchmetrics",)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(6, 3))
    metric = MulticlassAccuracy(num_classes=3)
    generator = torch.Generator().manual_seed(rank)
    with torch.no_grad():
        for _ in range(3 + rank):  # shards of different lengths: the states are gathered, not reduced in place
            x, y = torch.randn(5, 6, generator=generator), torch.randint(0, 3, (5,), generator=generator)
            metric.update(model(x), y)
    accuracy = metric.compute()
    if rank == 0:
        print(f"accuracy {accuracy.item():.3f}")
    metric.reset()
    return accuracy.item()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
