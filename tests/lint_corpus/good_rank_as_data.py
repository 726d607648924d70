# get_rank() used as data, and src/dst arguments that name ranks.
# expect: none
import torch
import torch.distributed as dist


def check_ranks():
    rank = dist.get_rank()
    t = torch.tensor([dist.get_rank()], dtype=torch.float32)
    dist.all_reduce(t)
    expected = sum(range(dist.get_world_size()))
    assert t.item() == expected
    seed = torch.tensor([rank * 1000])
    dist.broadcast(seed, src=0)
    out = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(out, torch.tensor([float(rank)]))
    dist.reduce(t, dst=0)
    return seed
