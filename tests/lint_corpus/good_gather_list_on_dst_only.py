# The same gather and scatter with the list on the root only (gather_list/scatter_list None elsewhere), as
# torch.distributed's docstrings ask (pytorch/pytorch PR #161467), and a gather_object whose list is made under
# the rank test, written here.
# expect: none
import torch
import torch.distributed as dist


def gather_losses(losses):
    rank, world = dist.get_rank(), dist.get_world_size()
    received = [torch.empty_like(losses) for _ in range(world)] if rank == 0 else None
    dist.gather(losses, received, dst=0)
    return torch.cat(received) if rank == 0 else None


def scatter_shards(shard, full):
    if dist.get_rank() == 0:
        dist.scatter(shard, scatter_list=list(full.chunk(dist.get_world_size())), src=0)
    else:
        dist.scatter(shard, src=0)
    return shard


def gather_names(name):
    names = None
    if dist.get_rank() == 0:
        names = [None] * dist.get_world_size()
    dist.gather_object(name, names, dst=0)
    return names
