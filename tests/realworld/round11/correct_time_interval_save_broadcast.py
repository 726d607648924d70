"""A checkpoint saved "every N seconds of training", the time test taken on rank 0 and broadcast.

Modelled on Lightning's ``ModelCheckpoint`` with ``train_time_interval``
(``lightning/pytorch/callbacks/model_checkpoint.py``, ``on_train_batch_end``: after the time test,
``skip_time = trainer.strategy.broadcast(skip_time)``, "in case we have time differences across ranks broadcast
the decision on whether to checkpoint from rank 0 to avoid possible hangs") and on Megatron-LM's ``training.py``
(``--exit-duration-in-mins``: the elapsed-time flag is all-reduced with MAX before it is acted on).

A hand-written DDP loop. Rank 0 renders a preview after every optimizer step (a 1 s stand-in for writing sample
generations to a dashboard, no collective), so its clock reads about one step later than rank 1's whenever the
time test runs: on their own clocks the ranks would disagree. Each rank computes ``due`` from its own
``time.monotonic()`` and then takes rank 0's value from a broadcast, so both save after the same steps.

Looks suspicious but is right: a time-based condition, a different clock reading on every rank, and rank-0-only
work between the steps; the broadcast makes the decision the same everywhere.
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SAVE_EVERY_SECONDS = 2.5
STEPS = 6


def render_preview(model):
    """Stand-in for the main process writing sample outputs to a dashboard: slow, local, no collective."""
    with torch.no_grad():
        model(torch.zeros(1, 16))
    time.sleep(1.0)


def checkpoint_dir():
    return os.path.join(tempfile.gettempdir(), f"r11_time_ckpt_{os.environ.get('MASTER_PORT', 'local')}")


def save_checkpoint(model, optimizer, step):
    dist.barrier()
    if dist.get_rank() == 0:
        os.makedirs(checkpoint_dir(), exist_ok=True)
        torch.save({"step": step, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()},
                   os.path.join(checkpoint_dir(), f"step{step}.pt"))
    dist.barrier()


def decide_on_rank_zero(flag):
    """Every rank takes rank 0's decision, as Lightning's ``trainer.strategy.broadcast(skip_time)`` does."""
    decision = torch.tensor([int(flag)])
    dist.broadcast(decision, src=0)
    return bool(decision.item())


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)
    saved = []
    last_save = time.monotonic()
    for step in range(STEPS):
        x = torch.randn(64, 16, generator=data)
        y = x[:, :1] - 0.5 * x[:, 1:2]
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            render_preview(model.module)
        now = time.monotonic()
        due = now - last_save >= SAVE_EVERY_SECONDS
        due = decide_on_rank_zero(due)
        if due:
            save_checkpoint(model, optimizer, step)
            saved.append(step)
            last_save = now
    dist.barrier()
    if rank == 0:
        print(f"saved after steps {saved}; final loss {loss.item():.4f}")
        shutil.rmtree(checkpoint_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
