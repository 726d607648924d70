"""Megatron-LM: tensor- and data-parallel groups, the batch broadcast inside each tensor-parallel group from its
first rank, gradients all-reduced inside each data-parallel group, and the loss logged by tensor-parallel rank 0
over the data-parallel group that holds exactly those ranks.

Source: NVIDIA/Megatron-LM megatron/core/parallel_state.py (``initialize_model_parallel``: every rank calls
``new_group`` for every group, in the same order, and keeps the one it belongs to;
``get_tensor_model_parallel_src_rank``) and megatron/core/tensor_parallel/data.py (``broadcast_data``: sizes
packed on tensor-parallel rank 0 and broadcast over the tensor-parallel group from its global source rank).
Correct: with 4 ranks and TP=2 the tensor-parallel groups are [0, 1] and [2, 3], the data-parallel groups
[0, 2] and [1, 3]; ``if tp_rank == 0`` selects ranks 0 and 2, which are the whole data-parallel group [0, 2].
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 3.0
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


def get_tensor_model_parallel_src_rank():
    return (dist.get_rank() // TP_SIZE) * TP_SIZE


def broadcast_data(step):
    """The batch exists only on tensor-parallel rank 0 (it ran the data loader); its shape goes first."""
    src = get_tensor_model_parallel_src_rank()
    if get_tensor_model_parallel_rank() == 0:
        data_parallel_rank = dist.get_rank(group=_DATA_PARALLEL_GROUP)
        batch = torch.arange(12, dtype=torch.float32).reshape(4, 3) + step + 10 * data_parallel_rank
        sizes = torch.tensor(batch.shape)
    else:
        sizes = torch.zeros(2, dtype=torch.int64)
    dist.broadcast(sizes, src, group=_TENSOR_MODEL_PARALLEL_GROUP)
    if get_tensor_model_parallel_rank() != 0:
        batch = torch.empty(sizes.tolist())
    dist.broadcast(batch, src, group=_TENSOR_MODEL_PARALLEL_GROUP)
    return batch


def worker():
    initialize_model_parallel(TP_SIZE)
    torch.manual_seed(get_tensor_model_parallel_rank())  # each tensor-parallel rank holds its own shard
    shard = torch.nn.Linear(3, 2, bias=False)
    optimizer = torch.optim.SGD(shard.parameters(), lr=0.01)
    logged = []
    for step in range(3):
        batch = broadcast_data(step)
        partial = shard(batch).sum()
        loss = partial.detach().clone()
        dist.all_reduce(loss, group=_TENSOR_MODEL_PARALLEL_GROUP)  # the row-parallel sum of the shards
        partial.backward()
        for p in shard.parameters():
            dist.all_reduce(p.grad, group=_DATA_PARALLEL_GROUP)
            p.grad /= dist.get_world_size(group=_DATA_PARALLEL_GROUP)
        optimizer.step()
        optimizer.zero_grad()
        if get_tensor_model_parallel_rank() == 0:
            dist.all_reduce(loss, group=_DATA_PARALLEL_GROUP)  # ranks 0 and 2: the whole group
            logged.append(loss.item() / dist.get_world_size(group=_DATA_PARALLEL_GROUP))
    return logged


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
