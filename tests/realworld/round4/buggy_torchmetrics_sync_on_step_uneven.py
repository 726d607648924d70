"""Real torchmetrics: a metric with ``dist_sync_on_step=True`` on ranks that run different numbers of batches.

Source: Lightning-AI/torchmetrics, src/torchmetrics/metric.py (``Metric.forward`` with ``dist_sync_on_step``:
every ``forward`` call syncs the batch state across processes) and the hang reported in
Lightning-AI/pytorch-lightning issue #5865 ("Training stuck at 0% after few epochs while training with DDP";
the reporter traced it to a metric with ``dist_sync_on_step=True`` and switched the checkpoint monitor away
from it). The evaluation loop here shards the samples by rank with ``torch.tensor_split`` (no padding
sampler), so 9 samples over 2 ranks at batch size 2 gives rank 0 three batches and rank 1 two.

The bug: each ``metric(preds, target)`` is a collective when ``dist_sync_on_step=True``; rank 0's third step
pairs with rank 1's ``compute()`` sync, and rank 0's own ``compute()`` then waits alone.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("torchmetrics",)
NUM_SAMPLES = 9
BATCH = 2


def worker():
    import torchmetrics

    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    preds = torch.randn(NUM_SAMPLES)
    target = preds + 0.1 * torch.randn(NUM_SAMPLES)
    shard = torch.tensor_split(torch.arange(NUM_SAMPLES), world)[rank]  # 5 samples on rank 0, 4 on rank 1
    metric = torchmetrics.MeanSquaredError(dist_sync_on_step=True)  # BUG
    p, t = preds[shard], target[shard]
    for start in range(0, len(p), BATCH):
        metric(p[start : start + BATCH], t[start : start + BATCH])
    return float(metric.compute())  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
