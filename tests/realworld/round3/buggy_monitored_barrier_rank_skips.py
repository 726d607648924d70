"""One rank skips the monitored barrier: the documented failure.

Source: pytorch/pytorch, torch/distributed/distributed_c10d.py, the ``monitored_barrier`` docstring example:
``if dist.get_rank() != 1: dist.monitored_barrier()  # Raises exception indicating that rank 1 did not call
into monitored_barrier``. Here rank 1 skips it because it has "nothing to sync" after an empty shard.

The bug: the monitored barrier behind a rank-dependent condition.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 4


def worker():
    rank = dist.get_rank()
    shard = torch.ones(2) * rank if rank != 1 else torch.empty(0)
    if shard.numel() > 0:  # BUG
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=3))  # WAITS
    return shard.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
