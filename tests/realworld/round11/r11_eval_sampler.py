"""Helper module for the round-11 evaluation-sampler pair (not an item).

``DistributedEvalSampler`` is written after the description in SeungjunNah/DeepDeblur-PyTorch (``data/sampler.py``
and its README; issue #44) and the sampler of pfnet/pytorch-pfn-extras PR #551: like
``torch.utils.data.DistributedSampler`` but without the padding, so every sample is evaluated exactly once and
the ranks may get different numbers of samples (and of batches). No collective here.
"""

import math

import torch
from torch.utils.data import Sampler


class DistributedEvalSampler(Sampler):
    def __init__(self, dataset, num_replicas, rank, shuffle=False, seed=0):
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.total_size = len(dataset)
        self.num_samples = len(range(rank, self.total_size, num_replicas))

    def __iter__(self):
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            indices = torch.randperm(self.total_size, generator=g).tolist()
        else:
            indices = list(range(self.total_size))
        # no padding: rank r takes r, r + n, r + 2n, ...
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


def batches_per_rank(num_samples, num_replicas, batch_size):
    """How many batches each rank's loader yields (for messages)."""
    return [math.ceil(len(range(r, num_samples, num_replicas)) / batch_size) for r in range(num_replicas)]
