"""Resume that suppresses only the missing RNG file and broadcasts the data position on every rank.

Models: transformers ``Trainer._load_rng_state`` (a missing ``rng_state_{process_index}.pth`` is logged, "Didn't
find an RNG file for process ...", and training goes on), the PaddleNLP variant of that method that makes a
collective (``broadcast_object_list`` of the RNG states from rank 0, reached by every rank), and the standard
library's ``contextlib.suppress``.

What it does: a checkpoint written by an earlier two-process job (weights, ``rng_state_0.pth``, ``rng_state_1.pth``
with the number of batches consumed) is resumed by three processes. Every rank builds the DDP model and loads the
weights; ``load_rng_state`` wraps only the read of the rank's own RNG file in ``contextlib.suppress``, restores the
RNG when a file was found (rank 2 has none and says so), and then every rank takes part in the broadcast of rank 0's
``batches_seen``. All ranks skip the same number of batches and train on. Correct.
"""
import contextlib
import datetime
import os
import random
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20


def shared_dir():
    holder = [tempfile.mkdtemp(prefix="r18_resume_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def write_previous_job_checkpoint(ckpt):
    # stand-in for the earlier two-process job: weights plus one RNG file per process
    torch.manual_seed(123)
    torch.save(nn.Linear(6, 3).state_dict(), os.path.join(ckpt, "model.pt"))
    for process_index in range(2):
        torch.save({"python": random.getstate(), "cpu": torch.get_rng_state(), "batches_seen": 3},
                   os.path.join(ckpt, f"rng_state_{process_index}.pth"))


def load_rng_state(ckpt, rank):
    state = None
    with contextlib.suppress(FileNotFoundError):
        state = torch.load(os.path.join(ckpt, f"rng_state_{rank}.pth"), weights_only=False)
    if state is None:
        print(f"rank {rank}: didn't find an RNG file, reproducibility is not guaranteed")
    else:
        random.setstate(state["python"])
        torch.set_rng_state(state["cpu"])
    position = torch.tensor([state["batches_seen"] if state is not None else -1])
    dist.broadcast(position, src=0)  # rank 0's file always exists: the job only grew
    return int(position)


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    ckpt = shared_dir()
    try:
        if rank == 0:
            write_previous_job_checkpoint(ckpt)
        dist.barrier()
        model = DDP(nn.Linear(6, 3))
        model.module.load_state_dict(torch.load(os.path.join(ckpt, "model.pt")))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        skip = load_rng_state(ckpt, rank)
        g = torch.Generator().manual_seed(5)
        data = torch.randn(8 * world * 4, 6, generator=g)
        target = torch.randint(0, 3, (len(data),), generator=g)
        batches = [(data[i:i + 4], target[i:i + 4]) for i in range(4 * rank, len(data), 4 * world)]
        for step, (x, y) in enumerate(batches):
            if step < skip:
                continue
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.barrier()
        if rank == 0:
            print(f"resumed at batch {skip}, final loss {loss.item():.4f}")
    finally:
        if rank == 0:
            shutil.rmtree(ckpt, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
