"""Gradients all-reduced asynchronously in a flat buffer, waited for, then divided and copied back.

Modelled on OpenNMT-py ``onmt/utils/distributed.py`` ``all_reduce_and_rescale_tensors`` (gradients packed into a
flat buffer of at most ``buffer_size`` bytes, all-reduced, divided by ``rescale_denom`` and copied back) and on the
fix discussed in OpenNMT/OpenNMT-py issue #2295: the asynchronous all-reduce's result is used only after the
operation has completed. Here the ``async_op=True`` call is kept and its work handle is waited on before the
rescale (the synchronous call the issue went back to is equivalent); the trainer around it follows OpenNMT's
``Trainer._gradient_accumulation`` with hand-written data parallelism (no DDP).

Looks suspicious but is right: ``async_op=True`` on a buffer that is read a few lines later, a bucket loop that
issues a data-size-dependent number of all-reduces (the same on every rank: the model is the same), and a
``p.grad is not None`` filter (every parameter gets a gradient on every rank). At the end the script all-gathers a
checksum of the parameters (Megatron-LM's ``check_param_hashes_across_dp_replicas`` idea) and the replicas agree.
"""

import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

BUFFER_BYTES = 1 << 20
STEPS = 6


def all_reduce_and_rescale_tensors(tensors, rescale_denom, buffer_size=BUFFER_BYTES):
    """Sum ``tensors`` over the ranks in buckets of at most ``buffer_size`` bytes and divide by ``rescale_denom``."""
    buffer_t = tensors[0].new_zeros(math.ceil(buffer_size / tensors[0].element_size()))
    pending = []

    def all_reduce_buffer():
        offset = 0
        for t in pending:
            numel = t.numel()
            buffer_t[offset:offset + numel].copy_(t.view(-1))
            offset += numel
        work = dist.all_reduce(buffer_t[:offset], async_op=True)
        work.wait()
        buffer_t.div_(rescale_denom)
        offset = 0
        for t in pending:
            numel = t.numel()
            t.view(-1).copy_(buffer_t[offset:offset + numel])
            offset += numel

    filled = 0
    for t in tensors:
        size = t.numel() * t.element_size()
        if filled + size > buffer_size and pending:
            all_reduce_buffer()
            pending, filled = [], 0
        pending.append(t)
        filled += size
    if pending:
        all_reduce_buffer()


def check_replicas_match(model):
    """Every rank all-gathers every rank's parameter checksum and raises if they differ."""
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
    gathered = [torch.zeros_like(checksum) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, checksum)
    values = [g.item() for g in gathered]
    if max(values) - min(values) > 1e-6:
        raise RuntimeError(f"data-parallel replicas diverged: parameter checksums {values}")
    return values[0]


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(500 + rank)
    for step in range(STEPS):
        x = torch.randn(32, 64, generator=data)
        y = torch.randint(0, 8, (32,), generator=data)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        all_reduce_and_rescale_tensors(grads, float(world))
        optimizer.step()
    checksum = check_replicas_match(model)
    if rank == 0:
        print(f"replicas agree after {STEPS} steps (checksum {checksum:.6f}); last loss {loss.item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
