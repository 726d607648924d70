# The fixed twin of bad_broadcast_node_master_world_group: each node's first rank broadcasts within its own
# node's group (new_subgroups), with its global rank as `src`, and a world-wide broadcast from a root every rank
# computes alike (rank 0, a loop's round, a root handed in). Modelled on ModelTC/LightLLM PR #986 (the fix) and
# torch's new_subgroups docs. Written here.
# expect: none
import torch
import torch.distributed as dist

GPUS_PER_NODE = 8


def poll_node_queue(queue, node_group):
    rank = dist.get_rank()
    node_master = rank // GPUS_PER_NODE * GPUS_PER_NODE
    flag = torch.zeros(1, dtype=torch.int32)
    if rank == node_master:
        flag.fill_(int(bool(queue)))
    dist.broadcast(flag, src=node_master, group=node_group)
    return bool(flag.item())


def share_everyone(values, root):
    world = dist.get_world_size()
    for src in range(world):
        dist.broadcast(values[src], src=src)
    last = world - 1
    dist.broadcast(values[0], src=last)
    dist.broadcast(values[1], src=root)
    return values
