"""Rank 0 re-renders the results plots after every epoch, inline, under a short process-group timeout.

Models ultralytics/yolov5 ``train.py`` (``dist.init_process_group(..., timeout=timedelta(seconds=60))``, removed
again in PR #4422 "Remove DDP process group timeout" because rank-0-only work ran past it; ``plot_results``
reading the whole ``results.csv`` on ``RANK in {-1, 0}``), pytorch/torchtrain PR #103 (a short default
timeout "to find out asap about a failure", tested with a rank-0 sleep) and ultralytics' ``@threaded``
decorator, which runs plotting off the training thread.

The learner sets a 4 s timeout so that a hang fails fast. After each epoch rank 0 calls ``plot_results``,
which re-reads every row of the results file and redraws every figure; its cost grows with the rows
(``plot_cost``: 0.4 s, 1.6 s, 6.4 s, a stand-in for the rendering). Rank 1 goes straight on to the next
epoch (and, at the end, to the final barrier) and waits there for rank 0.

BUG: the rank-0-only plotting runs inline on the training thread. The waits of epochs 1 and 2 fit in the
timeout; after the last epoch rank 0 plots for 6.4 s while rank 1 waits in the final barrier, whose 4 s
timeout runs out first.
"""
import os
import shutil
import tempfile
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4

EPOCHS = 3
STEPS_PER_EPOCH = 4


def threaded(func):
    def wrapper(*args, **kwargs):
        thread = threading.Thread(target=func, args=args, kwargs=kwargs)
        thread.start()
        return thread
    return wrapper


def shared_tmpdir(prefix):
    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def plot_cost(rows):
    """Stand-in for matplotlib: every figure is redrawn for every row of the results file."""
    return 0.1 * 4 ** rows


def plot_results(csv_path):
    with open(csv_path) as f:
        rows = f.read().strip().splitlines()[1:]
    time.sleep(plot_cost(len(rows)))
    with open(csv_path.replace(".csv", ".png.txt"), "w") as f:
        f.write(f"{len(rows)} epochs plotted\n")


def train_one_epoch(model, opt, g):
    total = 0.0
    for _ in range(STEPS_PER_EPOCH):
        x = torch.randn(16, 4, generator=g)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5], [0.0]])
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    return total / STEPS_PER_EPOCH


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    save_dir = shared_tmpdir("r24_plots_")
    csv_path = os.path.join(save_dir, "results.csv")
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    try:
        if rank == 0:
            with open(csv_path, "w") as f:
                f.write("epoch,train_loss\n")
        for epoch in range(EPOCHS):
            loss = train_one_epoch(model, opt, g)
            if rank == 0:
                with open(csv_path, "a") as f:
                    f.write(f"{epoch},{loss:.5f}\n")
                plot_results(csv_path)  # BUG
        dist.barrier()  # WAITS
    finally:
        if rank == 0:
            shutil.rmtree(save_dir, ignore_errors=True)
    if rank == 0:
        print(f"final train loss {loss:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
