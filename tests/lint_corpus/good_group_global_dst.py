# The same hierarchical all-reduce with the node leader named by its global rank (get_global_rank), and a
# broadcast on a group built from a literal list that holds global rank 0.
# Models the hierarchical allreduce of Horovod (horovod/horovod) and radixark/miles PR #833
# (dist.get_global_rank(group, 0)), written here.
# expect: none
import torch.distributed as dist

FIRST_PAIR = dist.new_group([0, 1])


def hierarchical_all_reduce(tensor, node_group, leaders_group):
    leader = dist.get_global_rank(node_group, 0)
    dist.reduce(tensor, dst=leader, group=node_group)
    if dist.get_rank(node_group) == 0:
        dist.all_reduce(tensor, group=leaders_group)
    dist.broadcast(tensor, src=leader, group=node_group)
    return tensor


def all_reduce_by_node(tensor, gpus_per_node):
    node_group, _ = dist.new_subgroups(gpus_per_node)
    leaders_group = dist.new_group(list(range(0, dist.get_world_size(), gpus_per_node)))
    return hierarchical_all_reduce(tensor, node_group, leaders_group)


def share_in_first_pair(tensor):
    if dist.get_rank() in (0, 1):
        if dist.get_rank(FIRST_PAIR) == 0:
            tensor += 1
        dist.broadcast(tensor, src=0, group=FIRST_PAIR)
    return tensor
