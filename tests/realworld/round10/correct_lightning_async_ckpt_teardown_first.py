"""The best checkpoint saved through Lightning's ``AsyncCheckpointIO`` on rank 0, the writer drained with
``teardown()`` before the barrier, then loaded by every rank ("load the best model at the end of training").

Modelled on Lightning's ``AsyncCheckpointIO`` (``lightning/pytorch/plugins/io/async_plugin.py``: ``save_checkpoint``
submits the write to a ``ThreadPoolExecutor``; ``teardown`` shuts it down with ``wait=True``), on the fix of
GoogleCloudPlatform/gcs-connector-for-pytorch PR #138 (call the checkpoint IO's teardown "after all
``save_checkpoint()`` calls and before any ``load_checkpoint()`` calls"), and on transformers Trainer's
``load_best_model_at_end`` (a barrier, then every process loads the best checkpoint). Real Lightning 2.6, used
without a Trainer. ``SlowStorageCheckpointIO`` is a stand-in for the cluster: an object-store upload that takes
1.5 s per checkpoint.

Correct, though it looks suspicious: rank 0 alone writes the checkpoints, from a background thread, while the
training loop (and its DDP all-reduces) goes on; the other ranks read a file they never wrote. ``teardown()``
returns on rank 0 only when every queued write is done, and the barrier after it makes the others wait for that.
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

KIND = "correct"
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
    # load_best_model_at_end: every rank restores the best weights, once rank 0's writes have finished
    checkpoint_io.teardown()  # waits for the queued saves (a no-op on the ranks that saved nothing)
    dist.barrier()
    state = checkpoint_io.load_checkpoint(best_path)
    model.module.load_state_dict(state["state_dict"])
    dist.barrier()
    if rank == 0:
        print(f"restored epoch {state['epoch']} (val {best:.4f})")
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
