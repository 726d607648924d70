# A sampler class of the file, not derived from DistributedSampler, that hands each rank the items
# `rank::world` of a list whose length it does not pad: ranks get different numbers of items, and the
# DDP forward and backward of the extra step wait. (The same loop over a DistributedSampler subclass is
# quiet: good_distributed_sampler_subclass.py.)
# Models catalyst's DistributedSamplerWrapper (catalyst/data/sampler.py) without its base class, written here.
# expect: 25 rank-dependent-loop model() (DDP forward)
# expect: 26 rank-dependent-loop loss.backward() (DDP backward)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class ShardSampler:
    def __init__(self, sampler, num_replicas, rank):
        self.indices = list(sampler)[rank::num_replicas]

    def __iter__(self):
        return iter(self.indices)


def train(sampler, data):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(4, 1))
    for index in ShardSampler(sampler, world, rank):
        loss = (model(data[index][0]) - data[index][1]).pow(2).mean()
        loss.backward()
