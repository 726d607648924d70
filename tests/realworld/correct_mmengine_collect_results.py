"""mmengine: ``rank, world_size = get_dist_info()``, a world_size-only condition, results collected
from every rank and dumped by rank 0.

Source: open-mmlab/mmengine mmengine/dist/utils.py (``get_dist_info``) and mmengine/dist/dist.py
(``collect_results``, ``all_reduce``); the calling pattern of mmengine/evaluator/metric.py
``BaseMetric.evaluate`` (``results = collect_results(self.results, size, self.collect_device)``, then
``if is_main_process(): ... compute_metrics``) and of mmengine/runner/loops.py.
Stand-in: tests/realworld/_standins/mmengine/dist.
Expected: every rank finishes; rank 0 returns the metric, the others None.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

from mmengine.dist import all_reduce, barrier, collect_results, get_dist_info

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    rank, world_size = get_dist_info()
    if world_size > 1:
        barrier()
    loss = torch.tensor([float(rank + 1)])
    all_reduce(loss, op="mean")
    results = [{"idx": rank + i * world_size, "correct": (rank + i) % 2} for i in range(3)]
    gathered = collect_results(results, size=3 * world_size)
    metric = None
    if rank == 0:
        metric = sum(r["correct"] for r in gathered) / len(gathered)
        print(f"accuracy {metric:.2f}, mean loss {loss.item():.2f}")
    return metric


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
