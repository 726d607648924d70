"""Real torchmetrics: a custom ``Metric`` with a list state and ``dist_reduce_fx=None``, updated a different
number of times on each rank.

Source: Lightning-AI/torchmetrics issue #2170 ("Imbalanced metric states with ``drop_last=False``": with an
uneven last batch the ranks end up with list states of different lengths, "this causes the sync before
``compute`` to crash"; the reporter notes that ``gather_all_tensors`` "gets called on individual tensor
elements of the list and not on the whole list"). In torchmetrics 1.x, src/torchmetrics/metric.py
``_sync_dist`` concatenates a list state first only when its reduction is ``dim_zero_cat``; with
``dist_reduce_fx=None`` (the custom-metric documentation's way to keep raw per-batch values) every element of
the list is gathered by its own collective. Here: 5 samples in batches of 2, sharded per rank without
padding, so rank 0 updates twice and rank 1 once, and ``compute()`` issues a different number of
all-gathers on each rank.

The bug: the list state's length differs by rank, so the number of collectives in the sync differs.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("torchmetrics",)
NUM_SAMPLES = 5
BATCH = 2


def worker():
    from torchmetrics import Metric

    class BatchErrors(Metric):
        def __init__(self):
            super().__init__()
            self.add_state("errors", default=[], dist_reduce_fx=None)  # BUG

        def update(self, preds, target):
            self.errors.append((preds - target).abs())

        def compute(self):
            errors = self.errors
            if errors and isinstance(errors[0], list):
                errors = [e for per_rank in errors for e in per_rank]
            return torch.cat([e.flatten() for e in errors]).mean()

    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    preds = torch.randn(NUM_SAMPLES)
    target = preds + 0.1 * torch.randn(NUM_SAMPLES)
    shard = torch.tensor_split(torch.arange(NUM_SAMPLES), world)[rank]  # 3 samples on rank 0, 2 on rank 1
    metric = BatchErrors()
    for start in range(0, len(shard), BATCH):
        index = shard[start : start + BATCH]
        metric.update(preds[index], target[index])
    return float(metric.compute())  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
