"""Lightning's ``ModelCheckpoint`` choosing the best checkpoint's file name with a file-existence check made on rank 0 and broadcast.

Models Lightning-AI/pytorch-lightning PR #5155 (fixing issue #5144), NVIDIA-NeMo PR #14380 and
Lightning-AI/pytorch-lightning issue #6700 (see the buggy twin), with the fix of PR #5155 as Lightning keeps it:
``ModelCheckpoint.file_exists`` "Checks if a file exists on rank 0 and broadcasts the result to all other ranks,
preventing the internal state to diverge between ranks" (``exists = self._fs.exists(filepath)`` then
``trainer.strategy.broadcast(exists)``). The rest is as in the buggy twin: ``_get_metric_interpolated_filepath_name``,
``_update_best_and_save``, ``Trainer.save_checkpoint`` (rank 0 writes, then a barrier) and
``Trainer.test(ckpt_path="best")``.

Written for this corpus (nothing copied). The trainer is a small stand-in (DDP over a linear regressor, 2 epochs of 4
steps, the validation loss all-reduced); rank 1's prediction-dump callback takes 0.5 s longer than rank 0's
(``time.sleep``, a stand-in for its slower disk). Rank 0's answer reaches rank 1 through
``broadcast_object_list``, so both ranks record ``best.ckpt`` and test from it.
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

EPOCHS = 2
STEPS = 4


def ckpt_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_pl_ckpt_{tag}")


class ModelCheckpoint:
    def __init__(self, dirpath, filename="best", monitor="val_loss"):
        self.dirpath, self.filename, self.monitor = dirpath, filename, monitor
        self.best_model_path = ""
        self.best_model_score = None

    def format_checkpoint_name(self, ver=None):
        name = self.filename if ver is None else f"{self.filename}-v{ver}"
        return os.path.join(self.dirpath, name + ".ckpt")

    def file_exists(self, filepath, trainer):
        exists = [os.path.exists(filepath) if trainer.is_global_zero else None]
        dist.broadcast_object_list(exists, src=0)  # trainer.strategy.broadcast(exists)
        return exists[0]

    def _get_metric_interpolated_filepath_name(self, trainer, del_filepath):
        filepath = self.format_checkpoint_name()
        version_cnt = 1
        while self.file_exists(filepath, trainer) and filepath != del_filepath:
            filepath = self.format_checkpoint_name(ver=version_cnt)
            version_cnt += 1
        return filepath

    def on_validation_end(self, trainer):
        current = trainer.callback_metrics[self.monitor]
        if self.best_model_score is not None and current >= self.best_model_score:
            return
        del_filepath = self.best_model_path
        filepath = self._get_metric_interpolated_filepath_name(trainer, del_filepath)
        self.best_model_path, self.best_model_score = filepath, current
        trainer.save_checkpoint(filepath)
        if del_filepath and del_filepath != filepath and trainer.is_global_zero:
            os.remove(del_filepath)


class PredictionDump:
    """A user callback that runs before ModelCheckpoint; rank 1's disk is the slow one."""

    def on_validation_end(self, trainer):
        time.sleep(0.5 if trainer.global_rank == 1 else 0.0)


class MiniTrainer:
    def __init__(self, callbacks):
        self.global_rank = dist.get_rank()
        self.is_global_zero = self.global_rank == 0
        self.callbacks = callbacks
        self.checkpoint_callback = next(c for c in callbacks if isinstance(c, ModelCheckpoint))
        self.callback_metrics = {}

    def save_checkpoint(self, filepath):
        if self.is_global_zero:
            torch.save({"state_dict": self.model.module.state_dict()}, filepath)
        dist.barrier()

    def _loss(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self.model(x), y)

    def fit(self, model, train_batches, val_batches):
        self.model = DDP(model)
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        for epoch in range(EPOCHS):
            for batch in train_batches:
                optimizer.zero_grad()
                self._loss(batch).backward()
                optimizer.step()
            with torch.no_grad():
                val = torch.stack([self._loss(b) for b in val_batches]).mean()
            dist.all_reduce(val)  # self.log("val_loss", ..., sync_dist=True)
            self.callback_metrics["val_loss"] = val.item() / dist.get_world_size()
            for cb in self.callbacks:
                cb.on_validation_end(self)
            print(f"[rank {self.global_rank}] epoch {epoch}: val_loss {self.callback_metrics['val_loss']:.4f}, "
                  f"best_model_path {os.path.basename(self.checkpoint_callback.best_model_path)}", flush=True)

    def test(self, test_batches, ckpt_path="best"):
        path = self.checkpoint_callback.best_model_path if ckpt_path == "best" else ckpt_path
        state = torch.load(path, weights_only=True)
        self.model.module.load_state_dict(state["state_dict"])
        with torch.no_grad():
            loss = torch.stack([self._loss(b) for b in test_batches]).mean()
        dist.all_reduce(loss)
        return loss.item() / dist.get_world_size()


def make_batches(rank, n, seed):
    g = torch.Generator().manual_seed(seed + rank)
    w = torch.tensor([[1.0], [-2.0], [0.5]])
    batches = []
    for _ in range(n):
        x = torch.randn(8, 3, generator=g)
        batches.append((x, x @ w + 0.1 * torch.randn(8, 1, generator=g)))
    return batches


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(ckpt_dir(), ignore_errors=True)
        os.makedirs(ckpt_dir())
    dist.barrier()
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    trainer = MiniTrainer(callbacks=[PredictionDump(), ModelCheckpoint(ckpt_dir())])
    trainer.fit(model, make_batches(rank, STEPS, 10), make_batches(rank, 2, 20))
    test_loss = trainer.test(make_batches(rank, 2, 30), ckpt_path="best")
    if rank == 0:
        print(f"test loss {test_loss:.4f} with {os.path.basename(trainer.checkpoint_callback.best_model_path)}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(ckpt_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
