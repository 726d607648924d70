"""DLIO's training loop with ``dlio_sampler``'s ``ceil(num_samples / size)`` split and a barrier after every step.

Models mlcommons/storage issue #455 ("``dlio_sampler`` uses ``ceil(N/size)`` causing inter-epoch deadlock when
``num_samples`` is not divisible by ``comm_size``": the last rank gets fewer samples, with ``drop_last=True`` it
produces one fewer batch per epoch, and "the training loop calls ``comm.barrier()`` once per batch and once at end
of epoch, so the mismatched batch count causes ranks to enter incompatible collectives"), the same report in
argonne-lcf/dlio_benchmark PR #339 ("number of training steps will be one off for one of the ranks, causing barrier
deadlock") and PR #198 (one MPI process "stuck in MPI_Reduce & all of the other in MPI_Barrier"). The code modelled
is ``dlio_benchmark/data_loader/torch_data_loader.py`` ``dlio_sampler`` and ``main.py`` ``_train`` (a barrier after
each emulated compute step and at the end of the epoch; ``StatsCounter`` reducing the per-rank figures at the end).

Written for this corpus (nothing copied). MPI is replaced by the gloo group (``comm.barrier()`` ->
``dist.barrier()``, the statistics ``Reduce`` -> ``dist.all_reduce``); 19 synthetic samples of 16 floats, batch size
3, ``drop_last=True``, 3 ranks, 2 epochs; the "accelerator compute" is a small matmul.

The bug: ``math.ceil(19 / 3)`` gives 7 samples to ranks 0 and 1 (2 batches each) and clamps rank 2 to 5 (1 batch).
Rank 2 makes one barrier fewer per epoch, so its statistics all-reduce (its 5th collective) meets the barrier that
ranks 0 and 1 make after their second step of epoch 2; the job stops there.
"""
import datetime
import math
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, Sampler

KIND = "buggy"
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
        samples_per_proc = int(math.ceil(num_samples / size))  # BUG
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
        dist.barrier()  # WAITS
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
        steps, seconds = train_epoch(epoch, loader, weight, rank)  # WAITS
        total_steps += steps
        total_time += seconds
    # StatsCounter: aggregate the per-rank figures
    stats = torch.tensor([float(total_steps * BATCH_SIZE), total_time])
    dist.all_reduce(stats)  # WAITS
    if rank == 0:
        print(f"samples processed {int(stats[0].item())}, throughput {stats[0].item() / stats[1].item():.1f} samples/s", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
