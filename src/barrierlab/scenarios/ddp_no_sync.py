"""Gradient accumulation with DDP's no_sync(): one all_reduce per optimizer step instead of one per micro-batch."""

import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from barrierlab import span
from barrierlab.scenarios import torchrun_main
from barrierlab.scenarios.ddp_step import allreduce_hook, tiny_model


def accumulate(ddp, micro_batches, use_no_sync):
    """Add up the gradients of several micro-batches; with no_sync, only the last backward all-reduces."""
    for i, (x, y) in enumerate(micro_batches):
        last = i == len(micro_batches) - 1
        with ddp.no_sync() if use_no_sync and not last else contextlib.nullcontext():
            loss = nn.functional.mse_loss(ddp(x), y) / len(micro_batches)
            loss.backward()


def scenario(micro_batches=4, steps=3, watch_buckets=True):
    rank = dist.get_rank()
    torch.manual_seed(0)
    with span("DDP(model)"):
        ddp = DDP(tiny_model())  # default 25 MB buckets: this tiny model's gradients fit in one
    if watch_buckets:
        ddp.register_comm_hook(state=None, hook=allreduce_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + rank)
    same = []
    for step in range(steps):
        batches = [(torch.randn(32, 8, generator=data), torch.randn(32, 2, generator=data))
                   for _ in range(micro_batches)]
        grads = {}
        for use_no_sync in (False, True):  # the same micro-batches, from the same weights, both ways
            optimizer.zero_grad()
            label = "no_sync" if use_no_sync else "sync every micro-batch"
            with span(f"{label}, step {step}", kind="compute" if use_no_sync else "other"):
                accumulate(ddp, batches, use_no_sync)
            grads[use_no_sync] = torch.cat([p.grad.flatten() for p in ddp.parameters()])
        same.append(torch.allclose(grads[False], grads[True], atol=1e-6))
        optimizer.step()
    return same  # per step: did both ways give the same averaged gradients?


if __name__ == "__main__":
    torchrun_main(scenario)
