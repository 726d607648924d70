"""A learner's DDP script that creates its run directory on every rank with ``os.makedirs(run_dir, exist_ok=True)``.

Models: facebookresearch/ClassyVision PR #182 (``os.makedirs(args.checkpoint_folder)`` on every process), allenai/allennlp
issue #3841, albertfgu/diffwave-sashimi issue #8, and the fix of Nixtla/neuralforecast PR #1460 and pytorch PR #126496
(``exist_ok=True``: "Make log directory creation idempotent").

What it does: rank 0 makes a scratch root with ``tempfile.mkdtemp`` and broadcasts it; every rank runs
``setup_output_dir``, which creates ``<root>/<experiment>`` and ``checkpoints`` (both with ``exist_ok=True``, so the
rank that loses the race to create them goes on), writes its own log file there; the ranks train a small regression
model with DDP and rank 0 saves a checkpoint each epoch. Correct: every rank calls ``makedirs`` at the same time, and
whichever creates the folder, none raises.
"""

import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EXPERIMENT = "regression-baseline"


def shared_scratch_root():
    holder = [tempfile.mkdtemp(prefix="r19_mkdirs_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def setup_output_dir(root, experiment):
    run_dir = os.path.join(root, experiment)
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(os.path.join(run_dir, "checkpoints"), exist_ok=True)
    with open(os.path.join(run_dir, f"log_rank{dist.get_rank()}.txt"), "w") as log:
        log.write(f"rank {dist.get_rank()} of {dist.get_world_size()}\n")
    return run_dir


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = x @ torch.randn(8, 1, generator=g) + 0.1 * torch.randn(64, 1, generator=g)
    return TensorDataset(x, y)


def train(run_dir):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = make_data()
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            torch.save(model.module.state_dict(), os.path.join(run_dir, "checkpoints", f"epoch{epoch}.pt"))
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.barrier()


def worker():
    root = shared_scratch_root()
    try:
        run_dir = setup_output_dir(root, EXPERIMENT)
        train(run_dir)
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
