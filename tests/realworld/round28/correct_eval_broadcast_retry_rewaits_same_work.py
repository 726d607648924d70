"""A per-operation time budget around the broadcast of the evaluation loss from the last rank, with a retry that
waits again on the same pending broadcast when the budget runs out.

Models: KempnerInstitute/KempnerForge PR #64 / issue #63 (``async_op=True`` plus
``Work.wait(timeout=timedelta(seconds=...))`` around coordination collectives, the pipeline-parallel eval loss
broadcast from the last stage among them); pytorch issue #37571 (``Work.wait(timeout)`` raises "Operation timed
out!" on expiry and the operation stays queued, completing when the peer arrives); the generic ``for attempt in
range(n): try: ... except: retry`` wrappers.

What it does: 2 ranks train a tiny regressor (DDP) for 2 epochs of 2 steps. After each epoch rank 1 (the "last
stage") computes the validation loss -- slowly, 1.5 s (a stand-in sleep for its evaluation) -- and broadcasts it;
every rank receives it through ``broadcast_with_retry`` (3 waits of a 1 s budget on one broadcast) and rank 0
logs it.

Looks suspicious but is right: a collective inside a retry loop whose ``except`` runs on one rank only (rank 0
times out once, then succeeds). The broadcast is issued once, before the loop; a retry only waits again on the
same work handle, so each rank makes one broadcast per evaluation.
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2
BUDGET_S = 1.0
ATTEMPTS = 3
LAST = 1  # the rank that evaluates


def broadcast_with_retry(t, src):
    work = dist.broadcast(t, src=src, async_op=True)
    for attempt in range(ATTEMPTS):
        try:
            work.wait(timeout=timedelta(seconds=BUDGET_S))
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
    return broadcast_with_retry(loss, src=LAST)


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
            loss.backward()
            optimizer.step()
        val_loss = evaluate(model, (vx, vx @ w))
        if rank == 0:
            print(f"epoch {epoch}: val loss {val_loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
