"""Real torchmetrics: a metric with a concatenated list state, updated on one rank only, computed on all.

Source: Lightning-AI/torchmetrics, src/torchmetrics/metric.py ``Metric._sync_dist``: for a ``dim_zero_cat``
list state a rank that "have not received any data" contributes an empty tensor, and ``gather_all_tensors``
(src/torchmetrics/utilities/distributed.py) pads uneven shapes, so every rank issues the same all-gathers
whatever it saw. This is the case behind issue #2170 (imbalanced list states across ranks) handled by the
library. Here the last evaluation shard is empty: 3 samples over 2 ranks in shards of 4 (``ceil`` sharding of
a tiny set), so rank 1 never calls ``update`` — and still calls ``compute()``, as every rank must.
"""

import math

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("torchmetrics",)
NUM_SAMPLES = 3
SHARD = 4


def worker():
    import warnings

    from torchmetrics.aggregation import CatMetric

    rank = dist.get_rank()
    torch.manual_seed(0)
    scores = torch.rand(NUM_SAMPLES)
    shard = scores[rank * SHARD : (rank + 1) * SHARD]
    metric = CatMetric()
    for start in range(0, len(shard), 2):
        metric.update(shard[start : start + 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank 1: "compute was called before update"
        everything = metric.compute()
    assert everything.numel() == NUM_SAMPLES, everything
    assert math.isclose(float(everything.sum()), float(scores.sum()), rel_tol=1e-6)
    return everything.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
