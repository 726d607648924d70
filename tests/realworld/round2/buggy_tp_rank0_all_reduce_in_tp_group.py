"""Megatron-style logging: the loss all-reduced over the *tensor*-parallel group inside ``if tp_rank == 0``,
where only the data-parallel group of tensor-parallel rank 0 would have been right.

Source: NVIDIA/Megatron-LM megatron/core/parallel_state.py (tensor- and data-parallel groups) and
megatron/training/training.py (losses reported by one rank per model-parallel group; averaged over the
data-parallel group). A collective of a subgroup under a condition is right only when the condition selects
the whole subgroup: ``tp_rank == 0`` selects one of the two members of each tensor-parallel group.
Bug: ranks 0 and 2 all-reduce over [0, 1] and [2, 3] alone (BUG, WAITS); ranks 1 and 3 are not there.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 2.0
TP_SIZE = 2

_TENSOR_MODEL_PARALLEL_GROUP = None
_DATA_PARALLEL_GROUP = None


def initialize_model_parallel(tensor_model_parallel_size):
    global _TENSOR_MODEL_PARALLEL_GROUP, _DATA_PARALLEL_GROUP
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for i in range(world_size // tensor_model_parallel_size):
        ranks = list(range(i * tensor_model_parallel_size, (i + 1) * tensor_model_parallel_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            _TENSOR_MODEL_PARALLEL_GROUP = group
    for j in range(tensor_model_parallel_size):
        ranks = list(range(j, world_size, tensor_model_parallel_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            _DATA_PARALLEL_GROUP = group


def report_loss(loss):
    if dist.get_rank(group=_TENSOR_MODEL_PARALLEL_GROUP) == 0:
        dist.all_reduce(loss, group=_TENSOR_MODEL_PARALLEL_GROUP)  # BUG WAITS
        print(f"loss {loss.item():.4f}")


def worker():
    initialize_model_parallel(TP_SIZE)
    shard = torch.nn.Linear(3, 2, bias=False)
    for step in range(2):
        loss = shard(torch.ones(4, 3) * step).sum()
        loss.backward()
        for p in shard.parameters():
            dist.all_reduce(p.grad, group=_DATA_PARALLEL_GROUP)
        report_loss(loss.detach())  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
