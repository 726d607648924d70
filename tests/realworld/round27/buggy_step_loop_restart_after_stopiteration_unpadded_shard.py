"""A step-based training loop that restarts its data iterator when ``next()`` raises ``StopIteration``; the
loader synchronises its shuffling seed from rank 0 at the start of each pass, and the ranks' shards, split
without padding, have 3 and 2 batches -- so the ranks start new passes at different steps.

Models: accelerate ``DataLoaderShard.__iter__`` / ``synchronize_rng_states`` (a broadcast of rank 0's RNG state
when an iteration starts); the ``try: batch = next(it) except StopIteration: it = iter(loader)`` step loops of
diffusers' and many RL / GAN training scripts (``max_train_steps`` rather than epochs); a rank-contiguous split of
the sample list without padding (``samples[start:end]`` with the remainder on the first rank, as detectron2's
``InferenceSampler`` does), unlike ``DistributedSampler``'s padded split.

What it does: 2 ranks train a tiny regressor (DDP) for 6 steps. 23 samples are split contiguously, 12 and 11; a
``_helpers_loader.SyncedShardLoader`` of batch 4 (``drop_last``) gives rank 0 3 batches and rank 1 2. Each step
takes ``next(it)``; on ``StopIteration`` the rank bumps its epoch and starts a new pass.

The bug: the split without padding. Rank 1 runs out after step 1 and starts a pass in step 2 -- the pass's first
``next`` broadcasts the seed -- while rank 0 still has a batch and is in step 2's DDP gradient all-reduce. The
broadcast is hidden in the loader's ``__iter__``, reached from an ``except StopIteration`` that only one rank
takes.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_loader import SyncedShardLoader

KIND = "buggy"
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
    size, left = divmod(len(samples), world_size)
    sizes = [size + int(r < left) for r in range(world_size)]
    start = sum(sizes[:rank])
    return samples[start : start + sizes[rank]]  # BUG


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
            x, y = next(it)  # WAITS
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        if rank == 0:
            print(f"step {step} (epoch {epoch}): loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
