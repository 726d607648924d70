# Each rank prepares a different tensor, then all take part in the same
# collectives, whatever branch they took.
# expect: none
import torch
import torch.distributed as dist


def exchange(rank):
    if rank == 0:
        t = torch.arange(4.0)
        dist.broadcast(t, src=0)
    elif rank == 1:
        t = torch.zeros(4)
        dist.broadcast(t, src=0)
    else:
        t = torch.empty(4)
        dist.broadcast(t, src=0)
    dist.all_reduce(t)
    return t
