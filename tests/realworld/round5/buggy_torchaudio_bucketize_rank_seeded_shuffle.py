"""HuBERT-style length-bucketed batches under DDP: each rank shuffles its buckets with its own random state,
so the token-budget packing gives the ranks different numbers of batches.

Source: pytorch/audio PR #3068 ("Fix DDP training in HuBERT recipes"): in examples/hubert/dataset/
hubert_dataset.py the ``BucketizeBatchSampler`` shuffled the samples of each bucket with the process's random
state and then packed them into batches of at most ``max_token_count`` tokens; wrapped in the recipe's
``DistributedBatchSampler`` (PR #2299), "the ``BucketizeBatchSampler`` may return different iter_list in
different node if ``shuffle`` is ``True``, which will cause DDP training hang forever". The fix seeds a
generator of the sampler's own. Here the per-rank random state comes from seeding each process with
``seed + rank`` (as e.g. Intellindust-AI-Lab/DEIMv2's ``setup_seed`` does). 14 utterances of 3-14 frames,
2 length buckets, at most 24 frames per batch, a tiny mean-pooled regressor in DDP.

The bug: the shuffle uses the rank's own random state: rank 0 packs 7 batches and rank 1 6, so rank 0 trains
on 4 and rank 1 on 3, and rank 0's last backward waits for a gradient all-reduce.
"""

import math

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
LENGTHS = [8, 11, 6, 10, 3, 13, 14, 10, 7, 14, 13, 3, 11, 4]
SEED = 0


class BucketizeBatchSampler:
    def __init__(self, lengths, num_buckets, max_token_count, shuffle=True):
        self.lengths = lengths
        self.max_token_count = max_token_count
        self.shuffle = shuffle
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
                bucket = [bucket[i] for i in torch.randperm(len(bucket)).tolist()]  # BUG
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
    """Hands each rank every ``num_replicas``-th batch of the wrapped sampler's list, padded to a multiple."""

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
    steps = 0
    for indices in sampler:
        frames, mask = collate(indices)
        loss = model(frames, mask).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        steps += 1
    return steps


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
