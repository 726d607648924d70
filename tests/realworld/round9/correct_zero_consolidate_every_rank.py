"""Modelled on pytorch/ignite issue #2623 ("Consolidate ZeRO state before checkpoint saving": "This call needs to be
issued on all ranks and point toward the same consolidating rank"), the ``ZeroRedundancyOptimizer`` docstrings
(``consolidate_state_dict``: "This needs to be called on all ranks"; ``state_dict``: the state is only on the rank
it was consolidated to) and open-mmlab/mmengine PR #551 (ZeRO in the checkpoint hook). The checkpoint helpers
live in ``r9_checkpointing.py`` (``save_checkpoint`` -> ``training_state`` -> ``optimizer_state_for_saving``).

What it does: DDP with a ``ZeroRedundancyOptimizer`` (each rank keeps the Adam state of its shard of the
parameters) on 2 ranks; every 3 steps every rank calls ``save_checkpoint``, which consolidates the optimizer state
to rank 0; only rank 0 gets a state dict back and writes the file.

Why it looks suspicious but is right: the helper returns early on the ranks that are not the consolidation target
and writes the file on rank 0 only; the collective (the consolidation's per-rank broadcasts) runs before that
``return``, on every rank, because every rank calls ``save_checkpoint``.
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

import r9_checkpointing

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SAVE_EVERY = 3


def train(model, optimizer, batches, folder):
    for step, (features, target) in enumerate(batches, start=1):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(features), target)
        loss.backward()
        optimizer.step()
        if step % SAVE_EVERY == 0:
            r9_checkpointing.save_checkpoint(folder, model, optimizer, step)
    return loss.item()


def worker():
    rank = dist.get_rank()
    folder = os.path.join(tempfile.gettempdir(), f"r9_zero_{os.environ.get('MASTER_PORT', 'lab')}")
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-2)
    torch.manual_seed(1 + rank)
    batches = [(torch.randn(8, 8), torch.randn(8, 4)) for _ in range(7)]
    loss = train(model, optimizer, batches, folder)
    dist.barrier()
    if rank == 0:
        saved = torch.load(os.path.join(folder, "step-6.pt"))
        print(f"final loss {loss:.4f}; saved {sorted(os.listdir(folder))} with "
              f"{len(saved['optimizer']['state'])} optimizer states")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
