# A training loop written with `next()` on an iterator of a DistributedSampler-sharded loader, leaving on
# `StopIteration`: the `break` in the handler is the end of the iterator, which comes after as many batches on
# every rank as a `for` over the same loader would. Modelled on the `while True: try: batch = next(it) except
# StopIteration: ...` loops that training scripts use to drive several loaders by hand, over
# torch.utils.data.DistributedSampler (torch/utils/data/distributed.py: equal shares), written here.
# expect: none
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train(dataset):
    loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset))
    it = iter(loader)
    while True:
        try:
            x = next(it)
        except StopIteration:
            break
        loss = x.float().sum()
        dist.all_reduce(loss)
