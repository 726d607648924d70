# One subgroup per node (new_subgroups cuts the world into blocks of local_world_size ranks); only the
# first node reduces its local statistics, on its own subgroup, which holds exactly the ranks of node 0.
# Models the new_subgroups docstring example (pytorch/pytorch torch/distributed/distributed_c10d.py:
# cur_subgroup, subgroups = dist.new_subgroups(); dist.all_reduce(tensor, group=cur_subgroup)), written here.
# expect: none
import torch
import torch.distributed as dist


def node_stats(local_world_size):
    node_group, _ = dist.new_subgroups(group_size=local_world_size)
    node_rank = dist.get_rank() // local_world_size
    stats = torch.ones(1)
    if node_rank == 0:
        dist.all_reduce(stats, group=node_group)
    return stats
