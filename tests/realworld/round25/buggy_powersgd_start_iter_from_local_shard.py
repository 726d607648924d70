"""DDP's PowerSGD communication hook with ``start_powerSGD_iter`` set to "10 % of the training steps", counted
from the rank's own shard.

Models: ``torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py`` (``PowerSGDState``: vanilla allreduce
before ``start_powerSGD_iter``, then per bucket an allreduce of the uncompressed tensors and of the low-rank
factors; the docstring's "start with 10% of total training steps"), pytorch/pytorch PR #50973 (the hybrid
vanilla + PowerSGD scheme); huggingface/datasets ``split_dataset_by_node`` for an iterable dataset whose number of
shards divides the world size (whole shards per rank, so a rank's sample count depends on which shards it got).

What it does: 2 ranks train a two-layer MLP with DDP and the PowerSGD hook (rank 1, error feedback, warm start).
The corpus comes as 4 shard files of 10, 10, 10 and 6 samples; rank r streams shards r and r+2. The run lasts
``MAX_STEPS`` steps (a config value; a rank whose shard runs out starts it again). The hook's start step is 10 %
of the steps of ``EPOCHS`` epochs.

The bug: the step count behind the 10 % is computed from the rank's own shards (20 samples on rank 0, 16 on rank
1), so rank 0 starts compressing at step 3 and rank 1 at step 2. In step 2's backward rank 1 all-reduces the
uncompressed tensors and the factors while rank 0 all-reduces the whole bucket; the gradient exchange breaks
inside ``loss.backward()`` (gloo aborts one rank; the other waits there until the connection drops).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

SHARD_SIZES = [10, 10, 10, 6]
BATCH = 2
EPOCHS = 3
MAX_STEPS = 6


def my_shards(rank, world_size):
    g = torch.Generator().manual_seed(5)
    shards = [torch.randn(n, 16, generator=g) for n in SHARD_SIZES]
    return shards[rank::world_size]  # split_dataset_by_node: whole shards when n_shards % world_size == 0


def batches(shards):
    data = torch.cat(shards)
    while True:
        for i in range(0, len(data) - BATCH + 1, BATCH):
            yield data[i:i + BATCH]


def start_iter(shards):
    steps_per_epoch = sum(len(s) for s in shards) // BATCH  # BUG
    return max(2, EPOCHS * steps_per_epoch // 10)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)))
    shards = my_shards(rank, world_size)
    state = powerSGD.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                   start_powerSGD_iter=start_iter(shards), min_compression_rate=2)
    model.register_comm_hook(state, powerSGD.powerSGD_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = batches(shards)
    for step in range(MAX_STEPS):
        x = next(data)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.3f} (PowerSGD from step {state.start_powerSGD_iter})", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
