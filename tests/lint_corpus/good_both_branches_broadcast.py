# Both branches call the same collectives in the same order.
# expect: none
import torch
import torch.distributed as dist


def share_seed(rank):
    seed = torch.zeros(1, dtype=torch.long)
    if rank == 0:
        seed.fill_(torch.randint(0, 2**31, (1,)).item())
        dist.broadcast(seed, src=0)
        dist.barrier()
    else:
        dist.broadcast(seed, src=0)
        dist.barrier()
    return int(seed.item())
