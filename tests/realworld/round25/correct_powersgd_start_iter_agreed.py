"""DDP's PowerSGD communication hook with ``start_powerSGD_iter`` set to "10 % of the training steps", a number
the ranks agree on (the per-rank step counts are all-reduced with MIN before the hook's state is built).

Models: ``torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py`` (``PowerSGDState``; vanilla allreduce
before ``start_powerSGD_iter``, then allreduces of the uncompressed tensors and of the low-rank factors; "start
with 10% of total training steps"), pytorch/pytorch PR #50973; huggingface/datasets ``split_dataset_by_node`` for
an iterable dataset (whole shards per rank, so the ranks' sample counts differ).

What it does: 2 ranks train a two-layer MLP with DDP and the PowerSGD hook (rank 1, error feedback, warm start).
The corpus comes as 4 shard files of 10, 10, 10 and 6 samples; rank r streams shards r and r+2 (20 and 16
samples). The run lasts ``MAX_STEPS`` steps (a rank whose shard runs out starts it again). The hook's start step
is 10 % of the steps of ``EPOCHS`` epochs, where the steps per epoch are the MIN over the ranks, so both ranks
switch from vanilla allreduce to PowerSGD at the same step.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
    steps = torch.tensor([sum(len(s) for s in shards) // BATCH])
    dist.all_reduce(steps, op=dist.ReduceOp.MIN)  # the hook's schedule must be the same on every rank
    return max(2, EPOCHS * int(steps.item()) // 10)


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
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.3f} (PowerSGD from step {state.start_powerSGD_iter})", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
