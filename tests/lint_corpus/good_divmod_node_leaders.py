# Node-local and cross-node groups from a rank split with `divmod` (node, local rank): every rank creates the
# leaders' group, only the node leaders (local rank 0) all-reduce on it, and every rank then barriers on its own
# node's group. Modelled on torch's `new_subgroups` docs (one subgroup per machine) and the leaders' groups of
# Megatron-LM's parallel_state.initialize_model_parallel, written here.
# expect: none
import torch
import torch.distributed as dist

GPUS_PER_NODE = 2


def sync_node_counts(count):
    rank, world = dist.get_rank(), dist.get_world_size()
    node, local_rank = divmod(rank, GPUS_PER_NODE)
    node_group, _ = dist.new_subgroups(group_size=GPUS_PER_NODE)
    leaders = dist.new_group(list(range(0, world, GPUS_PER_NODE)))
    total = torch.tensor([float(count)])
    if local_rank == 0:
        dist.all_reduce(total, group=leaders)
    dist.barrier(group=node_group)
    return total
