"""Automatic microbatching where every rank agrees on "did anyone run out of memory" before it goes on.

Modelled on mosaicml/composer PR #2117 ("Auto Microbatching -- The Final Form": "We now do a check after the
forward to see if any other ranks OOMed"; the flag is all-reduced with MAX on every rank and every rank halves
its microbatch and retries) and ``composer/trainer/trainer.py`` (``_train_batch``: ``found_cuda_oom`` reduced
with ``dist.all_reduce(found_cuda_oom_tensor, reduce_operation='MAX')``). Written here; the OOM is simulated by a
per-rank memory budget, and the gradients are averaged by hand once per batch after the microbatches.

Looks suspicious: the ``except`` branch runs on rank 1 only and the two ranks end up with different local
work, but the OOM flag is all-reduced on every rank after every attempt, the retry decision comes from the
reduced flag, and the gradient all-reduce happens exactly once per batch on every rank.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

BATCH = 8
STEPS = 4


class OutOfMemory(RuntimeError):
    pass


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


def forward(model, x, y, budget):
    if x.shape[0] > budget:  # stands in for "CUDA out of memory. Tried to allocate ..."
        raise OutOfMemory(f"out of memory: microbatch {x.shape[0]} > budget {budget}")
    return torch.nn.functional.mse_loss(model(x), y)


def sync_gradients(model):
    flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))
        offset += n


def accumulate(model, opt, x, y, microbatch, budget):
    """Forward/backward over the microbatches; True if this rank ran out of memory (no collective inside)."""
    opt.zero_grad()
    try:
        for start in range(0, x.shape[0], microbatch):
            xb, yb = x[start:start + microbatch], y[start:start + microbatch]
            loss = forward(model, xb, yb, budget) * (xb.shape[0] / x.shape[0])
            loss.backward()
    except OutOfMemory:
        return True
    return False


def worker():
    rank = dist.get_rank()
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    budget = 8 if rank == 0 else 4  # rank 1 has the smaller "device"
    microbatch = BATCH
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(STEPS):
        x = torch.randn(BATCH, 6, generator=gen)
        y = x.sum(dim=1, keepdim=True)
        while True:
            oom = accumulate(model, opt, x, y, microbatch, budget)
            found_oom = torch.tensor([1.0 if oom else 0.0])
            dist.all_reduce(found_oom, op=dist.ReduceOp.MAX)
            if found_oom.item() == 0.0:
                break
            microbatch = max(1, microbatch // 2)  # every rank halves, from the reduced flag
        sync_gradients(model)
        opt.step()
    assert microbatch == 4, microbatch
    return microbatch


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
