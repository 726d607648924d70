# Evaluation losses gathered to rank 0 with the receive list built on every rank "to be safe":
# torch.distributed checks gather_list before communicating and raises on every rank but dst, and rank 0
# waits in the gather. Models the mistake pytorch/pytorch PR #161467 documents (gather_list must be None off
# dst, prompted by KellerJordan/Muon issue #46) and the scatter_list question of pytorch/pytorch issue
# #25463, written here.
# expect: 14 root-only-list dist.gather
# expect: 19 root-only-list dist.scatter
import torch
import torch.distributed as dist


def gather_losses(losses):
    received = [torch.empty_like(losses) for _ in range(dist.get_world_size())]
    dist.gather(losses, received, dst=0)
    return torch.cat(received)


def scatter_shards(shard, full):
    dist.scatter(shard, scatter_list=list(full.chunk(dist.get_world_size())), src=0)
    return shard
