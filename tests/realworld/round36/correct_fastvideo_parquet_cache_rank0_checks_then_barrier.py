"""FastVideo's latent parquet dataset after PR #598: rank 0 alone checks for the file-info cache (and writes it if it is
missing), every other rank goes straight to the barrier, and after it every rank reads the cache -- the PR's fix.

Models: hao-ai-lab/FastVideo PR #598 ("[bugfix] [training] fix deadlock in latent datasets": in
``get_parquet_files_and_length`` "each rank was first checking for existence of a cache, if found it will immediately
return the cache's contents. If cache is not found, then rank 0 will create a cache and then block on barrier ...
there is actually a race condition here where rank0 may not see a cache and then end up creating a cache and writing
it to disk before other ranks start checking for the cache. This meant that rank 0 is blocked on the barrier while
other ranks that found the cache proceeded to return before calling barrier"). Code modelled (written here, not
copied): ``fastvideo/v1/dataset/parquet_dataset_iterable_style.py`` -- ``get_parquet_files_and_length`` (the
``file_info_cache.pkl`` check, rank 0 listing the parquet files and their row counts, ``pickle.dump``, the world
group's barrier, the recursive call), ``LatentsParquetIterStyleDataset`` splitting the files over the ranks, and the
trainer's data-parallel step. Stand-ins: ``.pt`` files of latents instead of parquet, a tiny denoiser under DDP, and
rank 1's own setup before it builds its dataset (0.5 s, which puts its check after rank 0's write, as in the report).

Rank 0 finds no cache and writes it; rank 1 waits in the barrier meanwhile (it would find the cache if it looked);
both then read it and train 4 steps on their 2 files (12 latents each). 2 ranks.
"""

import datetime
import os
import pickle
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def get_parquet_files_and_length(path):
    cache_file = os.path.join(path, "file_info_cache.pkl")
    if dist.get_rank() == 0 and not os.path.exists(cache_file):
        file_info = []
        for name in sorted(os.listdir(path)):
            if name.endswith(".pt"):
                rows = torch.load(os.path.join(path, name)).shape[0]
                file_info.append((name, rows))
        with open(cache_file, "wb") as f:
            pickle.dump(file_info, f)
    dist.barrier()  # every rank: the cache exists after this
    with open(cache_file, "rb") as f:
        return pickle.load(f)


class LatentsDataset:
    def __init__(self, path, rank, world_size):
        file_info = get_parquet_files_and_length(path)
        self.files = [os.path.join(path, name) for name, _ in file_info[rank::world_size]]
        self.length = sum(rows for _, rows in file_info[rank::world_size])

    def batches(self, batch_size):
        for fname in self.files:
            latents = torch.load(fname)
            for start in range(0, latents.shape[0], batch_size):
                yield latents[start : start + batch_size]


def write_latents(path):
    os.makedirs(path, exist_ok=True)
    gen = torch.Generator().manual_seed(7)
    for i in range(4):
        torch.save(torch.randn(6, 16, generator=gen), os.path.join(path, f"latents_{i:03d}.pt"))


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(tempfile.gettempdir(), f"r36_fastvideo_{os.environ.get('MASTER_PORT', '0')}")
    if rank == 0:
        write_latents(path)  # the preprocessing step wrote the latents before training
    dist.barrier()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.SiLU(), nn.Linear(32, 16)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if rank != 0:
        time.sleep(0.5)  # stand-in: this rank's own setup (text encoder, VAE) before it builds its dataset
    dataset = LatentsDataset(path, rank, world)
    gen = torch.Generator().manual_seed(100 + rank)
    steps = 0
    for latents in dataset.batches(batch_size=3):
        noise = torch.randn(latents.shape, generator=gen)
        loss = F.mse_loss(model(latents + noise), noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps += 1
    print(f"[rank {rank}] {dataset.length} latents, {steps} steps, last loss {loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
