"""A skip-the-step-on-NaN guard whose local flag is all-reduced on every rank, every step.

Modelled on the fix direction of radiocosmology/draco PR #233 (the reviewer: "All ranks need to participate in the
collective ``allreduce`` call"), on NVIDIA-NeMo/Automodel PR #2468 (each micro-batch reduces a per-rank flag and
all ranks skip together) and on the unconditional ``found_inf`` all-reduce of ``ShardedGradScaler`` (torch FSDP).
The training loop is hand-written data parallelism (pytorch/tutorials ``dist_tuto.rst`` ``average_gradients``).

Rank 1's shard has a corrupt record in its third batch (one ``inf`` feature, a stand-in for a bad sample): its
local gradients are not finite at step 2, rank 0's are. The flag goes through an all-reduce (MAX) on every rank,
so both ranks skip step 2 and take the same collectives afterwards.

Looks suspicious but is right: a data-dependent ``continue`` in a loop of collectives, and a local, rank-specific
NaN test right before it; the ``continue`` is keyed on the reduced value, the same on every rank.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 5
CORRUPT = {1: 2}  # rank -> step whose batch holds the bad record


def make_batch(rank, step):
    g = torch.Generator().manual_seed(100 * rank + step)
    x = torch.randn(16, 8, generator=g)
    y = x[:, :2].sum(dim=1, keepdim=True)
    if CORRUPT.get(rank) == step:
        x[3, 5] = float("inf")
    return x, y


def any_rank(flag):
    t = torch.tensor([1.0 if flag else 0.0])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def local_grads_bad(model):
    return any(not torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def should_skip_step(model):
    bad = local_grads_bad(model)
    return any_rank(bad)


def average_gradients(model):
    world = float(dist.get_world_size())
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    skipped = []
    for step in range(STEPS):
        x, y = make_batch(rank, step)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        if should_skip_step(model):
            skipped.append(step)
            continue
        average_gradients(model)
        optimizer.step()
    dist.barrier()
    if rank == 0:
        print(f"skipped steps {skipped} on every rank")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
