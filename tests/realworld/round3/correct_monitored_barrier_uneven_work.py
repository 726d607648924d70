"""Ranks finish different amounts of work, then every rank enters a monitored barrier that would name a late rank.

Source: pytorch/pytorch, torch/distributed/distributed_c10d.py (``monitored_barrier`` and its docstring: gloo
only, rank 0 checks every other rank in, ``wait_all_ranks=True`` collects all missing ranks), used the way the
docs suggest for debugging a hang: a monitored barrier after a phase whose length differs per rank.
"""

import datetime
import time

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 5


def preprocess_shard(rank: int) -> torch.Tensor:
    time.sleep(0.3 * rank)  # shards of different sizes
    return torch.ones(2) * rank


def worker():
    rank = dist.get_rank()
    shard = preprocess_shard(rank)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=4), wait_all_ranks=True)
    dist.all_reduce(shard)
    return shard.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
