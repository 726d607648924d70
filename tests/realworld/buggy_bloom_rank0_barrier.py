"""BLOOM inference script: rank 0 downloads the weights and calls a barrier inside its own branch; the
other ranks' single barrier pairs with it, so rank 0 is left alone at the later shared barrier.

Source: huggingface/transformers-bloom-inference PR #40 ("fix: deadlock in `bloom-ds-inference.py`"):
"rank 0 calls ``dist.barrier()`` while other processes don't"; fixed in commit a9bc5fd.
Bug: the barrier inside ``if rank == 0`` (BUG) silently pairs with the others' barrier before loading
(the file exists by then, so they load it and finish); rank 0 then waits alone at that later barrier (WAITS).
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def download_weights(folder):
    path = os.path.join(folder, "weights.pt")
    torch.save(torch.ones(4, 4), path)
    return path


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    if rank == 0:
        download_weights(box[0])
        dist.barrier()  # BUG
    dist.barrier()  # WAITS
    weights = torch.load(os.path.join(box[0], "weights.pt"))
    return weights.sum().item()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
