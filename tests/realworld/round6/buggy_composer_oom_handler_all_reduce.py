"""Automatic microbatching with an out-of-memory handler that tells the other ranks from inside ``except``.

Modelled on mosaicml/composer PR #1319 ("Avoid Deadlock with Autograd": with ``grad_accum=auto`` a subset of
ranks OOMs, "some ranks start to retry the batch, while others are stuck in the gradient reduce") and PR #2117
("Auto Microbatching -- The Final Form": every rank checks after the forward whether any rank OOMed). Written
here; the OOM is simulated by a per-rank memory budget (rank 1 has half of rank 0's), the model is a tiny MLP,
and the gradients are averaged by hand once per batch after the microbatches, as Composer's reducer does.

Bug: the rank that hits the OOM announces it with an all-reduce inside its ``except`` branch and retries the
batch with a smaller microbatch. The rank that did not OOM never enters the handler, so its next collective is
the gradient all-reduce: the two ranks pair the flag with the gradients, and the OOM rank is one collective
ahead from then on. On gloo the first mismatched pair (4 bytes of flag against 132 bytes of gradients) aborts
the OOM rank in the flag's all-reduce, and the other rank's gradient all-reduce then loses its peer.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
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
    dist.all_reduce(flat)  # WAITS
    flat /= dist.get_world_size()
    offset = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))
        offset += n


def train_batch(model, opt, x, y, microbatch, budget):
    opt.zero_grad()
    for start in range(0, x.shape[0], microbatch):
        xb, yb = x[start:start + microbatch], y[start:start + microbatch]
        loss = forward(model, xb, yb, budget) * (xb.shape[0] / x.shape[0])
        loss.backward()
    sync_gradients(model)  # WAITS
    opt.step()


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
        try:
            train_batch(model, opt, x, y, microbatch, budget)  # WAITS
        except OutOfMemory:
            found_oom = torch.ones(1)
            dist.all_reduce(found_oom, op=dist.ReduceOp.MAX)  # BUG  # WAITS
            microbatch //= 2
            train_batch(model, opt, x, y, microbatch, budget)
    return microbatch


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
