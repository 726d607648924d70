"""A skip-the-step-on-NaN guard whose cross-rank check sits behind a short-circuiting ``or``.

Modelled on radiocosmology/draco PR #233 ("perf(task): only share across ranks if nan is found": the allreduce of
the NaN flag made conditional on the local check; the reviewer: "All ranks need to participate in the collective
``allreduce`` call, but ones where ``found == False`` would skip it which would usually lead to everything
hanging"), on NVIDIA-NeMo PR #578 ("Initial fix for hanging bug when NaN/inf loss is encountered": the rank that
saw the NaN left the loop on its own) and on NVIDIA-NeMo/Automodel PR #2468 (skip-vs-step decided in lockstep from
a reduced flag). The training loop is hand-written data parallelism (pytorch/tutorials ``dist_tuto.rst``
``average_gradients``): backward, the guard on the local gradients, then the gradient all-reduce and the step.

Rank 1's shard has a corrupt record in its third batch (a stand-in for a bad sample: one ``inf`` feature), so its
local gradients are not finite at step 2.

Bug: ``bad or any_rank(bad)``. The rank whose own gradients are bad already knows the answer, so Python never
calls ``any_rank`` there: rank 1 skips step 2 without the flag's all-reduce, while rank 0 makes it. From then on
rank 0's flag all-reduce of step k pairs with rank 1's of step k + 1 (same size, no error, both agree to step),
the gradient averages mix different steps, and at the end rank 1 waits in the final barrier while rank 0 waits
in the flag all-reduce of its last step.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
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
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # WAITS
    return bool(t.item())


def local_grads_bad(model):
    return any(not torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def should_skip_step(model):
    bad = local_grads_bad(model)
    return bad or any_rank(bad)  # BUG # WAITS


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
        if should_skip_step(model):  # WAITS
            skipped.append(step)
            continue
        average_gradients(model)
        optimizer.step()
    dist.barrier()  # WAITS
    if rank == 0:
        print(f"skipped steps {skipped}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
