"""Only the members of a tensor-parallel pair call ``new_group`` for it.

Source: pytorch/pytorch, torch/distributed/distributed_c10d.py, the ``new_group`` docstring: "This function
requires that all processes in the main group (i.e. all processes that are part of the distributed job) enter
this function, even if they are not going to be members of the group". A common slip when porting
Megatron-style group setup: ``if rank in ranks: group = dist.new_group(ranks)``.

The bug: ranks 0 and 1 create their pair's group and wait in ``new_group`` for ranks 2 and 3, which skip it
and wait in the next world barrier.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 4


def build_tensor_parallel_group(tp_size: int):
    rank = dist.get_rank()
    my_group = None
    for start in range(0, dist.get_world_size(), tp_size):
        ranks = list(range(start, start + tp_size))
        if rank in ranks:  # BUG
            my_group = dist.new_group(ranks)  # WAITS
    return my_group


def worker():
    if dist.get_rank() < 2:
        tp_group = build_tensor_parallel_group(2)  # WAITS
    else:
        tp_group = None  # ranks 2 and 3 would build theirs later
    dist.barrier()  # WAITS
    x = torch.ones(1)
    dist.all_reduce(x, group=tp_group)
    return x.item()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
