"""Validation moved under ``is_primary`` while it still averages the loss across ranks with a helper.

Source: huggingface/pytorch-image-models, train.py (``validate`` calls ``utils.reduce_tensor`` when
``args.distributed``) and timm/utils/distributed.py (``reduce_tensor`` is an ``all_reduce``). Running
validation only where ``utils.is_primary(args)`` to save time leaves rank 0 in the helper's all_reduce while
rank 1 trains on.

The bug: ``validate`` only on rank 0; its ``reduce_tensor`` (in ``r3_timm_utils``) is a collective.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import r3_timm_utils as utils

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


def train_one_epoch(model, optimizer, rank):
    model.train()
    for _ in range(3):
        loss = model(torch.randn(4, 8) + rank).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()


def validate(model, world_size):
    model.eval()
    with torch.no_grad():
        loss = model(torch.randn(4, 8)).pow(2).mean()
        reduced = utils.reduce_tensor(loss.data, world_size)  # WAITS
    return {"loss": reduced.item()}


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    metrics = None
    for epoch in range(2):
        train_one_epoch(model, optimizer, rank)  # WAITS
        if rank == 0:  # BUG
            metrics = validate(model, world_size)  # WAITS
    return metrics


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
