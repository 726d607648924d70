"""HuBERT-style length-bucketed batches under DDP, the buckets shuffled with a generator of the sampler's own,
seeded the same on every rank.

Source: pytorch/audio PR #3068 ("Fix DDP training in HuBERT recipes"): ``BucketizeBatchSampler`` got a
``torch.Generator`` seeded with a fixed seed (``self.g.manual_seed(1337)`` in the PR, a ``seed`` argument
after review) for its bucket shuffle, so every rank builds the same list of batches before the recipe's
``DistributedBatchSampler`` (PR #2299) hands each rank every other one. Each process is still seeded with
``seed + rank`` for everything else (as Intellindust-AI-Lab/DEIMv2's ``setup_seed`` does). 14 utterances of
3-14 frames, 2 length buckets, at most 24 frames per batch, a tiny mean-pooled regressor in DDP.

Correct: the packing is the same on every rank, so both ranks get the same number of batches and every
backward's gradient all-reduce has a partner; both ranks end with equal weights.
"""

import math

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
LENGTHS = [8, 11, 6, 10, 3, 13, 14, 10, 7, 14, 13, 3, 11, 4]
SEED = 0


class BucketizeBatchSampler:
    def __init__(self, lengths, num_buckets, max_token_count, shuffle=True, seed=1337):
        self.lengths = lengths
        self.max_token_count = max_token_count
        self.shuffle = shuffle
        self.generator = torch.Generator().manual_seed(seed)
        low, high = min(lengths), max(lengths)
        width = (high - low) // num_buckets + 1
        self.buckets = {}
        for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
            self.buckets.setdefault((lengths[index] - low) // width, []).append(index)
        self.iter_list = self._update_iter_list()

    def _update_iter_list(self):
        batches, batch, total = [], [], 0
        for key in sorted(self.buckets):
            bucket = self.buckets[key]
            if self.shuffle:
                bucket = [bucket[i] for i in torch.randperm(len(bucket), generator=self.generator).tolist()]
            for index in bucket:
                if batch and total + self.lengths[index] > self.max_token_count:
                    batches.append(batch)
                    batch, total = [], 0
                batch.append(index)
                total += self.lengths[index]
        if batch:
            batches.append(batch)
        return batches


class DistributedBatchSampler(DistributedSampler):
    def __init__(self, batch_sampler, num_replicas, rank, shuffle=True, seed=0):
        self.batch_sampler = batch_sampler
        self.num_replicas, self.rank, self.shuffle, self.seed, self.epoch = num_replicas, rank, shuffle, seed, 0
        self.num_samples = math.ceil(len(batch_sampler.iter_list) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        batches = self.batch_sampler.iter_list
        if self.shuffle:
            generator = torch.Generator().manual_seed(self.seed + self.epoch)
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        batches = batches + batches[: self.total_size - len(batches)]
        return iter(batches[self.rank : self.total_size : self.num_replicas])

    def __len__(self):
        return self.num_samples


def utterance(index):
    return torch.randn(LENGTHS[index], 4, generator=torch.Generator().manual_seed(index))


def collate(indices):
    frames = torch.nn.utils.rnn.pad_sequence([utterance(i) for i in indices], batch_first=True)
    mask = torch.zeros(frames.shape[:2])
    for row, i in enumerate(indices):
        mask[row, : LENGTHS[i]] = 1
    return frames, mask


class PooledRegressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 1)

    def forward(self, frames, mask):
        per_frame = self.proj(frames).squeeze(-1) * mask
        return per_frame.sum(dim=1) / mask.sum(dim=1)


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(SEED + rank)
    sampler = DistributedBatchSampler(BucketizeBatchSampler(LENGTHS, 2, 24), world, rank, seed=SEED)
    model = DDP(PooledRegressor())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for indices in sampler:
        frames, mask = collate(indices)
        loss = model(frames, mask).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = weights.clone()
    dist.broadcast(reference, src=0)
    assert torch.allclose(weights, reference), (weights, reference)
    return len(sampler)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
