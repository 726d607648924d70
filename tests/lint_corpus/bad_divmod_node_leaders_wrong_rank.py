# The same groups with the leaders' all-reduce under the wrong local rank: the ranks with local rank 1 call it on
# a group whose members are the local-rank-0 ranks, so torch.distributed warns and returns at once on each of them
# (they are not members) and the members never call it: no count is ever summed. Modelled on torch's
# `new_subgroups` docs and Megatron-LM's parallel_state.initialize_model_parallel leaders' groups, written here.
# expect: 19 non-member dist.all_reduce
import torch
import torch.distributed as dist

GPUS_PER_NODE = 2


def sync_node_counts(count):
    rank, world = dist.get_rank(), dist.get_world_size()
    node, local_rank = divmod(rank, GPUS_PER_NODE)
    node_group, _ = dist.new_subgroups(group_size=GPUS_PER_NODE)
    leaders = dist.new_group(list(range(0, world, GPUS_PER_NODE)))
    total = torch.tensor([float(count)])
    if local_rank == 1:
        dist.all_reduce(total, group=leaders)
    dist.barrier(group=node_group)
    return total
