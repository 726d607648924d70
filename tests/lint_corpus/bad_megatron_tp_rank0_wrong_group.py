# Only tensor-parallel rank 0 reduces, but on the tensor-parallel group (whose other members never call)
# and on the default group: both are collectives some members of the group never reach.
# The same Megatron-LM layout as good_megatron_tp_leaders_dp_group.py (NVIDIA/Megatron-LM
# megatron/core/parallel_state.py), written here.
# expect: 24 branch dist.all_reduce
# expect: 25 branch dist.all_reduce
import torch.distributed as dist


def init_groups(tp_size):
    rank, world = dist.get_rank(), dist.get_world_size()
    tp_group = None
    for i in range(world // tp_size):
        ranks = list(range(i * tp_size, (i + 1) * tp_size))
        group = dist.new_group(ranks)
        if rank in ranks:
            tp_group = group
    return tp_group


def log_grad_norm(tp_size, grad_norm):
    tp_group = init_groups(tp_size)
    if dist.get_rank() % tp_size == 0:
        dist.all_reduce(grad_norm, group=tp_group)
        dist.all_reduce(grad_norm)
