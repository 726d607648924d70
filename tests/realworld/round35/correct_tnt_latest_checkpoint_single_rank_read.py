"""torchtnt: a rank-0-only export step reads the newest checkpoint with the torch.distributed-unaware
``_get_latest_checkpoint_path`` -- the fix of meta-pytorch/tnt PR #936.

Models: meta-pytorch/tnt PR #936 ("extract get_latest_checkpoint_path to a single rank function": the broadcasting
``get_latest_checkpoint_path`` hangs when "an operation involving checkpoint read + other actions is only done on rank
0"; the fix: "Write a `_get_latest_checkpoint_path` which is torch.distributed unaware"), and PR #645 (the
``rank_zero_read_and_broadcast`` decorator). Code modelled (written here, not copied):
``torchtnt/framework/callbacks/_checkpoint_utils.py`` / ``torchtnt/utils/checkpoint.py`` --
``rank_zero_read_and_broadcast``, ``get_latest_checkpoint_path``, ``_get_latest_checkpoint_path``, the
``BaseCheckpointer`` saving a folder per epoch on rank 0 followed by a barrier; the ``train`` loop calling each
callback's ``on_train_epoch_end`` (stand-ins: a DDP train loop, a small regression model, an export callback).

Inside the rank-0 block only the single-rank reader is called; the broadcasting util stays for code that every rank
runs (it is not called here). 2 ranks.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def rank_zero_read_and_broadcast(func):
    def wrapper(*args, **kwargs):
        value = None
        if dist.get_rank() == 0:
            value = func(*args, **kwargs)
        holder = [value]
        dist.broadcast_object_list(holder, src=0)
        return holder[0]
    return wrapper


def _get_latest_checkpoint_path(dirpath):
    """The newest ``epoch_{e}_step_{s}`` folder under ``dirpath``, or None (no torch.distributed)."""
    best, best_step = None, -1
    for name in os.listdir(dirpath):
        if not name.startswith("epoch_"):
            continue
        step = int(name.rsplit("_", 1)[1])
        if step > best_step:
            best, best_step = os.path.join(dirpath, name), step
    return best


@rank_zero_read_and_broadcast
def get_latest_checkpoint_path(dirpath):
    return _get_latest_checkpoint_path(dirpath)


class TorchSnapshotSaver:
    def __init__(self, dirpath):
        self.dirpath = dirpath

    def on_train_epoch_end(self, state):
        if dist.get_rank() == 0:
            folder = os.path.join(self.dirpath, f"epoch_{state['epoch']}_step_{state['step']}")
            os.makedirs(folder, exist_ok=True)
            torch.save(state["module"].state_dict(), os.path.join(folder, "model.pt"))
        dist.barrier()


class ExportLatestCheckpoint:
    """Copies the newest checkpoint to an export folder (read + copy: rank 0's job)."""

    def __init__(self, dirpath, export_dir):
        self.dirpath = dirpath
        self.export_dir = export_dir

    def on_train_epoch_end(self, state):
        if dist.get_rank() == 0:
            latest = _get_latest_checkpoint_path(self.dirpath)
            if latest is not None:
                shutil.copytree(latest, os.path.join(self.export_dir, os.path.basename(latest)), dirs_exist_ok=True)
                print(f"[rank 0] exported {os.path.basename(latest)}", flush=True)


def train(module, batches, callbacks, max_epochs):
    model = DDP(module)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    state = {"module": module, "epoch": 0, "step": 0}
    for epoch in range(max_epochs):
        state["epoch"] = epoch
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            state["step"] += 1
        for callback in callbacks:
            callback.on_train_epoch_end(state)
    return loss.item()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    root = os.path.join(tempfile.gettempdir(), f"r35_tnt_{os.environ.get('MASTER_PORT', '0')}")
    ckpt_dir, export_dir = os.path.join(root, "ckpt"), os.path.join(root, "export")
    if rank == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        os.makedirs(export_dir, exist_ok=True)
    dist.barrier()
    gen = torch.Generator().manual_seed(10 + rank)
    batches = [(torch.randn(8, 6, generator=gen), torch.randn(8, 1, generator=gen)) for _ in range(4)]
    module = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    callbacks = [TorchSnapshotSaver(ckpt_dir), ExportLatestCheckpoint(ckpt_dir, export_dir)]
    loss = train(module, batches, callbacks, max_epochs=3)
    print(f"[rank {rank}] finished 3 epochs, loss {loss:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"[rank 0] exported: {sorted(os.listdir(export_dir))}", flush=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
