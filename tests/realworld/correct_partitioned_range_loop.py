"""A loop over this rank's own block of indices, ``range(rank * n, rank * n + n)``: the bounds depend on
the rank but the trip count does not, so the all_reduce inside runs n times on every rank.

Source: torch/utils/data/distributed.py ``DistributedSampler.__iter__`` (every rank gets exactly
``num_samples`` indices, padding or dropping so the counts match) and pytorch/examples
distributed/tensor_parallelism-style per-rank shards; issue 12 of this lab lists
``range(rank*n, rank*n+n)`` as a loop lint flagged although every rank runs n iterations.
Expected: every rank finishes with the same total.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker(n=4):
    rank = dist.get_rank()
    data = torch.arange(n * dist.get_world_size(), dtype=torch.float32)
    total = torch.zeros(1)
    for i in range(rank * n, rank * n + n):
        value = data[i : i + 1].clone()
        dist.all_reduce(value)
        total += value
    return total.item()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
