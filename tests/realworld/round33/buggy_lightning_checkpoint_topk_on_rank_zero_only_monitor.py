"""Lightning under DDP: ``self.log("val_loss", ..., rank_zero_only=True)`` feeds ``ModelCheckpoint``'s top-k monitor.

Models: Lightning-AI/pytorch-lightning issue #19045 ("Training hangs with DDP + ModelCheckpoint Callback"; the
maintainer's diagnosis: "The reason for the hang is because you set ``self.log(rank_zero_only=True)``, and so you are
suppressing synchronization. Then, the monitor values in the model checkpoint diverge, and now each rank has a
different state of which checkpoint is the 'best', leading to a disagreement and ultimately the code will hang" in
``model_checkpoint.py``; see also PR #19056, which rewrote the ``rank_zero_only`` docs). Code modelled (written here,
not copied): Lightning's ``LightningModule.log`` (the value reduced across ranks only with ``sync_dist=True`` and
without ``rank_zero_only``), ``ModelCheckpoint.on_validation_end`` -> ``_save_topk_checkpoint`` ->
``check_monitor_top_k`` -> ``_update_best_and_save`` -> ``_get_metric_interpolated_filepath_name``, whose
``file_exists`` broadcasts rank 0's answer, and ``Trainer.save_checkpoint`` (rank 0 writes, then
``strategy.barrier``); the training and validation loops of ``fit``.

The bug: each rank's validation shard gives it its own ``val_loss`` (rank 0's shard has flipped labels, so its loss
rises while rank 1's falls). After epoch 0 both ranks save (the top-k list is empty); after epoch 1 only rank 1 sees
an improvement and enters the save's broadcast and barrier, while rank 0 goes on to epoch 2's DDP backward. 2 ranks.
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

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_EPOCHS = 3


class Trainer:
    def __init__(self, dirpath):
        self.callback_metrics = {}
        self.current_epoch = 0
        self.callback = ModelCheckpoint(dirpath, monitor="val_loss")

    def broadcast(self, obj):
        box = [obj]
        dist.broadcast_object_list(box, src=0)  # WAITS
        return box[0]

    def save_checkpoint(self, filepath, module):
        if dist.get_rank() == 0:
            torch.save(module.state_dict(), filepath)
        dist.barrier()


class ModelCheckpoint:
    def __init__(self, dirpath, monitor, save_top_k=1):
        self.dirpath = dirpath
        self.monitor = monitor
        self.save_top_k = save_top_k
        self.best_k_models = {}

    def on_validation_end(self, trainer, module):
        current = trainer.callback_metrics[self.monitor]
        if self.check_monitor_top_k(current):
            self._update_best_and_save(current, trainer, module)  # WAITS

    def check_monitor_top_k(self, current):
        if len(self.best_k_models) < self.save_top_k:
            return True
        return current < max(self.best_k_models.values())

    def _update_best_and_save(self, current, trainer, module):
        name = f"epoch={trainer.current_epoch}-val_loss={current:.3f}.ckpt"
        filepath = os.path.join(self.dirpath, name)
        version = 1
        while self.file_exists(filepath, trainer):  # WAITS
            filepath = os.path.join(self.dirpath, name.replace(".ckpt", f"-v{version}.ckpt"))
            version += 1
        for old in list(self.best_k_models):
            del self.best_k_models[old]
        self.best_k_models[filepath] = current
        trainer.save_checkpoint(filepath, module)
        print(f"[rank {dist.get_rank()}] saved {os.path.basename(filepath)}", flush=True)

    def file_exists(self, filepath, trainer):
        return trainer.broadcast(os.path.exists(filepath))  # WAITS


class LitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
        self.trainer = None

    def forward(self, x):
        return self.net(x)

    def log(self, name, value, sync_dist=False, rank_zero_only=False):
        value = value.detach().clone()
        if sync_dist and not rank_zero_only:
            dist.all_reduce(value)
            value /= dist.get_world_size()
        self.trainer.callback_metrics[name] = value.item()

    def validation_epoch(self, val_x, val_y):
        with torch.no_grad():
            loss = F.cross_entropy(self(val_x), val_y)
        self.log("val_loss", loss, rank_zero_only=True)  # BUG


def make_data(rank):
    gen = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(64, 6, generator=gen)
    y = (x[:, 0] + x[:, 1] > 0).long()
    val_x = torch.randn(32, 6, generator=gen)
    val_y = (val_x[:, 0] + val_x[:, 1] > 0).long()
    if rank == 0:
        val_y = 1 - val_y
    return x, y, val_x, val_y


def fit(trainer, module, x, y, val_x, val_y):
    ddp = DDP(module)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    for epoch in range(MAX_EPOCHS):
        trainer.current_epoch = epoch
        for i in range(0, 64, 16):
            loss = F.cross_entropy(ddp(x[i:i + 16]), y[i:i + 16])
            opt.zero_grad()
            loss.backward()  # WAITS
            opt.step()
        module.validation_epoch(val_x, val_y)
        print(f"[rank {dist.get_rank()}] epoch {epoch}: val_loss {trainer.callback_metrics['val_loss']:.3f}", flush=True)
        trainer.callback.on_validation_end(trainer, module)  # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    dirpath = os.path.join(tempfile.gettempdir(), f"r33_pl_ckpt_{os.environ.get('MASTER_PORT', 'x')}")
    if rank == 0:
        shutil.rmtree(dirpath, ignore_errors=True)
        os.makedirs(dirpath)
    dist.barrier()
    trainer = Trainer(dirpath)
    module = LitClassifier()
    module.trainer = trainer
    fit(trainer, module, *make_data(rank))  # WAITS
    dist.barrier()
    print(f"[rank {rank}] fit done", flush=True)
    if rank == 0:
        shutil.rmtree(dirpath, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
