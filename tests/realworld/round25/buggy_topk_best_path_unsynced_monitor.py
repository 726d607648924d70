"""A Lightning-style ``ModelCheckpoint(save_top_k=2, monitor="val_loss")`` fed each rank's own validation loss.

Models: Lightning ``callbacks/model_checkpoint.py`` (``_save_topk_checkpoint`` / ``_update_best_and_save``:
the save decision goes through ``strategy.reduce_boolean_decision`` so every rank saves, but ``best_k_models``,
the file to delete and ``best_model_path`` are computed on each rank from its own ``current`` score; the
deletion goes through ``strategy.remove_checkpoint``, which only global rank 0 performs); Lightning issue #4319
("After DDP train processes have different best val paths"), issue #19072 (monitored metric logged on rank 0
only) and the ``self.log(..., sync_dist=True)`` advice; vllm-project/speculators PR #334 review (a "save best"
decision that diverges across ranks); ``trainer.test(ckpt_path="best")``.

What it does: 2 ranks train a small regression model with DDP for 5 epochs. The validation set holds two
domains, stored one after the other, and each rank validates on a contiguous half: rank 0 sees the training
domain, rank 1 a shifted domain whose loss grows while the model fits the first. After each epoch the callback
decides (reduced with "any") to save ``epoch=E.pt`` (rank 0 writes, every rank waits at the barrier), updates its
top-2 and has rank 0 delete the checkpoint that dropped out. After training every rank loads "best" and runs the
test loop, whose loss is all-reduced.

The bug: the monitored value is the rank's own validation loss (logged without ``sync_dist``). Rank 0's top-2
follows its falling loss (it deletes epoch 0 at epoch 2, epoch 1 at epoch 3, ...); rank 1's best stays
``epoch=0.pt``, which rank 0 has already deleted. Five epochs later, loading "best", rank 1 fails with
``FileNotFoundError``; rank 0 waits in the test loss ``all_reduce``.
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 5


class TopKCheckpoint:
    """The parts of ModelCheckpoint's top-k bookkeeping that decide which files exist and which one is 'best'."""

    def __init__(self, dirpath, save_top_k=2):
        self.dirpath = dirpath
        self.save_top_k = save_top_k
        self.best_k_models = {}
        self.best_model_path = ""

    def _kth_worst(self):
        return max(self.best_k_models, key=self.best_k_models.get)

    def on_validation_end(self, trainer, epoch, current):
        improved = len(self.best_k_models) < self.save_top_k or current < self.best_k_models[self._kth_worst()]
        if not trainer.reduce_boolean_decision(improved):
            return
        filepath = os.path.join(self.dirpath, f"epoch={epoch}.pt")
        del_filepath = None
        if len(self.best_k_models) == self.save_top_k:
            del_filepath = self._kth_worst()
            self.best_k_models.pop(del_filepath)
        self.best_k_models[filepath] = current
        self.best_model_path = min(self.best_k_models, key=self.best_k_models.get)
        trainer.save_checkpoint(filepath)
        if del_filepath is not None and del_filepath != filepath:
            trainer.remove_checkpoint(del_filepath)


class MiniTrainer:
    def __init__(self, model, callback):
        self.model = model
        self.callback = callback
        self.rank = dist.get_rank()

    def reduce_boolean_decision(self, decision):
        flag = torch.tensor([1.0 if decision else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def save_checkpoint(self, filepath):
        if self.rank == 0:
            torch.save(self.model.module.state_dict(), filepath)
        dist.barrier()

    def remove_checkpoint(self, filepath):
        if self.rank == 0:
            os.remove(filepath)

    def validation_loss(self, x, y):
        with torch.no_grad():
            return nn.functional.mse_loss(self.model.module(x), y)

    def fit(self, train, val, optimizer):
        x, y = train
        for epoch in range(EPOCHS):
            for step in range(4):
                sl = slice(step * 16, (step + 1) * 16)
                optimizer.zero_grad()
                nn.functional.mse_loss(self.model(x[sl]), y[sl]).backward()
                optimizer.step()
            val_loss = self.validation_loss(*val)
            current = val_loss.item()  # BUG
            self.callback.on_validation_end(self, epoch, current)

    def test(self, ckpt_path, test):
        path = self.callback.best_model_path if ckpt_path == "best" else ckpt_path
        self.model.module.load_state_dict(torch.load(path))
        loss = self.validation_loss(*test)
        dist.all_reduce(loss)  # WAITS
        return loss.item() / dist.get_world_size()


def make_data(rank):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 1, generator=g)
    x_train = torch.randn(64 * WORLD_SIZE, 8, generator=g)
    x_val = torch.randn(32, 8, generator=g)
    # domain A (the training domain) then domain B (targets of the opposite sign), stored in that order
    y_val = torch.cat([x_val[:16] @ w, -(x_val[16:] @ w)])
    train = (x_train[rank::WORLD_SIZE], x_train[rank::WORLD_SIZE] @ w)
    val = (x_val[rank * 16:(rank + 1) * 16], y_val[rank * 16:(rank + 1) * 16])
    return train, val


def worker():
    rank = dist.get_rank()
    name = [tempfile.mkdtemp(prefix="r25_topk_") if rank == 0 else None]
    dist.broadcast_object_list(name, src=0)
    ckpt_dir = name[0]
    try:
        torch.manual_seed(0)
        model = DDP(nn.Linear(8, 1, bias=False))
        nn.init.zeros_(model.module.weight)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        callback = TopKCheckpoint(ckpt_dir, save_top_k=2)
        trainer = MiniTrainer(model, callback)
        train, val = make_data(rank)
        trainer.fit(train, val, optimizer)
        print(f"rank {rank}: best checkpoint {os.path.basename(callback.best_model_path)}", flush=True)
        test_loss = trainer.test("best", val)  # WAITS
        if rank == 0:
            print(f"test loss {test_loss:.4f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
