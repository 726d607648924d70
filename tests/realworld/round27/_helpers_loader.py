"""Helper module of round 27 (not an item): a data loader shard that synchronises its shuffling seed from rank 0
each time an iteration over it starts.

Written after reading accelerate ``data_loader.py`` (``DataLoaderShard.__iter__`` calls
``synchronize_rng_states(self.rng_types, self.synchronized_generator)`` before the first batch, and
``utils/random.py`` ``synchronize_rng_state`` broadcasts the generator state from process 0 with a collective)
and torch's ``DistributedSampler`` (``set_epoch``, ``drop_last``, padding). Nothing here is copied.

``SyncedShardLoader(samples, batch_size)`` iterates the rank's own ``samples`` (a list of (x, y) pairs) in batches,
``drop_last=True``; at the start of every pass it broadcasts rank 0's seed for the pass and shuffles with
``seed + epoch`` -- the broadcast is a collective, made when the first batch of a pass is requested.
"""

import torch
import torch.distributed as dist


class SyncedShardLoader:
    def __init__(self, samples, batch_size, seed=0):
        self.samples = samples
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.samples) // self.batch_size

    def _synchronize_seed(self):
        seed = torch.tensor([self.seed + self.epoch], dtype=torch.int64)
        dist.broadcast(seed, src=0)
        return int(seed.item())

    def __iter__(self):
        g = torch.Generator().manual_seed(self._synchronize_seed())
        order = torch.randperm(len(self.samples), generator=g).tolist()
        for b in range(len(self)):
            idx = order[b * self.batch_size : (b + 1) * self.batch_size]
            yield (torch.stack([self.samples[i][0] for i in idx]), torch.stack([self.samples[i][1] for i in idx]))
