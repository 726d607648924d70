"""Modelled on the review of pytorch/pytorch PR #60285 ("Clean Up ZeRO"; blefaudeux: "users might call
``.state_dict()`` on one rank only (in practice they often will), which means that you cannot consolidate at that
point with any of the collectives"), the ``ZeroRedundancyOptimizer.consolidate_state_dict`` docstring ("This needs
to be called on all ranks"), pytorch/ignite issue #2623 and zhijian-liu/torchpack issue #18 (the fix offered
there: call ``consolidate_state_dict()`` inside the trainer's state-dict method). The checkpoint helpers live in
``r9_checkpointing.py`` (``save_checkpoint`` -> ``training_state`` -> ``optimizer_state_for_saving``).

The bug: the training loop calls ``save_checkpoint`` on rank 0 only, the usual guard for "only the main process
writes files". The helper two calls down consolidates the ZeRO optimizer state, a sequence of per-rank
broadcasts: rank 0 waits there for rank 1's shard, while rank 1 goes on to the next step's DDP gradient
all-reduce. The two ranks' collectives no longer pair up.

Correct twin: ``correct_zero_consolidate_every_rank`` (every rank calls the helper; the helper writes on rank 0).
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

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

SAVE_EVERY = 3


def train(model, optimizer, batches, folder):
    for step, (features, target) in enumerate(batches, start=1):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(features), target)
        loss.backward()  # WAITS
        optimizer.step()
        if step % SAVE_EVERY == 0 and dist.get_rank() == 0:  # BUG
            r9_checkpointing.save_checkpoint(folder, model, optimizer, step)  # WAITS
    return loss.item()


def worker():
    rank = dist.get_rank()
    folder = os.path.join(tempfile.gettempdir(), f"r9_zero_{os.environ.get('MASTER_PORT', 'lab')}")
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-2)
    torch.manual_seed(1 + rank)
    batches = [(torch.randn(8, 8), torch.randn(8, 4)) for _ in range(7)]
    loss = train(model, optimizer, batches, folder)  # WAITS
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
