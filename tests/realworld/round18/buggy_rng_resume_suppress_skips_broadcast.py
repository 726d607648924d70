"""Resume whose data-position broadcast sits inside ``contextlib.suppress(FileNotFoundError)`` with the RNG-file read.

Models: transformers ``Trainer._load_rng_state`` (reads ``rng_state_{process_index}.pth``; a missing file is only
logged: "Didn't find an RNG file for process ..., reproducibility is not guaranteed"), the PaddleNLP variant of that
method that also makes a collective (``broadcast_object_list`` of the RNG states from rank 0), and the standard
library's ``contextlib.suppress`` (which leaves the whole ``with`` block at the first suppressed exception).

What it does: a checkpoint written by an earlier job with two processes (model weights, ``rng_state_0.pth``,
``rng_state_1.pth``, each with the number of batches already consumed) is resumed by three processes. Every rank
builds the DDP model, loads the weights, then ``load_rng_state`` restores its RNG and agrees on the data position:
rank 0's ``batches_seen`` is broadcast so that all ranks skip the same number of batches. Then training goes on.

The bug: the broadcast is inside the ``with contextlib.suppress(FileNotFoundError):`` block that also reads the
rank's own RNG file (``# BUG``). Rank 2 has no ``rng_state_2.pth`` (the old job had two processes), its
``torch.load`` raises, the exception is suppressed and the rest of the block, the broadcast included, is skipped.
Ranks 0 and 1 wait in the broadcast; rank 2 starts training with 0 batches skipped and waits in DDP's gradient
all-reduce. All three time out.
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

KIND = "buggy"
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
    with contextlib.suppress(FileNotFoundError):
        state = torch.load(os.path.join(ckpt, f"rng_state_{rank}.pth"), weights_only=False)
        random.setstate(state["python"])
        torch.set_rng_state(state["cpu"])
        position = torch.tensor([state["batches_seen"]])
        dist.broadcast(position, src=0)  # BUG  # WAITS
        return int(position)
    print(f"rank {rank}: didn't find an RNG file, reproducibility is not guaranteed")
    return 0


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
        skip = load_rng_state(ckpt, rank)  # WAITS
        g = torch.Generator().manual_seed(5)
        data = torch.randn(8 * world * 4, 6, generator=g)
        target = torch.randint(0, 3, (len(data),), generator=g)
        batches = [(data[i:i + 4], target[i:i + 4]) for i in range(4 * rank, len(data), 4 * world)]
        for step, (x, y) in enumerate(batches):
            if step < skip:
                continue
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()  # WAITS
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
