"""The best checkpoint saved through Lightning's ``AsyncCheckpointIO`` on rank 0, then loaded by every rank
right after a barrier ("load the best model at the end of training").

Modelled on Lightning's ``AsyncCheckpointIO`` (``lightning/pytorch/plugins/io/async_plugin.py``: ``save_checkpoint``
submits the write to a ``ThreadPoolExecutor`` and returns; ``teardown`` shuts the executor down with
``wait=True``; Lightning-AI/pytorch-lightning PR #13658, issue #14035 "Async checkpointing race conditions"), on
GoogleCloudPlatform/gcs-connector-for-pytorch PR #138 ("Fix AsyncCheckpointIO race condition": the
``save_checkpoint()`` task was not complete when ``load_checkpoint()`` ran, which returned a 404), on
pytorch/torchtitan issue #930 (async ``CheckpointManager.save`` followed by a load), and on transformers
Trainer's ``load_best_model_at_end`` (a barrier, then every process loads the best checkpoint). Real Lightning
2.6 (``AsyncCheckpointIO`` around ``TorchCheckpointIO``), used without a Trainer. ``SlowStorageCheckpointIO`` is a
stand-in for the cluster: an object-store upload that takes 1.5 s per checkpoint.

Bug: ``dist.barrier()`` orders the *submission* of the save on rank 0, not the write, which is still queued in
rank 0's background thread when every rank opens the file. A file race, not a hang: the ranks fail with
``FileNotFoundError`` in ``load_checkpoint``. No rank waits in a collective.
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from lightning.pytorch.plugins.io import AsyncCheckpointIO, TorchCheckpointIO
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("lightning",)

EPOCHS = 3


class SlowStorageCheckpointIO(TorchCheckpointIO):
    """Stand-in for the cluster: the checkpoint goes to remote storage, 1.5 s per upload."""

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        time.sleep(1.5)
        super().save_checkpoint(checkpoint, path, storage_options)


def shared_dir():
    path = os.path.join(tempfile.gettempdir(), f"r10_async_ckpt_{os.environ.get('MASTER_PORT', 'lab')}")
    os.makedirs(path, exist_ok=True)
    return path


def validate(model, xv, yv):
    with torch.no_grad():
        loss = torch.nn.functional.mse_loss(model(xv), yv).reshape(1)
    dist.all_reduce(loss)
    return loss.item() / dist.get_world_size()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(6, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(40 + rank)
    x, xv = torch.randn(4, 8, 6, generator=g), torch.randn(16, 6, generator=g)
    y, yv = x.sum(-1, keepdim=True), xv.sum(-1, keepdim=True)
    ckpt_dir = shared_dir()
    checkpoint_io = AsyncCheckpointIO(SlowStorageCheckpointIO())
    best, best_path = float("inf"), None
    for epoch in range(EPOCHS):
        for i in range(len(x)):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x[i]), y[i]).backward()
            opt.step()
        val = validate(model, xv, yv)
        if val < best:
            best, best_path = val, os.path.join(ckpt_dir, f"epoch={epoch}.ckpt")
            if rank == 0:
                checkpoint_io.save_checkpoint({"state_dict": model.module.state_dict(), "epoch": epoch}, best_path)
    # load_best_model_at_end: every rank restores the best weights
    dist.barrier()  # BUG
    state = checkpoint_io.load_checkpoint(best_path)
    model.module.load_state_dict(state["state_dict"])
    checkpoint_io.teardown()
    dist.barrier()
    if rank == 0:
        print(f"restored epoch {state['epoch']} (val {best:.4f})")
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
