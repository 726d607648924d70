# The same sharded parameters re-synchronised the way torch's ZeroRedundancyOptimizer does
# (torch/distributed/optim/zero_redundancy_optimizer.py, `_sync_params`): every rank makes the broadcast of every
# parameter, from the rank that owns it; a comprehension filter that does not depend on the rank (skip frozen
# parameters) is fine. Written here.
# expect: none
import torch.distributed as dist


def publish(p, src):
    dist.broadcast(p.data, src=src)
    return p


def sync_params(params):
    world = dist.get_world_size()
    return [publish(p, i % world) for i, p in enumerate(params) if p.requires_grad]
