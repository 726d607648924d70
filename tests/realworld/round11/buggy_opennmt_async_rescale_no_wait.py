"""Gradients all-reduced asynchronously in a flat buffer, then divided and copied back without waiting.

Modelled on OpenNMT-py ``onmt/utils/distributed.py`` ``all_reduce_and_rescale_tensors`` (gradients packed into a
flat buffer, ``torch.distributed.all_reduce(buffer_t[:offset], async_op=True)`` followed at once by
``buffer_t.div_(rescale_denom)`` and the copy back into the gradients) and on OpenNMT/OpenNMT-py issue #2295
("Since the ``all_reduce`` operation is async, the communication may have not complemented yet when the ``div_``
operation is revoked"; the maintainers measured 2-GPU training that did not match 1-GPU training until the flag
went back to synchronous). The trainer around it (hand-written data parallelism, no DDP) follows OpenNMT's
``Trainer._gradient_accumulation``: backward, then ``all_reduce_and_rescale_tensors`` of the gradients, then the
optimizer step.

Bug: the work handle of the asynchronous all-reduce is dropped. The rescale and the copy back read the buffer
while gloo's worker thread is still reducing into it, so each rank steps with (mostly) its own gradients and the
replicas drift apart. Nothing hangs: the run fails only because the script compares the replicas at the end
(a checksum of the parameters all-gathered from every rank, as Megatron-LM's
``check_param_hashes_across_dp_replicas`` does) and every rank raises. Without that check it would exit 0 with
two different models.
"""

import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
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
        dist.all_reduce(buffer_t[:offset], async_op=True)  # BUG
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
