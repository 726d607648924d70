"""torchtitan's two timeouts (a long one for start-up, a short one from the second step on) in a learner's DDP
script whose rank 0 renders and uploads a preview at the end of the epoch while the others wait on a group with an
"infinite" timeout.

Models: pytorch/torchtitan ``distributed/utils.py`` ``set_pg_timeouts`` (barrier, then
``distributed_c10d._set_pg_timeout`` on every group after the first step), and Lightning's
``fabric/utilities/distributed.py`` ``_InfiniteBarrier`` (``new_group(backend="gloo", timeout=timedelta(days=10000))``
for a long-running operation on a subset of ranks).

What it does: a DDP regression model trains for two epochs; every rank creates the long-timeout gloo group right
after the DDP constructor; after the first step the default group's timeout drops from 20 s to 3 s. After the first
epoch rank 0 renders and uploads a preview (a 5 s stand-in) and every rank meets in a barrier on the long-timeout
group. Correct: the waits of rank 1 fall under the long timeout; only the training collectives run under 3 s.
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

KIND = "correct"
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
    # Lightning's _InfiniteBarrier: a gloo group of its own whose timeout the reduction below does not touch
    long_wait = dist.new_group(backend="gloo", timeout=timedelta(days=10000))
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
            dist.barrier(group=long_wait)
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


def worker():
    holder = [tempfile.mkdtemp(prefix="r19_preview_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    try:
        train(holder[0])
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(holder[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
