"""A ``cached_property`` that all-reduces the step count, first read inside a rank-0 log line (buggy).

Models fairseq2's ``_reduce_num_batches`` (each rank's number of batches is all-gathered and the minimum is used,
so that every rank stops after the same number of steps) written, as a learner would, as a lazily computed
``functools.cached_property`` on the data module (``functools.cached_property`` runs the getter once, on first
access, and stores the value on the instance).

Each rank reads its own pre-sharded file (stand-in: ``shard_sizes`` gives rank 0 40 samples and rank 1 36), so
the ranks' loaders have 5 and 4 batches and the property all-reduces the minimum. Every rank reads
``data.steps_per_epoch`` in its training loop.

Bug: before that, rank 0 prints the plan, and the f-string is the property's first access on rank 0: its
all-reduce runs there, on rank 0 alone, before the DDP constructor. Rank 0's MIN all-reduce meets rank 1's first
DDP constructor collective; rank 0 then holds the cached value and never all-reduces again in the loop, while
rank 1's first access comes later. The ranks' collectives are shifted by one from the first call on.
"""
import functools
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2


def shard_sizes():
    """Stand-in for the preprocessing job's output: unbalanced shards, one per rank."""
    return [40, 36]


class ShardedDataModule:
    def __init__(self, rank, batch_size=8):
        g = torch.Generator().manual_seed(rank)
        n = shard_sizes()[rank]
        x = torch.randn(n, 10, generator=g)
        self.dataset = TensorDataset(x, (x[:, :3].sum(1) > 0).long())
        self.loader = DataLoader(self.dataset, batch_size=batch_size, shuffle=True, drop_last=True,
                                 generator=torch.Generator().manual_seed(rank))

    @functools.cached_property
    def steps_per_epoch(self):
        """Every rank must run the same number of DDP steps: the minimum over the ranks."""
        steps = torch.tensor([len(self.loader)])
        dist.all_reduce(steps, op=dist.ReduceOp.MIN)  # WAITS
        return int(steps.item())


def worker():
    rank = dist.get_rank()
    data = ShardedDataModule(rank)
    if rank == 0:
        print(f"training {EPOCHS} epochs x {data.steps_per_epoch} steps "  # BUG # WAITS
              f"(this rank has {len(data.loader)} batches)", flush=True)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))  # WAITS
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(EPOCHS):
        for step, (x, y) in zip(range(data.steps_per_epoch), data.loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
