# A DistributedSampler subclass of the file that wraps another sampler and takes the rank to pick each
# rank's share: like DistributedSampler itself it gives every rank the same number of items, so the training
# loop over it is not a rank-dependent loop.
# Models catalyst's DistributedSamplerWrapper(DistributedSampler) (catalyst/data/sampler.py), written here.
# expect: none
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler


class DistributedSamplerWrapper(DistributedSampler):
    def __init__(self, sampler, num_replicas=None, rank=None, shuffle=True):
        super().__init__(list(sampler), num_replicas=num_replicas, rank=rank, shuffle=shuffle)
        self.sampler = sampler

    def __iter__(self):
        indices = list(self.sampler)
        return iter([indices[i] for i in super().__iter__()])


def train(sampler, data):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(4, 1))
    for index in DistributedSamplerWrapper(sampler, num_replicas=world, rank=rank):
        x, y = data[index]
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
