"""A checkpoint saved "every N seconds of training", each rank reading its own clock.

Modelled on Lightning's ``ModelCheckpoint`` with ``train_time_interval``
(``lightning/pytorch/callbacks/model_checkpoint.py``, ``on_train_batch_end``: the time test is followed by
``trainer.strategy.broadcast(skip_time)`` with the comment "in case we have time differences across ranks
broadcast the decision on whether to checkpoint from rank 0 to avoid possible hangs") and on Megatron-LM's
``training.py`` ``train()`` (``--exit-duration-in-mins``: the elapsed-time test is put in a tensor and
all-reduced with MAX before any rank acts on it). This item is a hand-written DDP loop that keeps the time test
and drops the agreement.

Rank 0 renders a preview of the model after every optimizer step (a stand-in for writing sample generations to a
dashboard: 1 s, no collective), so at the moment of the time test rank 0's clock is always about one step ahead
of rank 1's (rank 1 is already waiting in the next step's gradient all-reduce for rank 0 to finish its preview).
The interval is chosen to fall between the two: rank 0 decides to save after step 2, rank 1 does not.

Bug: ``due`` is computed from each rank's own ``time.monotonic()``. Rank 0 enters ``save_checkpoint`` and waits
in its first barrier; rank 1 trains on and waits in the next step's ``loss.backward()`` (DDP's gradient
all-reduce). Neither collective has a partner.
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

KIND = "buggy"
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
    dist.barrier()  # WAITS
    if dist.get_rank() == 0:
        os.makedirs(checkpoint_dir(), exist_ok=True)
        torch.save({"step": step, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()},
                   os.path.join(checkpoint_dir(), f"step{step}.pt"))
    dist.barrier()


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
        loss.backward()  # WAITS
        optimizer.step()
        if rank == 0:
            render_preview(model.module)
        now = time.monotonic()
        due = now - last_save >= SAVE_EVERY_SECONDS  # BUG
        if due:
            save_checkpoint(model, optimizer, step)  # WAITS
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
