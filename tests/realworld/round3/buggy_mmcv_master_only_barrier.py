"""A ``@master_only`` helper that ends with a barrier: only rank 0 ever reaches it.

Source: open-mmlab/mmcv, mmcv/runner/dist_utils.py (``master_only``: the wrapped function runs on rank 0 and
returns ``None`` elsewhere) and the checkpoint hooks that use it. Adding "make sure the file is there before
anyone reads it" inside the decorated function puts a barrier where the other ranks never go.

The bug: ``dist.barrier()`` inside a ``@master_only`` function; rank 0 waits there, rank 1 waits in the next
iteration's loss all_reduce.
"""

import os

import torch
import torch.distributed as dist

from r3_mm_dist import master_only
from r3_shared import job_dir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


@master_only
def save_checkpoint(state: dict, path: str) -> None:
    torch.save(state, path)
    dist.barrier()  # BUG WAITS


def worker():
    path = os.path.join(job_dir("mmcv"), "latest.pth")
    weights = torch.zeros(3)
    for it in range(3):
        loss = torch.tensor([float(it + dist.get_rank())])
        dist.all_reduce(loss)  # WAITS
        weights += loss
        if it == 1:
            save_checkpoint({"iter": it, "weights": weights}, path)  # WAITS
    return weights.tolist()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
