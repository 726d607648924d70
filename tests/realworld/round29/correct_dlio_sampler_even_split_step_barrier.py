"""DLIO's training loop with a sampler that gives every rank ``num_samples // size`` samples, and a barrier after every step.

Models mlcommons/storage issue #455 and argonne-lcf/dlio_benchmark PR #339 / PR #198 (see the buggy twin) with the
fix they converge on: every rank gets the same number of samples -- the sample count aligned to the number of ranks
(PR #339, "Aligning number of sample files during the initialization"), i.e. ``num_samples // size`` per rank, the
remainder left out -- so every rank makes the same number of steps, and the per-step and end-of-epoch
``comm.barrier()`` calls of ``main.py`` ``_train`` line up.

Written for this corpus (nothing copied). MPI is replaced by the gloo group (``comm.barrier()`` ->
``dist.barrier()``, the statistics ``Reduce`` -> ``dist.all_reduce``); 19 synthetic samples of 16 floats, batch size
3, ``drop_last=True``, 3 ranks, 2 epochs: 6 samples and 2 steps per rank and epoch, sample 18 unused.
"""
import datetime
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, Sampler

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

NUM_SAMPLES = 19
BATCH_SIZE = 3
EPOCHS = 2


class SyntheticSamples(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(7)
        self.data = torch.randn(n, 16, generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


class dlio_sampler(Sampler):
    def __init__(self, rank, size, num_samples, epochs):
        self.rank = rank
        self.epochs = epochs
        samples_per_proc = num_samples // size
        start_sample = self.rank * samples_per_proc
        end_sample = (self.rank + 1) * samples_per_proc - 1
        if end_sample > num_samples - 1:
            end_sample = num_samples - 1
        self.indices = list(range(start_sample, end_sample + 1))

    def __len__(self):
        return len(self.indices)

    def __iter__(self):
        yield from self.indices


def emulate_compute(batch, weight):
    return (batch @ weight).relu().sum()


def train_epoch(epoch, loader, weight, rank):
    steps = 0
    t0 = time.perf_counter()
    for batch in loader:
        emulate_compute(batch, weight)
        steps += 1
        dist.barrier()
    dist.barrier()
    print(f"[rank {rank}] epoch {epoch}: {steps} steps", flush=True)
    return steps, time.perf_counter() - t0


def worker():
    rank, size = dist.get_rank(), dist.get_world_size()
    dataset = SyntheticSamples(NUM_SAMPLES)
    sampler = dlio_sampler(rank, size, NUM_SAMPLES, EPOCHS)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler, drop_last=True)
    weight = torch.randn(16, 16, generator=torch.Generator().manual_seed(3))
    total_steps, total_time = 0, 0.0
    for epoch in range(1, EPOCHS + 1):
        steps, seconds = train_epoch(epoch, loader, weight, rank)
        total_steps += steps
        total_time += seconds
    # StatsCounter: aggregate the per-rank figures
    stats = torch.tensor([float(total_steps * BATCH_SIZE), total_time])
    dist.all_reduce(stats)
    if rank == 0:
        print(f"samples processed {int(stats[0].item())}, throughput {stats[0].item() / stats[1].item():.1f} samples/s", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
