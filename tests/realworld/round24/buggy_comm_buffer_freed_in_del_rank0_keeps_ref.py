"""A communication buffer whose ``__del__`` makes a collective "free", kept alive on rank 0 by a debug list.

Models pytorch/pytorch issue #195500 (``symm_mem.empty()`` attaches a deleter that issues a collective free
from Python garbage collection: "Rank 0 drops the tensor; rank 1 does not ... enters the collective alone
and both ranks hang"), vllm-project/vllm PR #4508 (a collective ``ncclCommDestroy`` in ``__del__`` removed
because "we cannot rely on Python's garbage collection") and the Trilinos review of a barrier in a
destructor (#6452).

The learner's ``StagingBuffer`` stands in for a registered / symmetric buffer: ``__init__`` and the release
are collective (the release is a barrier, "no peer may still write into it"), and the release lives in
``__del__``. Each step allocates a new buffer for the gradient bucket and rebinds the name, so every rank
frees the old buffer on the same line. Rank 0 also keeps the buffers of the last steps in
``MemoryTracker.recent`` to print a memory report.

BUG: the tracker, on rank 0 only, holds a reference, so rank 0 does not run ``__del__`` when the name is
rebound at step 1. Rank 1 enters the release barrier alone while rank 0 goes on to the step's
all-reduce; the ranks' collectives no longer pair.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 6


class StagingBuffer:
    def __init__(self, numel):
        self.tensor = torch.zeros(numel)
        self.released = False

    def release(self):
        if not self.released:
            self.released = True
            dist.barrier()  # WAITS

    def __del__(self):
        self.release()  # WAITS


class MemoryTracker:
    def __init__(self, keep=3):
        self.keep = keep
        self.recent = []

    def track(self, buf):
        self.recent = (self.recent + [buf])[-self.keep:]

    def report(self):
        return sum(b.tensor.numel() * b.tensor.element_size() for b in self.recent)


def flat_grads(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def unflatten_into_grads(model, flat):
    offset = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))
        offset += n


def train(model, opt, tracker):
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(rank)
    numel = sum(p.numel() for p in model.parameters())
    buf = None
    for step in range(STEPS):
        x = torch.randn(8, 4, generator=g)
        loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        buf = StagingBuffer(numel)  # WAITS
        if rank == 0:
            tracker.track(buf)  # BUG
        buf.tensor.copy_(flat_grads(model))
        dist.all_reduce(buf.tensor)  # WAITS
        unflatten_into_grads(model, buf.tensor / world)
        opt.step()
        if rank == 0 and step % 2 == 0:
            print(f"step {step} loss {loss.item():.4f}, staging memory {tracker.report()} bytes")
    buf.release()


def worker():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), MemoryTracker())  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
