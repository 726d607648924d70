"""A per-operation time budget around the broadcast of the evaluation loss from the last rank, with a retry that
issues the broadcast again when the budget runs out.

Models: KempnerInstitute/KempnerForge PR #64 / issue #63 ("Enforce per-op timeouts on init and coordination
collectives": ``async_op=True`` plus ``Work.wait(timeout=timedelta(seconds=...))``, the pipeline-parallel eval loss
broadcast from the last stage wrapped in a budget with a ``nan`` fallback); pytorch issue #37571 (``Work.wait``
gained its ``timeout``: on expiry it raises "Operation timed out!" and the operation stays queued -- it completes
when the peer arrives); the generic ``for attempt in range(n): try: ... except: retry`` wrappers put around remote
calls.

What it does: 2 ranks train a tiny regressor (DDP) for 2 epochs of 2 steps. After each epoch rank 1 (the "last
stage", which holds the evaluation data) computes the validation loss -- slowly, 1.5 s (a stand-in sleep for its
evaluation) -- and broadcasts it; every rank receives it through ``broadcast_with_retry`` (3 attempts of a 1 s
budget) and rank 0 logs it.

The bug: each attempt calls ``dist.broadcast(..., async_op=True)`` again. Rank 0's first attempt times out after
1 s and each later attempt enqueues one more broadcast; rank 1's one broadcast completes rank 0's first, and the
extra ones have no partner: rank 0's attempts 1 and 2 time out too and it raises "failed after 3 attempts", while
rank 1 waits in the next epoch's DDP gradient all-reduce. The retry re-issues a collective on the one rank that
timed out, not on the others.
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2
BUDGET_S = 1.0
ATTEMPTS = 3
LAST = 1  # the rank that evaluates


def broadcast_with_retry(t, src):
    for attempt in range(ATTEMPTS):
        work = dist.broadcast(t, src=src, async_op=True)  # BUG
        try:
            work.wait(timeout=timedelta(seconds=BUDGET_S))  # WAITS
            return t
        except RuntimeError as e:
            print(f"[rank {dist.get_rank()}] eval-loss broadcast attempt {attempt}: {e}", flush=True)
    raise RuntimeError(f"eval-loss broadcast failed after {ATTEMPTS} attempts")


def evaluate(model, val):
    loss = torch.zeros(1)
    if dist.get_rank() == LAST:
        time.sleep(1.5)  # stand-in: the last stage runs its validation batches
        with torch.no_grad():
            loss[0] = F.mse_loss(model.module(val[0]).squeeze(1), val[1])
    return broadcast_with_retry(loss, src=LAST)  # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    w = torch.tensor([1.0, -1.0, 2.0, 0.5])
    vx = torch.randn(16, 4, generator=torch.Generator().manual_seed(99))
    for epoch in range(EPOCHS):
        for _ in range(2):
            x = torch.randn(8, 4, generator=g)
            loss = F.mse_loss(model(x).squeeze(1), x @ w)
            optimizer.zero_grad()
            loss.backward()  # WAITS
            optimizer.step()
        val_loss = evaluate(model, (vx, vx @ w))  # WAITS
        if rank == 0:
            print(f"epoch {epoch}: val loss {val_loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
