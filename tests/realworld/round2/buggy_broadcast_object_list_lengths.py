"""Resuming a run: rank 0 lists the checkpoint shards and broadcasts the list with ``broadcast_object_list``;
the other ranks pass a one-element placeholder.

Source: the ``torch.distributed.broadcast_object_list`` docstring and example ("object_list ... Each object
must be picklable. Only objects on the src rank will be broadcast, but each rank must provide lists of equal
sizes"), the resume helpers built on it (e.g. open-mmlab/mmrazor PR #153's wrapper, whose example passes
``[None, None, None]`` on the receivers), and Ascend/pytorch issue #58 (a hang in
``broadcast_object_list``, its code commented "the list length must be the same on every process").
Bug: rank 0's list has three entries, the others' one (BUG); the sizes tensor of the first internal
broadcast then differs in length between ranks (WAITS on the call).
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def find_checkpoint_shards(folder):
    for i in range(3):
        open(os.path.join(folder, f"shard-{i:05d}.pt"), "wb").close()
    return sorted(f for f in os.listdir(folder) if f.startswith("shard-"))


def resume_shards():
    if dist.get_rank() == 0:
        with tempfile.TemporaryDirectory() as folder:
            shards = find_checkpoint_shards(folder)
    else:
        shards = [None]  # BUG
    dist.broadcast_object_list(shards, src=0)  # WAITS
    return shards


def worker():
    shards = resume_shards()  # WAITS
    model = torch.nn.Linear(2, 2)
    dist.barrier()
    return shards


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
