"""litData: samples assigned across the combined world size, so every rank gets the same number of batches.

Source: Lightning-AI/litData issue #233 and PR #237 ("Fix uneven batches in distributed dataloading": "Assign
samples directly across combined world size of all workers/ranks. This allows us to correctly apply `drop_last`
and ensure that each rank returns the same amount of data."). Modelled: `litdata/streaming/shuffle.py` and
`litdata/utilities/shuffle.py` after the PR, and the Fabric training loop of the issue's repro.

The same four chunks (6, 3, 5 and 4 items) are flattened and the 18 items are split into equal shares of 9 per
rank, the remainder dropped; with batch size 2 and `drop_last` both ranks train four steps and meet in the
end-of-fit barrier.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

CHUNK_SIZES = [6, 3, 5, 4]  # items per chunk written by optimize(); variable-length samples
BATCH_SIZE = 2


def build_chunks():
    chunks, start = [], 0
    for size in CHUNK_SIZES:
        chunks.append(list(range(start, start + size)))
        start += size
    return chunks


def items_for_rank(rank, world_size):
    every_item = [item for chunk in build_chunks() for item in chunk]
    per_rank = len(every_item) // world_size  # drop_last across the whole world
    return every_item[rank * per_rank:(rank + 1) * per_rank]


def batches(items, batch_size):
    full = len(items) // batch_size  # drop_last=True
    return [items[i * batch_size:(i + 1) * batch_size] for i in range(full)]


def train_epoch(model, optimizer, loader, rank):
    for step, batch in enumerate(loader):
        x = torch.tensor([[float(i), 1.0, float(i % 3), 0.5] for i in batch])
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    return step + 1


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = batches(items_for_rank(rank, world_size), BATCH_SIZE)
    print(f"[rank {rank}] Length = {len(loader)}", flush=True)
    steps = train_epoch(model, optimizer, loader, rank)
    dist.barrier()
    print(f"[rank {rank}] epoch done after {steps} steps", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
