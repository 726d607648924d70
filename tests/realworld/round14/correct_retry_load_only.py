"""A retry decorator around the checkpoint read only; the resume's collective runs once on every rank.

Models: facebookresearch/vjepa2 ``src/utils/checkpoint_loader.py`` (``robust_checkpoint_loader``: retries only the
``torch.load`` of a checkpoint, with back-off, up to ``max_retries``) and generic ``functools.wraps`` retry
decorators around storage calls (e.g. pycarol's ``retry_check_sum``); the resume order of the PyTorch DDP
tutorial / pytorch/examples (rank 0 knows the checkpoint, every rank loads it).

What it does: rank 0 writes a step-3 checkpoint to a shared directory (from rank 0 by ``broadcast_object_list``);
a barrier follows. ``resume`` has rank 0 find the newest checkpoint and broadcast its path; every rank reads it
through ``robust_read`` (the decorated function) and loads the weights. ``SharedStorage`` stands in for a network
mount whose first read on rank 1 fails with a stale handle; rank 1 retries the read alone, which is a local file
operation, so the ranks stay in step. Training continues for 3 steps with gradients all-reduced by hand.
"""
import functools
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def retry(times=3, exceptions=(OSError,), delay=0.2):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for attempt in range(1, times + 1):
                try:
                    return fn(*args, **kwargs)
                except exceptions as e:
                    if attempt == times:
                        raise
                    print(f"rank {dist.get_rank()}: {fn.__name__} failed ({e}); retry {attempt}/{times - 1}")
                    time.sleep(delay)
        return wrapper
    return decorator


class SharedStorage:
    """Stand-in for a network mount: the first read on rank 1 fails with a stale file handle."""

    def __init__(self, root):
        self.root, self.reads = root, 0

    def write(self, name, obj):
        torch.save(obj, os.path.join(self.root, name))

    def read(self, name):
        self.reads += 1
        if dist.get_rank() == 1 and self.reads == 1:
            raise OSError(116, "Stale file handle", name)
        return torch.load(os.path.join(self.root, name))

    def latest(self):
        names = sorted(n for n in os.listdir(self.root) if n.startswith("step_"))
        return names[-1]


@retry(times=3, exceptions=(OSError,))
def robust_read(storage, name):
    return storage.read(name)


def resume(model, storage):
    box = [storage.latest() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    state = robust_read(storage, box[0])
    model.load_state_dict(state["model"])
    return state["step"]


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    opt.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="r14_retry_ckpt_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    storage = SharedStorage(box[0])
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if rank == 0:
            storage.write("step_00003.pt", {"model": model.state_dict(), "step": 3})
        dist.barrier()
        step = resume(model, storage)
        g = torch.Generator().manual_seed(rank)
        for step in range(step + 1, step + 4):
            loss = train_step(model, opt, torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g))
        print(f"rank {rank}: resumed, step {step} loss {loss:.4f}")
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(box[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
