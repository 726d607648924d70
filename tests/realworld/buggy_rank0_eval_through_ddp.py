"""Rank-0-only validation through the DDP-wrapped model: the model has BatchNorm buffers, so DDP's forward
broadcasts them from rank 0 — a collective the other ranks never join.

Source: pytorch/pytorch torch/nn/parallel/distributed.py (``forward`` → ``_pre_forward`` →
``_sync_buffers`` broadcasts module buffers when ``broadcast_buffers=True`` and the last forward ran with
grad, ``require_forward_param_sync``), and the pattern of Emerge-Lab/PufferDrive PR #421 ("gate eval on
rank 0 under DDP": "other ranks block on the next allreduce until rank 0 rejoins").
Bug: ``validate`` runs on rank 0 only (BUG); rank 0 waits in the DDP forward's buffer broadcast (WAITS),
rank 1 in the next step's backward all_reduce (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def validate(model, batches):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x in batches:
            total += model(x).sum().item()  # WAITS
    model.train()
    return total


def worker():
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    val_batches = [torch.randn(8, 4) for _ in range(2)]
    for epoch in range(2):
        for _ in range(2):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()  # WAITS
            optimizer.step()
            optimizer.zero_grad()
        if rank == 0:  # BUG
            print(f"epoch {epoch}: val {validate(model, val_batches):.3f}")  # WAITS
    return epoch


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
