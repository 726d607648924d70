"""Per-class counts summed across ranks with ``all_reduce``, but each rank sizes its tensor by the classes
it happened to see (``torch.bincount`` without ``minlength``): the ranks pass different sizes.

Source: pytorch/pytorch torch/distributed/distributed_c10d.py ``all_reduce`` (every rank must pass a tensor
of the same size) and this lab's DESIGN.md measurement (different sizes: a hang then an error, a hard abort,
or one rank returning unreduced data with no error while the other times out); ``torch.bincount`` returns
``max(input) + 1`` bins unless ``minlength`` is given (torch docs).
Bug: the per-rank size (BUG); the all_reduce (WAITS) fails or returns wrong counts.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    rank = dist.get_rank()
    labels = torch.tensor([0, 1, 1, 2, 3]) if rank == 0 else torch.tensor([0, 0, 1])
    counts = torch.bincount(labels)  # BUG
    dist.all_reduce(counts)  # WAITS
    return counts.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
