# The bucketing sampler of jaywalnut310/vits data_utils.py `DistributedBucketSampler`, in outline: each bucket is
# padded with its own samples up to a multiple of (replicas x batch size) before rank r takes every replicas-th
# sample from r, so every rank gets as many batches and the DDP steps pair up. The loop reaches the sampler
# through a parameter. Written here.
# expect: none
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class PaddedBucketSampler:
    def __init__(self, buckets, batch_size, num_replicas, rank):
        self.buckets, self.batch_size = buckets, batch_size
        self.num_replicas, self.rank = num_replicas, rank

    def __iter__(self):
        batches = []
        total = self.num_replicas * self.batch_size
        for ids in self.buckets:
            rem = (total - len(ids) % total) % total
            ids = ids + ids * (rem // len(ids)) + ids[: rem % len(ids)]
            mine = ids[self.rank :: self.num_replicas]
            batches += [mine[i : i + self.batch_size] for i in range(0, len(mine), self.batch_size)]
        return iter(batches)


def epoch(model, sampler, data):
    for batch in sampler:
        model(data[batch]).sum().backward()


def main(data, buckets):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(4, 1))
    sampler = PaddedBucketSampler(buckets, 2, world, rank)
    epoch(model, sampler, data)
