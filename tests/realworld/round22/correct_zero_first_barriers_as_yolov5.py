"""Round 22: a hand-written ``torch_distributed_zero_first`` with the replicas' barrier before ``yield`` and rank 0's after.

Models: YOLOv5 ``utils/torch_utils.py`` ``torch_distributed_zero_first(local_rank)`` (replicas -- ``local_rank not
in [-1, 0]`` -- wait *before* the ``yield``, local rank 0 releases them *after* it) and its many copies, some with
``try/finally`` (nlprunners ``only_first_process``); YOLOv5 ``train.py``'s ``with torch_distributed_zero_first(
LOCAL_RANK): data_dict = check_dataset(data)`` and ``utils/general.py`` ``check_dataset`` (downloads a missing
dataset only where allowed, otherwise raises "Dataset not found").

What it does: two processes prepare a small "dataset" directory inside the zero-first block (rank 0 downloads --
here: writes -- it when it is missing, the other ranks must find it), then train a small DDP model on it.

This is the correct twin, the helper as YOLOv5 writes it: the replicas wait before the ``yield``, local rank 0
runs the block first (writing the dataset) and releases them after it, so rank 1 finds the files.
"""
import os
import shutil
import tempfile
from contextlib import contextmanager
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


@contextmanager
def torch_distributed_zero_first(local_rank):
    # make all processes wait for the local master to do something
    if local_rank not in [-1, 0]:
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()


def download(root):
    # stand-in for the dataset download / unzip
    os.makedirs(os.path.join(root, "labels"))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 3, generator=g)
    torch.save({"x": x, "y": x @ torch.tensor([[1.0], [-2.0], [0.5]])}, os.path.join(root, "labels", "train.pt"))


def check_dataset(root, local_rank):
    if not os.path.exists(os.path.join(root, "labels", "train.pt")):
        if local_rank in [-1, 0]:
            download(root)
        else:
            raise FileNotFoundError(f"Dataset not found: {root} (download it on local rank 0 first)")
    return torch.load(os.path.join(root, "labels", "train.pt"))


def train(data, rank, world):
    torch.manual_seed(0)
    model = DDP(nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data["x"][rank::world], data["y"][rank::world]
    for epoch in range(3):
        for i in range(0, len(x), 4):
            loss = nn.functional.mse_loss(model(x[i:i + 4]), y[i:i + 4])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return loss.item()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = rank  # one node
    box = [tempfile.mkdtemp(prefix="r22_zerofirst_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    root = os.path.join(box[0], "datasets", "toy")
    try:
        with torch_distributed_zero_first(local_rank):
            data = check_dataset(root, local_rank)
        loss = train(data, rank, world)
        print(f"rank {rank}: final loss {loss:.4f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(box[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
