"""litData: whole chunks assigned to ranks give the ranks different numbers of batches.

Source: Lightning-AI/litData issue #233 ("Uneven number of batches returned across ranks in
StreamingDataset/DataLoader", 2024-07) and PR #237 ("Fix uneven batches in distributed dataloading"), which
names the cause: "Before: Chunks are first assigned to ranks, then samples from ranks assigned to workers. Now:
Assign samples directly across combined world size of all workers/ranks. This allows us to correctly apply
`drop_last` and ensure that each rank returns the same amount of data." Modelled: `litdata/streaming/shuffle.py`
(`NoShuffle.get_chunks_and_intervals_per_ranks` before the PR) and the Fabric training loop of the issue's repro.

`optimize()` packs variable-length token sequences, so the four chunks hold 6, 3, 5 and 4 items. Handing whole
chunks to ranks round-robin gives rank 0 eleven items and rank 1 seven; with batch size 2 and `drop_last` that is
five batches against three. Rank 1 leaves the epoch and waits in Fabric's end-of-fit barrier while rank 0 waits in
the DDP gradient all-reduce of its fourth step.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
    chunks = build_chunks()
    my_chunks = [chunk for index, chunk in enumerate(chunks) if index % world_size == rank]  # BUG
    return [item for chunk in my_chunks for item in chunk]


def batches(items, batch_size):
    full = len(items) // batch_size  # drop_last=True
    return [items[i * batch_size:(i + 1) * batch_size] for i in range(full)]


def train_epoch(model, optimizer, loader, rank):
    for step, batch in enumerate(loader):
        x = torch.tensor([[float(i), 1.0, float(i % 3), 0.5] for i in batch])
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
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
    steps = train_epoch(model, optimizer, loader, rank)  # WAITS
    dist.barrier()  # WAITS
    print(f"[rank {rank}] epoch done after {steps} steps", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
