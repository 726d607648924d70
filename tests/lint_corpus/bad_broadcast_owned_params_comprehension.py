# Parameters sharded over the ranks (rank r owns every world-th one) re-synchronised after the step with a
# comprehension that broadcasts only the parameters this rank owns: each broadcast is made by its owner alone,
# while torch's ZeroRedundancyOptimizer (torch/distributed/optim/zero_redundancy_optimizer.py, `_sync_params`)
# has every rank make the broadcast of every parameter, from its owner. Written here.
# expect: 16 hidden-collective publish -> dist.broadcast
import torch.distributed as dist


def publish(p, src):
    dist.broadcast(p.data, src=src)
    return p


def sync_params(params):
    rank, world = dist.get_rank(), dist.get_world_size()
    return [publish(p, rank) for i, p in enumerate(params) if i % world == rank]
