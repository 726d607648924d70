"""Distributed Shampoo examples (facebookresearch/optimizers), fixed: local rank 0 downloads CIFAR-10 once into the
node's data folder, the other ranks wait at a barrier, then every rank loads it with `download=False`.

Source: facebookresearch/optimizers PR #270, "Sync: rank-0 CIFAR-10 download + barrier (fix examples gloo timeout)"
(July 2026): "the CIFAR-10 example now downloads on rank 0 only and barriers before all ranks load the shared dataset
with download=False. This fixes the persistent `examples / Python 3.12` GitHub CI failure where concurrent per-rank
downloads throttled + desynced the gloo ranks, timing out the all-reduce in loss.backward()". Modelled on
`distributed_shampoo/examples/utils.py` `get_data_loader_and_sampler` (before: `data_path = Path(data_path) /
str(rank)` and `datasets.CIFAR10(data_path, train=True, download=True)` on every rank; after: local rank 0 downloads,
`dist.barrier()`, every rank loads with `download=False`) and `train_model` (DDP, `loss.backward()`).

What it does: two ranks train a small convolutional classifier with DDP on CIFAR-like data. The download is a
stand-in for torchvision's: it fetches an archive from the dataset host (a folder shared by the ranks, made by rank
0 and broadcast) and unpacks it. The host serves one connection at full speed (1 s here) and throttles a concurrent
one to 20 s.

The fix (the PR): "Fetch the dataset once per node (local rank 0) into that node's data directory, then barrier so
every rank loads from disk with download=False"; the host then sees a single connection.
"""

import datetime
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

FULL_SPEED_SECONDS, THROTTLED_SECONDS = 1.0, 20.0
N_IMAGES = 64


def fetch_from_host(host_dir, dest):
    """Stand-in for the CIFAR-10 host: one connection at a time at full speed, the others throttled."""
    slot = os.path.join(host_dir, "connection.lock")
    try:
        fd = os.open(slot, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        time.sleep(THROTTLED_SECONDS)  # throttled: a parallel pull from the same client
        fd = None
    else:
        time.sleep(FULL_SPEED_SECONDS)
    rng = np.random.default_rng(0)
    np.savez(dest, images=rng.random((N_IMAGES, 3, 8, 8), dtype=np.float32),
             labels=rng.integers(0, 10, N_IMAGES))
    if fd is not None:
        os.close(fd)
        os.remove(slot)


class CIFAR10:
    """torchvision.datasets.CIFAR10 in small: `download=True` fetches the archive unless it is already there."""

    def __init__(self, root, train=True, download=False):
        archive = os.path.join(root, "cifar-10-batches.npz")
        if download and not os.path.exists(archive):
            os.makedirs(root, exist_ok=True)
            fetch_from_host(self.host_dir, archive) 
        if not os.path.exists(archive):
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        data = np.load(archive)
        self.tensors = TensorDataset(torch.from_numpy(data["images"]), torch.from_numpy(data["labels"]).long())

    host_dir = None


def get_data_loader_and_sampler(data_path, world_size, rank, local_rank, batch_size):
    if local_rank == 0:
        CIFAR10(data_path, train=True, download=True)
    if dist.is_initialized():
        dist.barrier()
    dataset = CIFAR10(data_path, train=True, download=False).tensors
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler), sampler


def train_model(model, data_loader, sampler, epochs=2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        total = 0.0
        for images, labels in data_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward() 
            optimizer.step()
            total += loss.item()
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {total / len(data_loader):.4f}", flush=True)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    shared = [tempfile.mkdtemp(prefix="shampoo_examples_") if rank == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    host_dir, data_path = os.path.join(shared[0], "host"), os.path.join(shared[0], "data")
    os.makedirs(host_dir, exist_ok=True)
    CIFAR10.host_dir = host_dir
    try:
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                                  nn.Flatten(), nn.Linear(32, 10)))
        start = time.monotonic()
        data_loader, sampler = get_data_loader_and_sampler(data_path, world_size, rank, local_rank=rank,
                                                          batch_size=8) 
        print(f"[rank {rank}] data ready after {time.monotonic() - start:.1f}s", flush=True)
        train_model(model, data_loader, sampler) 
        print(f"[rank {rank}] training done", flush=True)
    finally:
        open(os.path.join(shared[0], f".left{rank}"), "w").close()
        if all(os.path.exists(os.path.join(shared[0], f".left{r}")) for r in range(world_size)):
            shutil.rmtree(shared[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker() 
    dist.destroy_process_group()
