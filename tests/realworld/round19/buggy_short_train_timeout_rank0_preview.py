"""torchtitan's two timeouts (a long one for start-up, a short one from the second step on) in a learner's DDP
script whose rank 0 renders and uploads a preview at the end of the epoch while the others wait in a barrier.

Models: pytorch/torchtitan ``distributed/utils.py`` ``set_pg_timeouts`` (a barrier, then
``distributed_c10d._set_pg_timeout`` on every group, called from ``train.py`` after the first step with
``comm.train_timeout_seconds``; ``init_timeout_seconds`` is only for start-up and the first step), and Lightning's
``fabric/utilities/distributed.py`` ``_InfiniteBarrier`` (a gloo group with a 10000-day timeout for "a long-running
operation on a subset of ranks that should not be subject to the regular collective timeout").

What it does: a DDP regression model trains for two epochs; after the first step every rank lowers the timeout of the
default group from 20 s (``TIMEOUT``) to ``TRAIN_TIMEOUT`` (3 s), as torchtitan does. After the first epoch rank 0
renders a preview and uploads it (``render_and_upload_preview``: a stand-in that takes 5 s) and every rank meets in
``dist.barrier()``.

The bug: the barrier that waits out rank 0's preview runs on the default group, whose timeout is now 3 s: rank 1
raises "Timed out waiting 3000ms" in it, and rank 0, once its upload is done, finds its peer gone in the same barrier.
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

TRAIN_TIMEOUT = timedelta(seconds=3)


def set_pg_timeouts(timeout):
    # every rank reaches the reduction point before any collective runs under the shorter timeout
    dist.barrier()
    dist.distributed_c10d._set_pg_timeout(timeout, None)


def render_and_upload_preview(model, out_dir, epoch):
    """Stand-in for the outside world: sampling a preview on rank 0 and uploading it takes 5 s."""
    with torch.no_grad():
        preview = model(torch.linspace(-1, 1, 32).reshape(4, 8))
    time.sleep(5.0)
    torch.save(preview, os.path.join(out_dir, f"preview_epoch{epoch}.pt"))


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    return TensorDataset(x, x.sum(1, keepdim=True).tanh())


def train(out_dir):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = make_data()
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    step = 0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step == 1:
                set_pg_timeouts(TRAIN_TIMEOUT)
        if epoch == 0:
            if rank == 0:
                render_and_upload_preview(model.module, out_dir, epoch)
            dist.barrier()  # BUG # WAITS
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


def worker():
    holder = [tempfile.mkdtemp(prefix="r19_preview_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    try:
        train(holder[0])  # WAITS
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(holder[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
