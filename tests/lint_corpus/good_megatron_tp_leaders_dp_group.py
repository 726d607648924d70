# Tensor-parallel groups of consecutive ranks, data-parallel groups of ranks with the same tensor-parallel
# rank (every rank creates every group, in the same order). Only tensor-parallel rank 0 all-reduces a
# statistic, on its data-parallel group: that group holds exactly the ranks with tp_rank == 0, so every
# member of it makes the call.
# Models Megatron-LM's initialize_model_parallel (NVIDIA/Megatron-LM megatron/core/parallel_state.py) and
# its "only tensor-parallel rank 0 reduces" habit, written here.
# expect: none
import torch
import torch.distributed as dist


def init_groups(tp_size):
    rank, world = dist.get_rank(), dist.get_world_size()
    tp_group = dp_group = None
    for i in range(world // tp_size):
        ranks = list(range(i * tp_size, (i + 1) * tp_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            tp_group = group
    for j in range(tp_size):
        ranks = list(range(j, world, tp_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            dp_group = group
    return tp_group, dp_group


def log_grad_norm(tp_size, grad_norm):
    tp_group, dp_group = init_groups(tp_size)
    tp_rank = dist.get_rank() % tp_size
    if tp_rank == 0:
        dist.all_reduce(grad_norm, group=dp_group)
    dist.all_reduce(grad_norm, group=tp_group)
