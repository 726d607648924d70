# Hierarchical all-reduce: reduce onto each node's leader, all-reduce among the leaders, broadcast back in
# the node. The reduce and the broadcast name the leader by its rank within the node group (0), but
# torch.distributed takes dst/src as global ranks even with group=: on node 1 global rank 0 is not a member.
# Models the hierarchical allreduce of Horovod (horovod/horovod, HOROVOD_HIERARCHICAL_ALLREDUCE) over groups
# made by torch.distributed.new_subgroups (pytorch docs, "Groups"), written here.
# expect: 12 group-rank dist.reduce
# expect: 15 group-rank dist.broadcast
import torch.distributed as dist


def hierarchical_all_reduce(tensor, node_group, leaders_group):
    dist.reduce(tensor, dst=0, group=node_group)
    if dist.get_rank(node_group) == 0:
        dist.all_reduce(tensor, group=leaders_group)
    dist.broadcast(tensor, src=0, group=node_group)
    return tensor


def all_reduce_by_node(tensor, gpus_per_node):
    node_group, _ = dist.new_subgroups(gpus_per_node)
    leaders_group = dist.new_group(list(range(0, dist.get_world_size(), gpus_per_node)))
    return hierarchical_all_reduce(tensor, node_group, leaders_group)
