# Every rank broadcasting in turn, as the torch tutorial's "all-gather by broadcasts" or a ring of roots does:
# in round `src`, the rank whose rank is `src` sends its own tensor (`src=rank` under `if src == rank`) and the
# others receive from `src`; and a seed shared from rank 0 (`src=0`). Modelled on torch's distributed tutorial
# (pytorch/tutorials intermediate_source/dist_tuto.rst) and torch's broadcast docs, written here.
# expect: none
import torch
import torch.distributed as dist


def gather_by_broadcast(mine):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = []
    for src in range(world):
        if src == rank:
            dist.broadcast(mine, src=rank)
            out.append(mine.clone())
        else:
            buf = torch.empty_like(mine)
            dist.broadcast(buf, src=src)
            out.append(buf)
    seed = torch.randint(0, 2**31, (1,))
    dist.broadcast(seed, src=0)
    return out, seed
