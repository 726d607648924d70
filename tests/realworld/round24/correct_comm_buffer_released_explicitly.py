"""A communication buffer released explicitly on every rank, never from ``__del__``.

Models pytorch/pytorch issue #195500 (a collective free attached to garbage collection deadlocks when one
rank keeps the tensor alive), vllm-project/vllm PR #4508 (the collective destroy taken out of ``__del__``:
"we cannot rely on Python's garbage collection") and the Trilinos review of a barrier in a destructor
(#6452).

The learner's ``StagingBuffer`` stands in for a registered / symmetric buffer whose release is a barrier.
Each step allocates a new buffer for the gradient bucket; rank 0 keeps the buffers of the last steps in
``MemoryTracker.recent`` to print a memory report. Correct: the previous buffer is released with an explicit
``release()`` call that every rank makes at the same point of the step; ``__del__`` makes no collective, so
rank 0's extra references only delay when the memory is reclaimed.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
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
            dist.barrier()

    def __del__(self):
        if not self.released:
            print("warning: StagingBuffer collected without release()")


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
        if buf is not None:
            buf.release()
        buf = StagingBuffer(numel)
        if rank == 0:
            tracker.track(buf)
        buf.tensor.copy_(flat_grads(model))
        dist.all_reduce(buf.tensor)
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
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), MemoryTracker())
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
