"""Megatron-style tensor-parallel broadcast with the source given as the group-local rank 0.

Source: NVIDIA/Megatron-LM megatron/core/tensor_parallel/data.py (``broadcast_data`` broadcasts from
``get_tensor_model_parallel_src_rank()``, a *global* rank, because ``torch.distributed.broadcast``'s ``src``
is a rank of the default group "regardless of group argument", as its docstring says) and
megatron/core/parallel_state.py for the groups. Code ported from it often writes ``src=0``: right for the
group [0, 1], wrong for [2, 3].
Bug: on ranks 2 and 3 the broadcast raises at once ("global rank 0 is not part of group"), before any
message (BUG); ranks 0 and 1 pass their broadcast and wait for ranks 2 and 3 in the data-parallel gradient
all_reduce (WAITS).
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


def get_tensor_model_parallel_rank():
    return dist.get_rank(group=_TENSOR_MODEL_PARALLEL_GROUP)


def broadcast_data(step):
    if get_tensor_model_parallel_rank() == 0:
        batch = torch.arange(12, dtype=torch.float32).reshape(4, 3) + step
    else:
        batch = torch.empty(4, 3)
    dist.broadcast(batch, 0, group=_TENSOR_MODEL_PARALLEL_GROUP)  # BUG
    return batch


def reduce_gradients(module):
    for p in module.parameters():
        dist.all_reduce(p.grad, group=_DATA_PARALLEL_GROUP)  # WAITS
        p.grad /= dist.get_world_size(group=_DATA_PARALLEL_GROUP)


def worker():
    initialize_model_parallel(TP_SIZE)
    torch.manual_seed(get_tensor_model_parallel_rank())
    shard = torch.nn.Linear(3, 2, bias=False)
    optimizer = torch.optim.SGD(shard.parameters(), lr=0.01)
    for step in range(3):
        batch = broadcast_data(step)
        shard(batch).sum().backward()
        reduce_gradients(shard)  # WAITS
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
