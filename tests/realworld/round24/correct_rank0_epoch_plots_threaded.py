"""Rank 0 re-renders the results plots after every epoch on a background thread, under a short timeout.

Models ultralytics/yolov5 ``train.py`` (a 60 s process-group timeout, removed in PR #4422 because
rank-0-only work ran past it; ``plot_results`` reading the whole ``results.csv`` on ``RANK in {-1, 0}``),
pytorch/torchtrain PR #103 (short timeouts "to find out asap about a failure") and ultralytics'
``@threaded`` decorator, which runs plotting off the training thread.

The learner keeps the 4 s timeout. After each epoch rank 0 starts ``plot_results`` (cost 0.4 s, 1.6 s,
6.4 s, a stand-in for the rendering that grows with the rows of the results file). Correct: the plotting is
``@threaded``, so rank 0 reaches every collective (the next epoch's gradient all-reduces, the final barrier)
as soon as rank 1 does; rank 0 joins the plot threads after the final barrier, when no rank waits for it.
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

KIND = "correct"
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


@threaded
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
    plot_threads = []
    try:
        if rank == 0:
            with open(csv_path, "w") as f:
                f.write("epoch,train_loss\n")
        for epoch in range(EPOCHS):
            loss = train_one_epoch(model, opt, g)
            if rank == 0:
                with open(csv_path, "a") as f:
                    f.write(f"{epoch},{loss:.5f}\n")
                plot_threads.append(plot_results(csv_path))
        dist.barrier()
        for thread in plot_threads:
            thread.join()
    finally:
        if rank == 0:
            shutil.rmtree(save_dir, ignore_errors=True)
    if rank == 0:
        print(f"final train loss {loss:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
