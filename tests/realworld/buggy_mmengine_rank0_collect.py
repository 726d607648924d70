"""mmengine-style evaluation: ``collect_results`` (a broadcast and a barrier inside) called only on rank 0.

Source: open-mmlab/mmengine mmengine/dist/dist.py ``collect_results`` (must be called by every rank: it
broadcasts the temporary folder and barriers before rank 0 reads the parts) and mmengine/evaluator/metric.py
``BaseMetric.evaluate`` (collects on every rank, computes on the main process); the bug moves the collection
under ``if rank == 0`` after ``rank, world_size = get_dist_info()``.
Stand-in: tests/realworld/_standins/mmengine/dist.
Bug: ``collect_results`` under ``rank == 0`` (BUG); rank 0 waits in it (WAITS), rank 1 in the final barrier
(WAITS).
"""

from datetime import timedelta

import torch.distributed as dist

from mmengine.dist import barrier, collect_results, get_dist_info

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    rank, world_size = get_dist_info()
    results = [{"idx": rank + i * world_size, "correct": (rank + i) % 2} for i in range(3)]
    metric = None
    if rank == 0:  # BUG
        gathered = collect_results(results, size=3 * world_size)  # WAITS
        metric = sum(r["correct"] for r in gathered) / len(gathered)
    barrier()  # WAITS
    return metric


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
