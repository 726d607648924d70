"""A Lightning-style ``ModelCheckpoint(save_top_k=2, monitor="val_loss")`` fed the validation loss averaged over
the ranks (``self.log("val_loss", loss, sync_dist=True)``).

Models: Lightning ``callbacks/model_checkpoint.py`` (``_save_topk_checkpoint`` / ``_update_best_and_save``, the
save decision through ``strategy.reduce_boolean_decision``, deletion by ``strategy.remove_checkpoint`` on global
rank 0 only); Lightning issue #4319 and PR #4323, issue #19072 and the ``sync_dist=True`` advice for epoch-level
metrics monitored by a callback; ``trainer.test(ckpt_path="best")``.

What it does: 2 ranks train a small regression model with DDP for 5 epochs; each rank validates on a contiguous
half of a two-domain validation set (rank 1's half is a shifted domain). The validation loss is all-reduced
(mean) before the callback sees it, so every rank keeps the same top-2, computes the same ``best_model_path``
and deletes (rank 0) only files no rank still points at. After training every rank loads "best" and runs the
test loop, whose loss is all-reduced. Rank 0 writes the checkpoints, every rank waits at the save barrier.
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
            dist.all_reduce(val_loss)  # sync_dist=True: the mean over the ranks
            current = val_loss.item() / dist.get_world_size()
            self.callback.on_validation_end(self, epoch, current)

    def test(self, ckpt_path, test):
        path = self.callback.best_model_path if ckpt_path == "best" else ckpt_path
        self.model.module.load_state_dict(torch.load(path))
        loss = self.validation_loss(*test)
        dist.all_reduce(loss)
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
        test_loss = trainer.test("best", val)
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
