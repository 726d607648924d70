# A per-rank block whose length depends on the rank: the trip count differs, so it is still flagged.
# expect: 10 rank-dependent-loop dist.all_reduce
import torch
import torch.distributed as dist


def blocks(data, n):
    rank = dist.get_rank()
    for i in range(rank * n, rank * n + n + rank):
        dist.all_reduce(data[i])
