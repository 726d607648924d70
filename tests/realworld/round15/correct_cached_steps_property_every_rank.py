"""A ``cached_property`` that all-reduces the step count, first read on every rank (correct).

Models fairseq2's ``_reduce_num_batches`` (each rank's number of batches is all-gathered and the minimum is used,
so that every rank stops after the same number of steps) written, as a learner would, as a lazily computed
``functools.cached_property`` on the data module (Lightning-style ``LightningDataModule`` attributes;
``functools.cached_property`` runs the getter once, on first access, and stores the value on the instance).

Each rank reads its own pre-sharded file (stand-in: ``shard_sizes`` gives rank 0 40 samples and rank 1 36, as
shards written by a preprocessing job that does not balance them), so the ranks' loaders have 5 and 4 batches
and the property all-reduces the minimum. Every rank reads ``data.steps_per_epoch`` right after building the
data module, before the model is wrapped in DDP; rank 0 then prints the plan; the training loop runs
``steps_per_epoch`` DDP steps per epoch on every rank.
"""
import functools
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
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
        dist.all_reduce(steps, op=dist.ReduceOp.MIN)
        return int(steps.item())


def worker():
    rank = dist.get_rank()
    data = ShardedDataModule(rank)
    steps_per_epoch = data.steps_per_epoch
    if rank == 0:
        print(f"training {EPOCHS} epochs x {data.steps_per_epoch} steps "
              f"(this rank has {len(data.loader)} batches)", flush=True)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(EPOCHS):
        for step, (x, y) in zip(range(steps_per_epoch), data.loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
