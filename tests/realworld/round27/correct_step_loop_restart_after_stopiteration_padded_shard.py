"""A step-based training loop that restarts its data iterator when ``next()`` raises ``StopIteration``; the loader
synchronises its shuffling seed from rank 0 at the start of each pass, and the ranks' shards are padded to the
same length, so every rank starts its new passes in the same step.

Models: accelerate ``DataLoaderShard.__iter__`` / ``synchronize_rng_states`` (a broadcast of rank 0's RNG state
when an iteration starts); the ``try: batch = next(it) except StopIteration: it = iter(loader)`` step loops of
diffusers' and many RL / GAN training scripts; torch ``DistributedSampler`` (``drop_last=False``: the index list
padded with its own head to a multiple of the world size, then ``indices[rank::num_replicas]``).

What it does: 2 ranks train a tiny regressor (DDP) for 6 steps. 23 samples are padded to 24 and split
``[rank::2]``, 12 each; a ``_helpers_loader.SyncedShardLoader`` of batch 4 (``drop_last``) gives each rank 3
batches. Each step takes ``next(it)``; on ``StopIteration`` the rank bumps its epoch and starts a new pass, whose
first ``next`` broadcasts rank 0's seed.

Why it is right although it looks rank-dependent: the ``except StopIteration`` branch holds a collective (inside
the loader's ``__iter__``) and each rank takes it on its own -- but the padded split gives every rank the same
number of batches, so every rank takes it in the same step (3).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_loader import SyncedShardLoader

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_SAMPLES = 23
BATCH_SIZE = 4
MAX_STEPS = 6


def make_samples():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(NUM_SAMPLES, 3, generator=g)
    y = x @ torch.tensor([[0.5], [-1.0], [2.0]])
    return list(zip(x, y))


def rank_shard(samples, rank, world_size):
    padded = samples + samples[: (-len(samples)) % world_size]
    return padded[rank::world_size]


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = SyncedShardLoader(rank_shard(make_samples(), rank, world_size), BATCH_SIZE)
    epoch, it = 0, iter(loader)
    for step in range(MAX_STEPS):
        try:
            x, y = next(it)
        except StopIteration:
            epoch += 1
            loader.set_epoch(epoch)
            it = iter(loader)
            x, y = next(it)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step} (epoch {epoch}): loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
