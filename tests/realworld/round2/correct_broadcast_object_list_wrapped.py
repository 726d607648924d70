"""Resuming a run: rank 0 lists the checkpoint shards and broadcasts them as *one* object, so every rank
passes a list of the same length whatever the number of shards.

Source: the ``torch.distributed.broadcast_object_list`` docstring ("each rank must provide lists of equal
sizes") and open-mmlab/mmrazor PR #153 (a ``broadcast_object_list`` wrapper whose receivers pass a list of
the sender's length); here the rank-dependent length is kept *inside* one object, ``[shards]``, the usual
fix when the receivers cannot know the length.
Correct: ``[shards]`` on rank 0 and ``[None]`` elsewhere have the same length; the pickled sizes differ,
which ``broadcast_object_list`` handles.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0


def find_checkpoint_shards(folder):
    for i in range(3):
        open(os.path.join(folder, f"shard-{i:05d}.pt"), "wb").close()
    return sorted(f for f in os.listdir(folder) if f.startswith("shard-"))


def resume_shards():
    if dist.get_rank() == 0:
        with tempfile.TemporaryDirectory() as folder:
            payload = [find_checkpoint_shards(folder)]
    else:
        payload = [None]
    dist.broadcast_object_list(payload, src=0)
    return payload[0]


def worker():
    shards = resume_shards()
    assert len(shards) == 3
    dist.barrier()
    return shards


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
